package store

import (
	"context"
	"fmt"
	"time"

	"github.com/hashicorp/raft"

	"github.com/kvnode/kvnode/region"
	"github.com/kvnode/kvnode/store/raftgroup"
	"github.com/kvnode/kvnode/store/transport"
)

// maxLagToPromote is how many entries a non-voter may trail the leader and
// still be promoted: promoting a far-behind voter would make commits wait
// for its catch-up.
const maxLagToPromote = 256

// caughtUp asks a non-voter how far it has applied group g. It asks at the
// address gossip gives for the member now (the recorded one when gossip has
// none), and believes only an answer from that member: containers and pods
// restart on shuffled addresses, so the recorded address may now be another
// member's, whose progress says nothing about this one's.
func (s *Store) caughtUp(g *raftgroup.Group, srv raft.Server) bool {
	addr, _ := transport.SplitRaftAddr(srv.Address)
	if live, ok := s.router.view.internalAddrs()[string(srv.ID)]; ok {
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

// HandOver gives the leadership of every group this member leads to the
// live voter that has applied the most of it (reconcile's HandOver), before
// the member stops. From the first call the member is stopping: its status
// RPC refuses (so leaders neither promote it nor hand it leadership back)
// and Ready fails (/readyz 503). It stays a member: a restart is no leave.
func (s *Store) HandOver(ctx context.Context) error {
	s.stopping.Store(true)
	return s.reconciler.HandOver(ctx)
}

// Leave prepares a graceful exit: a leader hands its leadership to another
// voter, then the node asks the leader to remove it from the control group
// and waits until that is committed, so the remaining members keep a quorum
// that does not count on it; then it waits while its partition replicas
// move to the remaining members (reconcile's Drain). The last voter of a
// cluster stays, so that a whole-cluster shutdown restarts with its data.
// Leave is bounded by ctx.
func (s *Store) Leave(ctx context.Context) error {
	g := s.groups.control()
	if g == nil {
		return region.ErrShuttingDown
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
	if err := s.HandOver(ctx); err != nil {
		s.logger.Warn("handing over leadership before leaving did not finish", "error", err)
	}
	var last error
	var since time.Time
	for attempt := 0; ; attempt++ {
		id, addr := g.Leader()
		switch {
		case id == s.name:
			last = g.RemoveServer(ctx, s.name, "left gracefully")
		case id == "":
			last = fmt.Errorf("leave: %w", region.ErrNoLeader)
		default:
			last = s.client.leave(ctx, addr, g.ID(), s.name)
		}
		if last == nil {
			s.logger.Info("left the control group")
			return s.reconciler.Drain(ctx)
		}
		if !retryableWrite(last) {
			return fmt.Errorf("leave: %w", last)
		}
		if since.IsZero() {
			since = time.Now()
		}
		if err := s.router.pause(ctx, g, attempt, since, last); err != nil {
			return fmt.Errorf("leave: %w", err)
		}
	}
}
