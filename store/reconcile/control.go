package reconcile

import (
	"context"
	"errors"
	"time"

	"github.com/hashicorp/raft"

	"github.com/kvnode/kvnode/cluster"
	"github.com/kvnode/kvnode/partition"
	"github.com/kvnode/kvnode/region"
	"github.com/kvnode/kvnode/store/admission"
	"github.com/kvnode/kvnode/store/placement"
	"github.com/kvnode/kvnode/store/raftgroup"
)

// controlState is the leader-side memory of the control loop.
type controlState struct {
	bootstrapped bool
	lastWaitLog  time.Time
	// placement is what the control group's placement decisions remember.
	placement placement.ControlMemory
}

// RunControl bootstraps the cluster when this member is the one that
// should, and, while this member leads the control group, reconciles the
// group's membership with gossip and keeps the partition table planned.
// It returns when stop is closed.
func (r *Reconciler) RunControl() {
	sub, unsub := r.cfg.Members.Subscribe()
	defer unsub()
	t := time.NewTicker(r.cfg.ReconcileInterval)
	defer t.Stop()
	st := &controlState{}
	for {
		r.maybeBootstrap(st)
		if g := r.host.Control(); g != nil && g.IsLeader() {
			r.reconcileControl(st, g)
			r.place(g)
		}
		select {
		case <-r.stop:
			return
		case <-t.C:
		case <-sub:
		}
	}
}

// maybeBootstrap bootstraps the control group when this member is the one
// that should: it has no Raft state, gossip shows at least BootstrapExpect
// members, it has the smallest name among them, and none of them already
// belongs to a cluster. Exactly one member satisfies this, so the cluster
// is bootstrapped once; a restarted member has state and never
// bootstraps again.
func (r *Reconciler) maybeBootstrap(st *controlState) {
	if st.bootstrapped {
		return
	}
	g := r.host.Control()
	if g == nil {
		return
	}
	if id, _ := g.Leader(); g.HasState() || id != "" {
		st.bootstrapped = true
		return
	}
	// Only members that proved their identity count: a stranger in gossip
	// must neither become a first voter nor make up the number.
	alive := r.trustedMembers()
	expect := r.cfg.BootstrapExpect
	if len(alive) < expect {
		if time.Since(st.lastWaitLog) > 10*time.Second {
			st.lastWaitLog = time.Now()
			r.logger.Info("waiting for members before bootstrapping", "expect", expect, "seen", len(alive))
		}
		return
	}
	if expect == 1 && r.cfg.JoinRequested && len(alive) < 2 && time.Since(r.cfg.Started) < r.cfg.JoinGrace {
		return // give --join a chance to find an existing cluster first
	}
	if len(alive) == 0 || alive[0].Name != r.cfg.Self {
		return // the member with the smallest name bootstraps
	}
	for _, m := range alive[1:] {
		if m.BootstrapExpect != 0 && m.BootstrapExpect != expect {
			r.logger.Warn("members disagree on --bootstrap-expect", "member", m.Name, "theirs", m.BootstrapExpect, "ours", expect)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		_, groups, err := r.host.Status(ctx, m.InternalAddr)
		cancel()
		if err != nil {
			r.logger.Debug("bootstrap: cannot ask member for its state yet", "member", m.Name, "error", err)
			return
		}
		for _, gs := range groups {
			if gs.ID == partition.ControlGroup && (gs.HasState || gs.Leader != "") {
				r.logger.Info("not bootstrapping: a member already belongs to a cluster; waiting to be added", "member", m.Name)
				return
			}
		}
	}
	n := placement.VoterTarget(len(alive))
	var conf raft.Configuration
	for _, m := range alive[:n] {
		conf.Servers = append(conf.Servers, raft.Server{
			Suffrage: raft.Voter,
			ID:       raft.ServerID(m.Name),
			Address:  raft.ServerAddress(m.InternalAddr),
		})
	}
	if err := r.await(g.Raft().BootstrapCluster(conf)); err != nil {
		r.logger.Warn("bootstrap failed", "error", err)
		if err == raft.ErrCantBootstrap {
			st.bootstrapped = true
		}
		return
	}
	st.bootstrapped = true
	names := make([]string, 0, n)
	for _, m := range alive[:n] {
		names = append(names, m.Name)
	}
	r.logger.Info("bootstrapped the cluster", "voters", names)
}

// reconcileControl makes one membership change, at most, per call (Raft
// applies configuration changes one at a time): update moved addresses,
// then the step placement.NextControlStep decides (add gossip members
// missing from Raft, remove members that left or stayed dead past the
// dead-member timeout, promote or demote to the voter target).
func (r *Reconciler) reconcileControl(st *controlState, g *raftgroup.Group) {
	conf, err := g.Configuration()
	if err != nil {
		r.logger.Warn("reconcile: read configuration", "error", err)
		return
	}
	gossip := r.cfg.Members.Members()
	members := make(map[string]placement.Member, len(gossip))
	for _, m := range gossip {
		members[m.Name] = placement.Member{Status: placementStatus(m.Status), Since: m.Since, InternalAddr: m.InternalAddr,
			Verified: m.InternalAddr != "" && r.verified(m.Name, m.InternalAddr)}
	}
	inConf := make(map[string]bool, len(conf.Servers))
	for _, srv := range conf.Servers {
		inConf[string(srv.ID)] = true
	}
	const timeout = raftgroup.InternalTimeout

	// Recorded addresses that moved (a rescheduled pod, a restarted
	// container) are updated first.
	var joining []string
	for _, m := range r.trustedMembers() {
		if !inConf[m.Name] {
			joining = append(joining, m.Name)
		}
	}
	if fix, ok := r.addressFix(conf, joining); ok {
		if err := r.applyAddressFix(g, fix); err != nil {
			r.logger.Warn("update member address failed", "error", err)
		}
		return
	}
	step := placement.NextControlStep(placement.ControlView{
		Self:              r.cfg.Self,
		Conf:              conf,
		Members:           members,
		CaughtUp:          func(srv raft.Server) bool { return r.host.CaughtUp(g, srv) },
		Now:               time.Now(),
		Started:           r.cfg.Started,
		DeadMemberTimeout: r.cfg.DeadMemberTimeout,
		PromoteAfter:      r.cfg.PromoteAfter,
		CatchUpTimeout:    r.cfg.CatchUpTimeout,
	}, &st.placement)
	id := string(step.Server)
	switch step.Kind {
	case placement.AddNonvoter:
		r.logger.Info("adding member to the control group as non-voter", "group", 0, "member", id, "address", string(step.Address))
		if err := r.await(g.Raft().AddNonvoter(step.Server, step.Address, 0, timeout)); err != nil {
			r.logger.Warn("add non-voter failed", "member", id, "error", err)
		}
	case placement.Remove:
		if step.Refuse && r.cfg.Admission != nil {
			// Kept out as long as it was given, then checked again.
			addr, _ := liveAddrOf(gossip, id)
			r.cfg.Admission.Refuse(id, addr, admission.ReasonCatchUp, step.Reason, r.cfg.CatchUpTimeout)
		}
		ctx, cancel := context.WithTimeout(context.Background(), timeout)
		err := g.RemoveServer(ctx, id, step.Reason)
		cancel()
		if err != nil {
			r.logger.Warn("remove member failed", "member", id, "error", err)
		}
	case placement.Promote:
		r.logger.Info("promoting member to voter", "group", 0, "member", id, "voters", step.Voters, "target", step.Target)
		if err := r.await(g.Raft().AddVoter(step.Server, step.Address, 0, timeout)); err != nil {
			r.logger.Warn("promote failed", "member", id, "error", err)
		}
	case placement.Demote:
		r.logger.Info("demoting voter to non-voter", "group", 0, "member", id, "voters", step.Voters, "target", step.Target)
		if err := r.await(g.Raft().DemoteVoter(step.Server, 0, timeout)); err != nil {
			r.logger.Warn("demote failed", "member", id, "error", err)
		}
	}
}

// liveAddrOf is the internal address gossip gives for member id.
func liveAddrOf(gossip []cluster.Member, id string) (string, bool) {
	for _, m := range gossip {
		if m.Name == id {
			return m.InternalAddr, true
		}
	}
	return "", false
}

// placementStatus is gossip's status in placement's terms.
func placementStatus(st cluster.Status) placement.Status {
	switch st {
	case cluster.StatusAlive:
		return placement.Alive
	case cluster.StatusFailed:
		return placement.Failed
	case cluster.StatusLeft:
		return placement.Left
	}
	return placement.Unknown
}

// place, on the control group's leader, creates the partition table if
// there is none and replaces it with partition.Plan's answer when that
// differs. The members placement counts on are the control group's: a
// member joins them when gossip first sees it and leaves them when it
// left or stayed dead past the dead-member timeout, so short outages move
// no data.
func (r *Reconciler) place(g0 *raftgroup.Group) {
	conf, err := g0.Configuration()
	if err != nil {
		return
	}
	universe := make([]string, 0, len(conf.Servers))
	for _, srv := range conf.Servers {
		universe = append(universe, string(srv.ID))
	}
	t, version, ok := r.host.Table()
	if !ok {
		if t, err = partition.NewTable(r.cfg.PartitionGroups, r.cfg.ReplicationFactor); err != nil {
			r.logger.Error("cannot create the partition table", "error", err)
			return
		}
	}
	next := partition.Plan(t, universe)
	if ok && next.Equal(t) {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if _, err := r.host.CASTable(ctx, version, next); err != nil {
		if !isConflict(err) {
			r.logger.Warn("updating the partition table failed", "error", err)
		}
		return
	}
	if !ok {
		r.logger.Info("partition table created", "partition_groups", next.P(), "replication_factor", next.RF, "members", universe)
		return
	}
	for _, ch := range partition.Diff(t, next) {
		r.logger.Info("partition placement", "group", ch.Group, "change", ch.Kind, "member", ch.Member)
	}
}

// isConflict reports a lost compare-and-set on the table.
func isConflict(err error) bool { return errors.Is(err, region.ErrVersionConflict) }
