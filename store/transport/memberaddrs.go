package transport

import "github.com/hashicorp/raft"

// MemberAddrs tells every group's Raft transport where a member is now:
// the internal address it advertises in gossip (Lookup), tagged with its
// name so that the member at the other end can refuse a connection meant
// for someone else (kindRaftTo).
//
// A Raft configuration records the address a member had when it was
// added. Containers and pods that restart get new IPs, and after a
// whole-cluster restart the IPs are shuffled among the members: dialing the
// recorded address would then reach another member, which hashicorp/raft
// would answer as if it were the one intended. Reconcile loops update the
// recorded addresses, but only a leader can, and electing one needs the
// right addresses first. So Raft dials only members gossip knows, at the
// address gossip gives, and never a recorded address.
type MemberAddrs func(name string) (addr string, ok bool)

// ServerAddr implements raft.ServerAddressProvider. It never fails: for a
// member gossip has not heard of it returns an address with no host, which
// Dial refuses, so raft does not fall back to the recorded address.
func (lookup MemberAddrs) ServerAddr(id raft.ServerID) (raft.ServerAddress, error) {
	if addr, ok := lookup(string(id)); ok && addr != "" {
		return JoinRaftAddr(addr, string(id)), nil
	}
	return JoinRaftAddr("", string(id)), nil
}
