package store

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/hashicorp/raft"

	"github.com/kvnode/kvnode/cluster"
	"github.com/kvnode/kvnode/region"
	"github.com/kvnode/kvnode/store/placement"
	"github.com/kvnode/kvnode/store/raftgroup"
	"github.com/kvnode/kvnode/store/transport"
)

// Gossip observes, Raft decides: this file turns the gossip view into Raft
// membership of the control group. Only two actors ever change it: the one
// node that bootstraps a new cluster, and group 0's leader reconciling.

// maxLagToPromote is how many entries a non-voter may trail the leader and
// still be promoted: promoting a far-behind voter would make commits wait
// for its catch-up.
const maxLagToPromote = 256

// membershipState is the leader-side memory of the reconciler.
type membershipState struct {
	bootstrapped atomic.Bool
	lastWaitLog  time.Time
	// placement is what the control group's placement decisions remember.
	placement placement.ControlMemory
}

func (s *Store) runMembership() {
	sub, unsub := s.cfg.Members.Subscribe()
	defer unsub()
	t := time.NewTicker(s.cfg.ReconcileInterval)
	defer t.Stop()
	st := &membershipState{}
	for {
		s.maybeBootstrap(st)
		if g := s.control(); g != nil && g.IsLeader() {
			s.reconcile(st, g)
			s.place(g)
		}
		select {
		case <-s.stop:
			return
		case <-t.C:
		case <-sub:
		}
	}
}

// aliveMembers returns alive members that advertise an internal address,
// sorted by name.
func (s *Store) aliveMembers() []cluster.Member {
	var out []cluster.Member
	for _, m := range s.cfg.Members.Members() {
		if m.Status == cluster.StatusAlive && m.InternalAddr != "" {
			out = append(out, m)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// maybeBootstrap bootstraps the control group when this node is the one
// that should: it has no Raft state, gossip shows at least BootstrapExpect
// members, it has the smallest name among them, and none of them already
// belongs to a cluster. Exactly one node satisfies this, so the cluster is
// bootstrapped once; a restarted node has state and never bootstraps again.
func (s *Store) maybeBootstrap(st *membershipState) {
	if st.bootstrapped.Load() {
		return
	}
	g := s.control()
	if g == nil {
		return
	}
	if id, _ := g.Leader(); g.HasState() || id != "" {
		st.bootstrapped.Store(true)
		return
	}
	alive := s.aliveMembers()
	expect := s.cfg.BootstrapExpect
	if len(alive) < expect {
		if time.Since(st.lastWaitLog) > 10*time.Second {
			st.lastWaitLog = time.Now()
			s.logger.Info("waiting for members before bootstrapping", "expect", expect, "seen", len(alive))
		}
		return
	}
	if expect == 1 && s.cfg.JoinRequested && len(alive) < 2 && time.Since(s.started) < s.cfg.JoinGrace {
		return // give --join a chance to find an existing cluster first
	}
	if len(alive) == 0 || alive[0].Name != s.name {
		return // the member with the smallest name bootstraps
	}
	for _, m := range alive[1:] {
		if m.BootstrapExpect != 0 && m.BootstrapExpect != expect {
			s.logger.Warn("members disagree on --bootstrap-expect", "member", m.Name, "theirs", m.BootstrapExpect, "ours", expect)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		ns, err := s.client.status(ctx, m.InternalAddr)
		cancel()
		if err != nil {
			s.logger.Debug("bootstrap: cannot ask member for its state yet", "member", m.Name, "error", err)
			return
		}
		for _, gs := range ns.Groups {
			if gs.ID == controlGroup && (gs.HasState || gs.Leader != "") {
				s.logger.Info("not bootstrapping: a member already belongs to a cluster; waiting to be added", "member", m.Name)
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
	if err := raftgroup.Await(g.Raft().BootstrapCluster(conf), raftgroup.InternalTimeout, s.stop); err != nil {
		s.logger.Warn("bootstrap failed", "error", err)
		if err == raft.ErrCantBootstrap {
			st.bootstrapped.Store(true)
		}
		return
	}
	st.bootstrapped.Store(true)
	names := make([]string, 0, n)
	for _, m := range alive[:n] {
		names = append(names, m.Name)
	}
	s.logger.Info("bootstrapped the cluster", "voters", names)
}

// reconcile makes one membership change, at most, per call (Raft applies
// configuration changes one at a time): add gossip members missing from
// Raft, update moved addresses, remove members that left or stayed dead past
// the dead-member timeout, then promote or demote to the voter target.
func (s *Store) reconcile(st *membershipState, g *raftgroup.Group) {
	conf, err := g.Configuration()
	if err != nil {
		s.logger.Warn("reconcile: read configuration", "error", err)
		return
	}
	gossip := s.cfg.Members.Members()
	members := make(map[string]placement.Member, len(gossip))
	for _, m := range gossip {
		members[m.Name] = placement.Member{Status: placementStatus(m.Status), Since: m.Since, InternalAddr: m.InternalAddr}
	}
	inConf := make(map[string]bool, len(conf.Servers))
	for _, srv := range conf.Servers {
		inConf[string(srv.ID)] = true
	}
	const timeout = raftgroup.InternalTimeout

	// Recorded addresses that moved (a rescheduled pod, a restarted
	// container) are updated first.
	var joining []string
	for _, m := range s.aliveMembers() {
		if !inConf[m.Name] {
			joining = append(joining, m.Name)
		}
	}
	if fix, ok := placement.NextAddressFix(conf, s.liveAddr, joining); ok {
		if err := s.applyAddressFix(g, fix); err != nil {
			s.logger.Warn("update member address failed", "error", err)
		}
		return
	}
	step := placement.NextControlStep(placement.ControlView{
		Self:              s.name,
		Conf:              conf,
		Members:           members,
		CaughtUp:          func(srv raft.Server) bool { return s.caughtUp(g, srv) },
		Now:               time.Now(),
		Started:           s.started,
		DeadMemberTimeout: s.cfg.DeadMemberTimeout,
		PromoteAfter:      s.cfg.PromoteAfter,
	}, &st.placement)
	id := string(step.Server)
	switch step.Kind {
	case placement.AddNonvoter:
		s.logger.Info("adding member to the control group as non-voter", "member", id, "address", string(step.Address))
		if err := raftgroup.Await(g.Raft().AddNonvoter(step.Server, step.Address, 0, timeout), raftgroup.InternalTimeout, s.stop); err != nil {
			s.logger.Warn("add non-voter failed", "member", id, "error", err)
		}
	case placement.Remove:
		ctx, cancel := context.WithTimeout(context.Background(), timeout)
		err := s.removeServer(ctx, g, id, step.Reason)
		cancel()
		if err != nil {
			s.logger.Warn("remove member failed", "member", id, "error", err)
		}
	case placement.Promote:
		s.logger.Info("promoting member to voter", "member", id, "voters", step.Voters, "target", step.Target)
		if err := raftgroup.Await(g.Raft().AddVoter(step.Server, step.Address, 0, timeout), raftgroup.InternalTimeout, s.stop); err != nil {
			s.logger.Warn("promote failed", "member", id, "error", err)
		}
	case placement.Demote:
		s.logger.Info("demoting voter to non-voter", "member", id, "voters", step.Voters, "target", step.Target)
		if err := raftgroup.Await(g.Raft().DemoteVoter(step.Server, 0, timeout), raftgroup.InternalTimeout, s.stop); err != nil {
			s.logger.Warn("demote failed", "member", id, "error", err)
		}
	}
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

// caughtUp asks a non-voter how far it has applied group g. It asks at the
// address gossip gives for the member now (the recorded one when gossip has
// none), and believes only an answer from that member: containers and pods
// restart on shuffled addresses, so the recorded address may now be another
// member's, whose progress says nothing about this one's.
func (s *Store) caughtUp(g *raftgroup.Group, srv raft.Server) bool {
	addr, _ := transport.SplitRaftAddr(srv.Address)
	if live, ok := s.liveAddr(string(srv.ID)); ok {
		addr = live
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	ns, err := s.client.status(ctx, addr)
	if err != nil {
		return false
	}
	if ns.Name != string(srv.ID) {
		s.logger.Debug("not promoting: another member answers at its address", "member", string(srv.ID), "address", addr, "answered", ns.Name)
		return false
	}
	leaderIdx := g.FSM().AppliedIndex()
	for _, gs := range ns.Groups {
		if gs.ID == g.ID() {
			return gs.AppliedIndex+maxLagToPromote >= leaderIdx
		}
	}
	return false
}

// groupName is how log lines name a Raft group.
func groupName(gid uint64) string {
	if gid == controlGroup {
		return "the control group"
	}
	return "partition group " + strconv.FormatUint(gid, 10)
}

// removeServer removes id from the group's configuration; this node must be
// the leader. It never removes the last voter. Any group: the leave RPC
// names the group it is for.
func (s *Store) removeServer(ctx context.Context, g *raftgroup.Group, id, reason string) error {
	if id == "" {
		return fmt.Errorf("remove server: %w: empty server id", region.ErrInvalid)
	}
	if !g.IsLeader() {
		return fmt.Errorf("remove %s: %w", id, region.ErrNotLeader)
	}
	conf, err := g.Configuration()
	if err != nil {
		return err
	}
	var found *raft.Server
	voters := 0
	for i, srv := range conf.Servers {
		if srv.Suffrage == raft.Voter {
			voters++
		}
		if string(srv.ID) == id {
			found = &conf.Servers[i]
		}
	}
	if found == nil {
		return nil
	}
	if found.Suffrage == raft.Voter && voters == 1 {
		return fmt.Errorf("refusing to remove %s: it is the last voter of group %d", id, g.ID())
	}
	timeout := raftgroup.InternalTimeout
	if dl, ok := ctx.Deadline(); ok {
		timeout = time.Until(dl)
	}
	s.logger.Info("removing member from "+groupName(g.ID()), "member", id, "group", g.ID(), "reason", reason)
	if err := raftgroup.Await(g.Raft().RemoveServer(raft.ServerID(id), 0, timeout), raftgroup.InternalTimeout, s.stop); err != nil {
		return fmt.Errorf("remove %s from group %d: %w", id, g.ID(), raftgroup.FromRaft(err))
	}
	return nil
}

// Leave prepares a graceful exit: a leader hands its leadership to another
// voter, then the node asks the leader to remove it from the control group
// and waits until that is committed, so the remaining members keep a quorum
// that does not count on it; then it waits while its partition replicas
// move to the remaining members (drainPartitions). The last voter of a
// cluster stays, so that a whole-cluster shutdown restarts with its data.
// Leave is bounded by ctx.
func (s *Store) Leave(ctx context.Context) error {
	g := s.control()
	if g == nil {
		return errClosed
	}
	conf, err := g.Configuration()
	if err != nil {
		return err
	}
	others := 0
	member := false
	for _, srv := range conf.Servers {
		if string(srv.ID) == s.name {
			member = true
		} else if srv.Suffrage == raft.Voter {
			others++
		}
	}
	if !member || others == 0 {
		return nil
	}
	if g.IsLeader() {
		s.logger.Info("transferring leadership before leaving")
		if err := raftgroup.Await(g.Raft().LeadershipTransfer(), raftgroup.InternalTimeout, s.stop); err != nil {
			s.logger.Warn("leadership transfer failed", "error", err)
		}
	}
	var last error
	var since time.Time
	for attempt := 0; ; attempt++ {
		id, addr := g.Leader()
		switch {
		case id == s.name:
			last = s.removeServer(ctx, g, s.name, "left gracefully")
		case id == "":
			last = fmt.Errorf("leave: %w", region.ErrNoLeader)
		default:
			last = s.client.leave(ctx, addr, g.ID(), s.name)
		}
		if last == nil {
			s.logger.Info("left the control group")
			return s.drainPartitions(ctx)
		}
		if !retryableWrite(last) {
			return fmt.Errorf("leave: %w", last)
		}
		if since.IsZero() {
			since = time.Now()
		}
		if err := s.pause(ctx, g, attempt, since, last); err != nil {
			return fmt.Errorf("leave: %w", err)
		}
	}
}

// drainPartitions waits, bounded by ctx, until this node is no longer in
// any partition group: leaving the control group takes it out of the
// placement, and the groups' leaders first add a replacement replica (when
// a member is left to take it), then remove this one. Without the wait, a
// member that leaves takes a replica with it at once, and two members
// leaving together (a StatefulSet scaled down by two) could take two of a
// group's three voters, with writes only they had acknowledged.
//
// This node's copy of the partition table stops changing once it has left
// the control group, so it must not lead the move: it hands leadership of
// its groups to members that see the new table.
func (s *Store) drainPartitions(ctx context.Context) error {
	start, lastReport := time.Now(), time.Now()
	transferred := map[uint64]time.Time{}
	var lastAsked time.Time
	out := map[uint64]bool{} // groups whose leader no longer counts us
	for {
		if time.Since(lastAsked) > time.Second {
			lastAsked = time.Now()
			for gid := range s.removedByLeaders(ctx) {
				out[gid] = true
			}
		}
		var inside []uint64
		for _, g := range s.localGroups() {
			if out[g.ID()] {
				continue
			}
			if g.ID() == controlGroup || !g.HasState() {
				continue
			}
			conf, err := g.Configuration()
			if err != nil {
				continue
			}
			member := false
			for _, srv := range conf.Servers {
				if string(srv.ID) == s.name {
					member = true
				}
			}
			if !member {
				continue
			}
			inside = append(inside, g.ID())
			if !g.IsLeader() {
				continue
			}
			if time.Since(start) > drainSelfRemoveAfter && voters(conf) > 1 {
				// Still leading with a stale table: take this replica out
				// directly. Safe while we are alive: the change commits on
				// the remaining voters, which then hold every write.
				s.logger.Info("removing this replica from a partition group it still leads", "group", g.ID())
				if err := raftgroup.Await(g.Raft().RemoveServer(raft.ServerID(s.name), 0, 5*time.Second), raftgroup.InternalTimeout, s.stop); err != nil {
					s.logger.Debug("self-removal while draining", "group", g.ID(), "error", err)
				}
				continue
			}
			if time.Since(transferred[g.ID()]) > 2*time.Second {
				transferred[g.ID()] = time.Now()
				if err := raftgroup.Await(g.Raft().LeadershipTransfer(), raftgroup.InternalTimeout, s.stop); err != nil {
					s.logger.Debug("leadership transfer while draining", "group", g.ID(), "error", err)
				}
			}
		}
		if len(inside) == 0 {
			s.logger.Info("partition replicas moved away", "took", time.Since(start).Round(time.Millisecond))
			return nil
		}
		if time.Since(lastReport) > 2*time.Second {
			lastReport = time.Now()
			s.logger.Info("waiting for partition replicas to move away", "groups", inside, "waited", time.Since(start).Round(time.Millisecond))
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("leave: partition groups %v still count on this member: %w", inside, ctx.Err())
		case <-s.stop:
			return errClosed
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// removedByLeaders asks every alive member for its status and returns the
// partition groups whose leader has committed a configuration without this
// node. A member removed from a group may never hear of it: the leader stops
// replicating to it as soon as it appends the change, and its best-effort
// last send can fail; its own copy of the configuration then names it for
// ever (seen: TestScaleDownTwoAtOnce waited 30 s for such a group).
func (s *Store) removedByLeaders(ctx context.Context) map[uint64]bool {
	out := map[uint64]bool{}
	for name, addr := range s.internalAddrs() {
		if name == s.name {
			continue
		}
		cctx, cancel := context.WithTimeout(ctx, 500*time.Millisecond)
		ns, err := s.client.status(cctx, addr)
		cancel()
		if err != nil || ns.Name != name {
			continue
		}
		for _, gs := range ns.Groups {
			if gs.ID == controlGroup || gs.State != raft.Leader.String() || gs.CommitIndex < gs.ConfigIndex {
				continue
			}
			if !slices.Contains(gs.Voters, s.name) && !slices.Contains(gs.NonVoters, s.name) {
				out[gs.ID] = true
			}
		}
	}
	return out
}

// drainSelfRemoveAfter is how long a leaving member waits for the groups'
// leaders to move its replicas before it removes itself from groups it
// still leads.
const drainSelfRemoveAfter = 5 * time.Second

// voters counts conf's voters.
func voters(conf raft.Configuration) int {
	n := 0
	for _, srv := range conf.Servers {
		if srv.Suffrage == raft.Voter {
			n++
		}
	}
	return n
}
