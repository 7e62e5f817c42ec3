package store

import (
	"fmt"

	"github.com/hashicorp/raft"

	"github.com/kvnode/kvnode/cluster"
	"github.com/kvnode/kvnode/store/placement"
	"github.com/kvnode/kvnode/store/raftgroup"
	"github.com/kvnode/kvnode/store/transport"
)

// memberAddrs tells every group's Raft transport where a member is now:
// the internal address it advertises in gossip, tagged with its name so
// that the member at the other end can refuse a connection meant for
// someone else (kindRaftTo).
//
// A Raft configuration records the address a member had when it was
// added. Containers and pods that restart get new IPs, and after a
// whole-cluster restart the IPs are shuffled among the members: dialing the
// recorded address would then reach another member, which hashicorp/raft
// would answer as if it were the one intended. Reconcile loops update the
// recorded addresses, but only a leader can, and electing one needs the
// right addresses first. So Raft dials only members gossip knows, at the
// address gossip gives, and never a recorded address.
type memberAddrs struct{ members Membership }

// ServerAddr implements raft.ServerAddressProvider. It never fails: for a
// member gossip has not heard of it returns an address with no host, which
// Dial refuses, so raft does not fall back to the recorded address.
func (a memberAddrs) ServerAddr(id raft.ServerID) (raft.ServerAddress, error) {
	for _, m := range a.members.Members() {
		if m.Name == string(id) && m.InternalAddr != "" {
			return transport.JoinRaftAddr(m.InternalAddr, m.Name), nil
		}
	}
	return transport.JoinRaftAddr("", string(id)), nil
}

// applyAddressFix records fix in g's configuration, keeping the server's
// suffrage.
func (s *Store) applyAddressFix(g *raftgroup.Group, fix placement.AddressFix) error {
	s.logger.Info("updating a member's recorded Raft address", "group", g.ID(), "member", string(fix.Server.ID),
		"from", string(fix.Server.Address), "to", string(fix.To), "reason", fix.Why)
	const timeout = raftgroup.InternalTimeout
	var f raft.IndexFuture
	if fix.Server.Suffrage == raft.Voter {
		f = g.Raft().AddVoter(fix.Server.ID, fix.To, 0, timeout)
	} else {
		f = g.Raft().AddNonvoter(fix.Server.ID, fix.To, 0, timeout)
	}
	if err := raftgroup.Await(f, raftgroup.InternalTimeout, s.stop); err != nil {
		return fmt.Errorf("group %d: update the address of %s: %w", g.ID(), fix.Server.ID, err)
	}
	return nil
}

// liveAddr says where gossip has member id, if it is alive.
func (s *Store) liveAddr(id string) (string, bool) {
	for _, m := range s.cfg.Members.Members() {
		if m.Name == id {
			return m.InternalAddr, m.InternalAddr != "" && m.Status == cluster.StatusAlive
		}
	}
	return "", false
}
