package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/hashicorp/raft"

	"github.com/kvnode/kvnode/cluster"
	"github.com/kvnode/kvnode/fsm"
	"github.com/kvnode/kvnode/internal/durable"
	"github.com/kvnode/kvnode/partition"
	"github.com/kvnode/kvnode/store/placement"
	"github.com/kvnode/kvnode/store/raftgroup"
	"github.com/kvnode/kvnode/store/transport"
)

// Partition groups: who hosts which group is the partition table in group
// 0. Three actors converge the cluster to it, each changing only what it
// owns:
//
//   - group 0's leader plans: it edits the table (partition.Plan over the
//     members of group 0), never a Raft configuration;
//   - every node opens the groups the table gives it, bootstraps a group it
//     is the named bootstrapper of, and closes and deletes a group it no
//     longer hosts once that group's committed configuration no longer has it;
//   - every partition group's leader converges its own Raft configuration to
//     the table: it adds new members as non-voters, promotes them once they
//     have caught up (by snapshot), then removes members the table dropped,
//     and hands leadership to the table's preferred leader.
//
// A replica thus moves as "add, catch up, promote, remove", one Raft
// membership change at a time, and never leaves a group without a quorum of
// caught-up voters.

const (
	// groupDirPrefix names partition group dirs: raft/g<id>.
	groupDirPrefix = "g"
	// groupInfoFile records, in a group's dir, the cluster's P, which the
	// group's state machine needs (to generate keys that hash to the group)
	// before the partition table can be read after a restart.
	groupInfoFile = "group.json"
	// transferEvery limits leadership transfers per group, so that a
	// preferred leader that cannot take over is not asked again and again.
	transferEvery = 5 * time.Second
	// dropCheckEvery limits how often a node asks whether a group it no
	// longer hosts has removed it.
	dropCheckEvery = time.Second
)

type groupInfo struct {
	ID         uint64 `json:"id"`
	Partitions int    `json:"partitions"`
}

func (s *Store) groupDir(gid uint64) string {
	return filepath.Join(s.cfg.DataDir, "raft", groupDirPrefix+strconv.FormatUint(gid, 10))
}

// openPartition opens (creating if needed) partition group gid of p groups.
func (s *Store) openPartition(gid uint64, p int) (*raftgroup.Group, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if g := s.groups[gid]; g != nil {
		return g, nil
	}
	if s.closed() {
		return nil, errClosed
	}
	dir := s.groupDir(gid)
	if err := durable.MkdirAll(dir, 0o750); err != nil {
		return nil, fmt.Errorf("partition group %d: %w", gid, err)
	}
	info, found, err := readGroupInfo(dir, gid)
	if err != nil {
		return nil, err
	}
	if !found {
		info = groupInfo{ID: gid, Partitions: p}
		data, err := json.Marshal(info)
		if err != nil {
			return nil, fmt.Errorf("partition group %d: %w", gid, err)
		}
		if err := durable.WriteFile(filepath.Join(dir, groupInfoFile), data, 0o640); err != nil {
			return nil, fmt.Errorf("partition group %d: %w", gid, err)
		}
	}
	ln, err := s.mux.GroupListener(gid)
	if err != nil {
		return nil, err
	}
	g, err := raftgroup.Open(raftgroup.Options{
		ID:      gid,
		Dir:     dir,
		LocalID: s.name,
		Layer:   &transport.RaftLayer{Listener: ln, Group: gid, Dialer: s.dialer},
		Addrs:   memberAddrs{s.cfg.Members},
		Raft:    s.cfg.Raft,
		FSM:     fsm.Options{KeyFilter: func(key string) bool { return partition.GroupForKey(key, info.Partitions) == gid }},
		Logger:  s.logger,
		Confirm: s.confirmLeadership,
	})
	if err != nil {
		_ = ln.Close()
		return nil, err
	}
	s.groups[gid] = g
	s.logger.Info("partition group opened", "group", gid)
	return g, nil
}

// openExistingPartitions reopens, at start, every partition group that has
// a dir: the node hosted it before and may still be a member, whatever
// group 0 (which catches up only once it has a leader) says yet. A damaged
// group.json stops the start (readGroupInfo); an empty group dir, whose
// creation a crash cut short, waits for the table to open it; the remains
// of a deletion a crash cut short are deleted.
func (s *Store) openExistingPartitions() error {
	raftDir := filepath.Join(s.cfg.DataDir, raftDirName)
	entries, err := os.ReadDir(raftDir)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	for _, e := range entries {
		if !e.IsDir() || !strings.HasPrefix(e.Name(), groupDirPrefix) {
			continue
		}
		if strings.HasSuffix(e.Name(), droppedSuffix) {
			if err := os.RemoveAll(filepath.Join(raftDir, e.Name())); err != nil {
				return fmt.Errorf("delete the dropped partition group dir %s: %w", e.Name(), err)
			}
			s.logger.Info("deleted the rest of a dropped partition group", "dir", e.Name())
			continue
		}
		gid, err := strconv.ParseUint(strings.TrimPrefix(e.Name(), groupDirPrefix), 10, 64)
		if err != nil || gid == controlGroup {
			continue
		}
		info, found, err := readGroupInfo(s.groupDir(gid), gid)
		if err != nil {
			return err
		}
		if !found {
			s.logger.Info("an empty partition group dir: its creation was cut short; the partition table reopens it if this node hosts the group", "dir", e.Name())
			continue
		}
		if _, err := s.openPartition(gid, info.Partitions); err != nil {
			return err
		}
	}
	return nil
}

// dropPartition closes a group this node no longer hosts and deletes its
// data: the group's committed configuration no longer has this node.
func (s *Store) dropPartition(g *raftgroup.Group) {
	s.mu.Lock()
	if s.groups[g.ID()] != g {
		s.mu.Unlock()
		return
	}
	delete(s.groups, g.ID())
	s.mu.Unlock()
	if err := g.Close(); err != nil {
		s.logger.Warn("closing a dropped partition group", "group", g.ID(), "error", err)
	}
	// Rename, then delete: a crash in the middle of the deletion must not
	// leave a group dir with some of its files (group.json, say) gone.
	dir := s.groupDir(g.ID())
	dropped := dir + droppedSuffix
	if err := os.RemoveAll(dropped); err != nil {
		s.logger.Warn("deleting a dropped partition group", "group", g.ID(), "error", err)
	}
	if err := os.Rename(dir, dropped); err != nil {
		s.logger.Warn("deleting a dropped partition group", "group", g.ID(), "error", err)
	} else if err := durable.SyncDir(filepath.Dir(dir)); err != nil {
		s.logger.Warn("deleting a dropped partition group", "group", g.ID(), "error", err)
	} else if err := os.RemoveAll(dropped); err != nil {
		s.logger.Warn("deleting a dropped partition group", "group", g.ID(), "error", err)
	}
	s.logger.Info("partition group dropped: it moved to other members", "group", g.ID())
}

// partitionState is the memory of runPartitions between rounds.
type partitionState struct {
	warnedSettings bool
	lastDropCheck  map[uint64]time.Time
	// placement is what each group's placement decisions remember.
	placement map[uint64]*placement.Memory
}

// runPartitions keeps this node's partition groups in line with the table.
func (s *Store) runPartitions() {
	sub, unsub := s.cfg.Members.Subscribe()
	defer unsub()
	t := time.NewTicker(max(s.cfg.ReconcileInterval/4, 50*time.Millisecond))
	defer t.Stop()
	st := &partitionState{
		lastDropCheck: map[uint64]time.Time{},
		placement:     map[uint64]*placement.Memory{},
	}
	for {
		s.syncPartitions(st)
		s.syncIndexes()
		select {
		case <-s.stop:
			return
		case <-t.C:
		case <-sub:
		}
	}
}

func (s *Store) syncPartitions(st *partitionState) {
	t, _, ok := s.table()
	if !ok {
		return
	}
	if !st.warnedSettings && (t.P() != s.cfg.PartitionGroups || t.RF != s.cfg.ReplicationFactor) {
		st.warnedSettings = true
		s.logger.Warn("the cluster's partition settings differ from this node's flags; using the cluster's",
			"partition_groups", t.P(), "replication_factor", t.RF,
			"flag_partition_groups", s.cfg.PartitionGroups, "flag_replication_factor", s.cfg.ReplicationFactor)
	}
	members := s.memberMap()
	for _, pg := range t.Groups {
		hosted := slices.Contains(pg.Members, s.name)
		g := s.groupByID(pg.ID)
		if hosted && g == nil {
			var err error
			if g, err = s.openPartition(pg.ID, t.P()); err != nil {
				s.logger.Warn("cannot open partition group", "group", pg.ID, "error", err)
				continue
			}
		}
		if g == nil {
			continue
		}
		if !pg.Bootstrapped && pg.Bootstrapper == s.name {
			s.bootstrapPartition(g, pg, members)
		}
		if g.IsLeader() {
			s.reconcileGroup(st, g, pg, members)
		} else if !hosted {
			s.maybeDrop(st, g, pg, members)
		}
	}
}

// memberMap is the gossip view by name.
func (s *Store) memberMap() map[string]cluster.Member {
	out := map[string]cluster.Member{}
	for _, m := range s.cfg.Members.Members() {
		out[m.Name] = m
	}
	return out
}

func alive(members map[string]cluster.Member, name string) (cluster.Member, bool) {
	m, ok := members[name]
	return m, ok && m.Status == cluster.StatusAlive && m.InternalAddr != ""
}

// bootstrapPartition bootstraps a group this node is the named
// bootstrapper of, with the table's members as voters, then records that in
// the table. A node that already has state for the group (it crashed after
// bootstrapping, before recording it) only records it.
func (s *Store) bootstrapPartition(g *raftgroup.Group, pg partition.Group, members map[string]cluster.Member) {
	if !g.HasState() {
		var conf raft.Configuration
		for _, name := range pg.Members {
			addr := s.cfg.Advertise
			if name != s.name {
				m, ok := alive(members, name)
				if !ok {
					return // wait until every initial member is reachable
				}
				addr = m.InternalAddr
			}
			conf.Servers = append(conf.Servers, raft.Server{Suffrage: raft.Voter, ID: raft.ServerID(name), Address: raft.ServerAddress(addr)})
		}
		if err := raftgroup.Await(g.Raft().BootstrapCluster(conf), raftgroup.InternalTimeout, s.stop); err != nil && !errors.Is(err, raft.ErrCantBootstrap) {
			s.logger.Warn("bootstrapping partition group failed", "group", g.ID(), "error", err)
			return
		}
		s.logger.Info("bootstrapped partition group", "group", g.ID(), "voters", pg.Members)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	for range 3 {
		cached, version, ok := s.table()
		if !ok {
			return
		}
		t := cached.Clone()
		i := int(g.ID()) - 1
		if i < 0 || i >= len(t.Groups) || t.Groups[i].Bootstrapped {
			return
		}
		t.Groups[i].Bootstrapped = true
		if _, err := s.casTable(ctx, version, t); err == nil || !isConflict(err) {
			if err != nil {
				s.logger.Debug("recording the bootstrap of a partition group", "group", g.ID(), "error", err)
			}
			return
		}
	}
}

// reconcileGroup, on the group's leader, makes at most one change that
// brings the group's Raft configuration closer to the table's members:
// a moved address first (so the configuration says where members are),
// then the step placement.NextGroupStep decides.
func (s *Store) reconcileGroup(st *partitionState, g *raftgroup.Group, pg partition.Group, members map[string]cluster.Member) {
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
	if fix, ok := placement.NextAddressFix(conf, s.liveAddr, joining); ok {
		logErr(s, s.applyAddressFix(g, fix), "update partition member address", g.ID(), string(fix.Server.ID))
		return
	}
	mem := st.placement[g.ID()]
	if mem == nil {
		mem = &placement.Memory{}
		st.placement[g.ID()] = mem
	}
	aliveAddrs := map[string]string{}
	for name := range members {
		if m, ok := alive(members, name); ok {
			aliveAddrs[name] = m.InternalAddr
		}
	}
	step := placement.NextGroupStep(placement.GroupView{
		Self:          s.name,
		Members:       pg.Members,
		Bootstrapped:  pg.Bootstrapped,
		Conf:          conf,
		Alive:         aliveAddrs,
		CaughtUp:      func(srv raft.Server) bool { return s.caughtUp(g, srv) },
		Now:           time.Now(),
		PromoteAfter:  s.cfg.PromoteAfter,
		TransferEvery: transferEvery,
	}, mem)
	s.runGroupStep(g, step)
}

// runGroupStep carries out a placement step on group g, whose leader this
// node is.
func (s *Store) runGroupStep(g *raftgroup.Group, step placement.Step) {
	const timeout = raftgroup.InternalTimeout
	id := string(step.Server)
	switch step.Kind {
	case placement.AddNonvoter:
		s.logger.Info("adding a replica to a partition group", "group", g.ID(), "member", id)
		logErr(s, raftgroup.Await(g.Raft().AddNonvoter(step.Server, step.Address, 0, timeout), raftgroup.InternalTimeout, s.stop), "add replica", g.ID(), id)
	case placement.Promote:
		s.logger.Info("promoting a caught-up replica", "group", g.ID(), "member", id)
		logErr(s, raftgroup.Await(g.Raft().AddVoter(step.Server, step.Address, 0, timeout), raftgroup.InternalTimeout, s.stop), "promote replica", g.ID(), id)
	case placement.Remove:
		s.logger.Info("removing a replica the table moved away", "group", g.ID(), "member", id)
		logErr(s, raftgroup.Await(g.Raft().RemoveServer(step.Server, 0, timeout), raftgroup.InternalTimeout, s.stop), "remove replica", g.ID(), id)
	case placement.Transfer:
		s.logger.Info("transferring partition group leadership", "group", g.ID(), "to", id)
		logErr(s, raftgroup.Await(g.Raft().LeadershipTransferToServer(step.Server, step.Address), raftgroup.InternalTimeout, s.stop), "transfer leadership", g.ID(), id)
	}
}

// maybeDrop closes and deletes a group this node no longer hosts, once the
// group's leader reports a committed configuration without this node.
func (s *Store) maybeDrop(st *partitionState, g *raftgroup.Group, pg partition.Group, members map[string]cluster.Member) {
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
		ns, err := s.client.status(ctx, m.InternalAddr)
		cancel()
		if err != nil {
			continue
		}
		for _, gs := range ns.Groups {
			if gs.ID != g.ID() || gs.State != raft.Leader.String() {
				continue
			}
			committed := gs.CommitIndex >= gs.ConfigIndex
			if committed && !slices.Contains(gs.Voters, s.name) && !slices.Contains(gs.NonVoters, s.name) {
				s.dropPartition(g)
			}
			return
		}
	}
}

func logErr(s *Store, err error, what string, gid uint64, member string) {
	if err != nil {
		s.logger.Warn(what+" failed", "group", gid, "member", member, "error", err)
	}
}

// place, on group 0's leader, creates the partition table if there is none
// and replaces it with partition.Plan's answer when that differs. The
// members placement counts on are group 0's: a member joins them when
// gossip first sees it and leaves them when it left or stayed dead past the
// dead-member timeout, so short outages move no data.
func (s *Store) place(g0 *raftgroup.Group) {
	conf, err := g0.Configuration()
	if err != nil {
		return
	}
	universe := make([]string, 0, len(conf.Servers))
	for _, srv := range conf.Servers {
		universe = append(universe, string(srv.ID))
	}
	t, version, ok := s.table()
	if !ok {
		if t, err = partition.NewTable(s.cfg.PartitionGroups, s.cfg.ReplicationFactor); err != nil {
			s.logger.Error("cannot create the partition table", "error", err)
			return
		}
	}
	next := partition.Plan(t, universe)
	if ok && next.Equal(t) {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if _, err := s.casTable(ctx, version, next); err != nil {
		if !isConflict(err) {
			s.logger.Warn("updating the partition table failed", "error", err)
		}
		return
	}
	if !ok {
		s.logger.Info("partition table created", "partition_groups", next.P(), "replication_factor", next.RF, "members", universe)
		return
	}
	for _, ch := range partition.Diff(t, next) {
		s.logger.Info("partition placement", "group", ch.Group, "change", ch.Kind, "member", ch.Member)
	}
}
