package reconcile

import (
	"context"
	"errors"
	"slices"
	"time"

	"github.com/hashicorp/raft"

	"github.com/kvnode/kvnode/cluster"
	"github.com/kvnode/kvnode/partition"
	"github.com/kvnode/kvnode/store/placement"
	"github.com/kvnode/kvnode/store/raftgroup"
)

const (
	// transferEvery limits leadership transfers per group, so that a
	// preferred leader that cannot take over is not asked again and again.
	transferEvery = 5 * time.Second
	// dropCheckEvery limits how often a member asks whether a group it no
	// longer hosts has removed it.
	dropCheckEvery = time.Second
)

// partitionState is the memory of RunPartitions between rounds.
type partitionState struct {
	warnedSettings bool
	lastDropCheck  map[uint64]time.Time
	// placement is what each group's placement decisions remember.
	placement map[uint64]*placement.Memory
}

// RunPartitions keeps this member's partition groups in line with the
// table: it opens and bootstraps the groups placed here, converges the
// configuration of those it leads, and drops those moved away. It
// returns when stop is closed.
func (r *Reconciler) RunPartitions() {
	sub, unsub := r.cfg.Members.Subscribe()
	defer unsub()
	t := time.NewTicker(max(r.cfg.ReconcileInterval/4, 50*time.Millisecond))
	defer t.Stop()
	st := &partitionState{
		lastDropCheck: map[uint64]time.Time{},
		placement:     map[uint64]*placement.Memory{},
	}
	for {
		r.syncPartitions(st)
		r.host.PartitionsSynced()
		select {
		case <-r.stop:
			return
		case <-t.C:
		case <-sub:
		}
	}
}

func (r *Reconciler) syncPartitions(st *partitionState) {
	t, _, ok := r.host.Table()
	if !ok {
		return
	}
	// The partition groups grow online (package store/rebalance): a table
	// with another count than this member's flag is no surprise, another
	// replication factor is.
	if !st.warnedSettings && t.RF != r.cfg.ReplicationFactor {
		st.warnedSettings = true
		r.logger.Warn("the cluster's replication factor differs from this node's flag; using the cluster's",
			"replication_factor", t.RF, "flag_replication_factor", r.cfg.ReplicationFactor)
	}
	members := memberMap(r.cfg.Members)
	for _, pg := range t.Groups {
		hosted := slices.Contains(pg.Members, r.cfg.Self)
		g := r.host.Group(pg.ID)
		if hosted && g == nil {
			var err error
			if g, err = r.host.OpenPartition(pg.ID, t.P()); err != nil {
				r.logger.Warn("cannot open partition group", "group", pg.ID, "error", err)
				continue
			}
		}
		if g == nil {
			continue
		}
		if !pg.Bootstrapped && pg.Bootstrapper == r.cfg.Self {
			r.bootstrapPartition(g, pg, members)
		}
		if g.IsLeader() {
			r.reconcileGroup(st, g, pg, members)
		} else if !hosted {
			r.maybeDrop(st, g, pg, members)
		}
	}
}

// memberMap is the gossip view by name.
func memberMap(g Gossip) map[string]cluster.Member {
	out := map[string]cluster.Member{}
	for _, m := range g.Members() {
		out[m.Name] = m
	}
	return out
}

func alive(members map[string]cluster.Member, name string) (cluster.Member, bool) {
	m, ok := members[name]
	return m, ok && m.Status == cluster.StatusAlive && m.InternalAddr != ""
}

// bootstrapPartition bootstraps a group this member is the named
// bootstrapper of, with the table's members as voters, then records that
// in the table. A member that already has state for the group (it crashed
// after bootstrapping, before recording it) only records it.
func (r *Reconciler) bootstrapPartition(g *raftgroup.Group, pg partition.Group, members map[string]cluster.Member) {
	if !g.HasState() {
		var conf raft.Configuration
		for _, name := range pg.Members {
			addr := r.cfg.Advertise
			if name != r.cfg.Self {
				m, ok := alive(members, name)
				if !ok || !r.verified(name, m.InternalAddr) {
					return // wait until every initial member is reachable and proved
				}
				addr = m.InternalAddr
			}
			conf.Servers = append(conf.Servers, raft.Server{Suffrage: raft.Voter, ID: raft.ServerID(name), Address: raft.ServerAddress(addr)})
		}
		if err := r.await(g.Raft().BootstrapCluster(conf)); err != nil && !errors.Is(err, raft.ErrCantBootstrap) {
			r.logger.Warn("bootstrapping partition group failed", "group", g.ID(), "error", err)
			return
		}
		r.logger.Info("bootstrapped partition group", "group", g.ID(), "voters", pg.Members)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	for range 3 {
		cached, version, ok := r.host.Table()
		if !ok {
			return
		}
		t := cached.Clone()
		i := int(g.ID()) - 1
		if i < 0 || i >= len(t.Groups) || t.Groups[i].Bootstrapped {
			return
		}
		t.Groups[i].Bootstrapped = true
		if _, err := r.host.CASTable(ctx, version, t); err == nil || !isConflict(err) {
			if err != nil {
				r.logger.Debug("recording the bootstrap of a partition group", "group", g.ID(), "error", err)
			}
			return
		}
	}
}

// reconcileGroup, on the group's leader, makes at most one change that
// brings the group's Raft configuration closer to the table's members:
// a moved address first (so the configuration says where members are),
// then the step placement.NextGroupStep decides.
func (r *Reconciler) reconcileGroup(st *partitionState, g *raftgroup.Group, pg partition.Group, members map[string]cluster.Member) {
	if !pg.Bootstrapped {
		return
	}
	conf, err := g.Configuration()
	if err != nil {
		return
	}
	inConf := map[string]bool{}
	for _, srv := range conf.Servers {
		inConf[string(srv.ID)] = true
	}
	var joining []string
	for _, name := range pg.Members {
		if !inConf[name] {
			joining = append(joining, name)
		}
	}
	if fix, ok := r.addressFix(conf, joining); ok {
		r.logErr(r.applyAddressFix(g, fix), "update partition member address", g.ID(), string(fix.Server.ID))
		return
	}
	mem := st.placement[g.ID()]
	if mem == nil {
		mem = &placement.Memory{}
		st.placement[g.ID()] = mem
	}
	// Only members that proved their identity at their address are added.
	aliveAddrs := map[string]string{}
	for name := range members {
		if m, ok := alive(members, name); ok && r.verified(name, m.InternalAddr) {
			aliveAddrs[name] = m.InternalAddr
		}
	}
	step := placement.NextGroupStep(placement.GroupView{
		Self:          r.cfg.Self,
		Members:       pg.Members,
		Bootstrapped:  pg.Bootstrapped,
		Conf:          conf,
		Alive:         aliveAddrs,
		CaughtUp:      func(srv raft.Server) bool { return r.host.CaughtUp(g, srv) },
		Now:           time.Now(),
		PromoteAfter:  r.cfg.PromoteAfter,
		TransferEvery: transferEvery,
	}, mem)
	r.runGroupStep(g, step)
}

// runGroupStep carries out a placement step on group g, whose leader this
// member is.
func (r *Reconciler) runGroupStep(g *raftgroup.Group, step placement.Step) {
	const timeout = raftgroup.InternalTimeout
	id := string(step.Server)
	switch step.Kind {
	case placement.AddNonvoter:
		r.logger.Info("adding a replica to a partition group", "group", g.ID(), "member", id)
		r.logErr(r.await(g.Raft().AddNonvoter(step.Server, step.Address, 0, timeout)), "add replica", g.ID(), id)
	case placement.Promote:
		r.logger.Info("promoting a caught-up replica", "group", g.ID(), "member", id)
		r.logErr(r.await(g.Raft().AddVoter(step.Server, step.Address, 0, timeout)), "promote replica", g.ID(), id)
	case placement.Remove:
		r.logger.Info("removing a replica the table moved away", "group", g.ID(), "member", id)
		r.logErr(r.await(g.Raft().RemoveServer(step.Server, 0, timeout)), "remove replica", g.ID(), id)
	case placement.Transfer:
		r.logger.Info("transferring partition group leadership", "group", g.ID(), "to", id)
		r.logErr(r.await(g.Raft().LeadershipTransferToServer(step.Server, step.Address)), "transfer leadership", g.ID(), id)
	}
}

// maybeDrop closes and deletes a group this member no longer hosts, once
// the group's leader reports a committed configuration without this
// member.
func (r *Reconciler) maybeDrop(st *partitionState, g *raftgroup.Group, pg partition.Group, members map[string]cluster.Member) {
	if time.Since(st.lastDropCheck[g.ID()]) < dropCheckEvery {
		return
	}
	st.lastDropCheck[g.ID()] = time.Now()
	for _, name := range pg.Members {
		m, ok := alive(members, name)
		if !ok {
			continue
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		_, groups, err := r.host.Status(ctx, m.InternalAddr)
		cancel()
		if err != nil {
			continue
		}
		for _, gs := range groups {
			if gs.ID != g.ID() || gs.State != raft.Leader.String() {
				continue
			}
			committed := gs.CommitIndex >= gs.ConfigIndex
			if committed && !slices.Contains(gs.Voters, r.cfg.Self) && !slices.Contains(gs.NonVoters, r.cfg.Self) {
				r.host.DropPartition(g)
			}
			return
		}
	}
}

func (r *Reconciler) logErr(err error, what string, gid uint64, member string) {
	if err != nil {
		r.logger.Warn(what+" failed", "group", gid, "member", member, "error", err)
	}
}
