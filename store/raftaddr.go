package store

import (
	"github.com/hashicorp/raft"

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
