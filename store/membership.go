package store

import (
	"context"
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

// Leave prepares a graceful exit (reconcile's Leave): the member is
// stopping from here on, as in HandOver, then it hands over its
// leaderships, leaves the control group and waits while its partition
// replicas move. Leave is bounded by ctx.
func (s *Store) Leave(ctx context.Context) error {
	s.stopping.Store(true)
	return s.reconciler.Leave(ctx)
}

// RemoveMember removes a member that is gone for good from the cluster
// now rather than after the dead-member timeout (reconcile's RemoveMember).
func (s *Store) RemoveMember(ctx context.Context, name string) error {
	return s.reconciler.RemoveMember(ctx, name)
}

// removeFromControl has the control group's leader remove member id,
// retrying while there is no leader or it moves, bounded by ctx.
func (s *Store) removeFromControl(ctx context.Context, g *raftgroup.Group, id, reason string) error {
	var since time.Time
	for attempt := 0; ; attempt++ {
		var err error
		switch leader, addr := g.Leader(); {
		case leader == s.name:
			err = g.RemoveServer(ctx, id, reason)
		case leader == "":
			err = region.ErrNoLeader
		default:
			err = s.client.leave(ctx, addr, g.ID(), id, reason)
		}
		if err == nil || !retryableWrite(err) {
			return err
		}
		if since.IsZero() {
			since = time.Now()
		}
		if err := s.router.pause(ctx, g, attempt, since, err); err != nil {
			return err
		}
	}
}
