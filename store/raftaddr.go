package store

import (
	"fmt"

	"github.com/hashicorp/raft"

	"github.com/kvnode/kvnode/cluster"
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

// addressFix is one change that brings a configuration's recorded address
// of server closer to where its member is.
type addressFix struct {
	server raft.Server
	to     raft.ServerAddress
	why    string
}

// nextAddressFix returns the next recorded address to change, if any.
// current says where gossip has each live member; joining are members
// about to be added. Raft refuses a configuration in which two servers
// share an address, so when a member's new address (or a joining member's
// address) is still recorded for another server (IPs shuffled by a
// restart), that other server is moved first: to its own new address if
// that is free, else to a placeholder that cannot resolve (".invalid",
// RFC 2606) until its turn comes. Dialing never uses these addresses
// (memberAddrs), so a placeholder costs nothing; the recorded addresses
// matter to operators reading the configuration.
func nextAddressFix(conf raft.Configuration, current func(id string) (string, bool), joining []string) (addressFix, bool) {
	holder := make(map[raft.ServerAddress]raft.Server, len(conf.Servers))
	for _, srv := range conf.Servers {
		holder[srv.Address] = srv
	}
	// vacate moves other off the address that member needs.
	vacate := func(other raft.Server, member string) (addressFix, bool) {
		otherWant, ok := current(string(other.ID))
		switch {
		case ok && raft.ServerAddress(otherWant) == other.Address:
			// Gossip gives two members the same address: a
			// misconfiguration that no change here can mend.
			return addressFix{}, false
		case ok && !has(holder, otherWant):
			return addressFix{server: other, to: raft.ServerAddress(otherWant), why: "member address changed"}, true
		default:
			return addressFix{
				server: other,
				to:     raft.ServerAddress(fmt.Sprintf("%s.moved.invalid:0", other.ID)),
				why:    fmt.Sprintf("its recorded address now belongs to member %s", member),
			}, true
		}
	}
	for _, srv := range conf.Servers {
		want, ok := current(string(srv.ID))
		if !ok || raft.ServerAddress(want) == srv.Address {
			continue
		}
		other, taken := holder[raft.ServerAddress(want)]
		if !taken {
			return addressFix{server: srv, to: raft.ServerAddress(want), why: "member address changed"}, true
		}
		if fix, ok := vacate(other, string(srv.ID)); ok {
			return fix, true
		}
	}
	for _, id := range joining {
		want, ok := current(id)
		if !ok {
			continue
		}
		if other, taken := holder[raft.ServerAddress(want)]; taken && string(other.ID) != id {
			if fix, ok := vacate(other, id); ok {
				return fix, true
			}
		}
	}
	return addressFix{}, false
}

func has(m map[raft.ServerAddress]raft.Server, addr string) bool {
	_, ok := m[raft.ServerAddress(addr)]
	return ok
}

// applyAddressFix records fix in g's configuration, keeping the server's
// suffrage.
func (s *Store) applyAddressFix(g *group, fix addressFix) error {
	s.logger.Info("updating a member's recorded Raft address", "group", g.id, "member", string(fix.server.ID),
		"from", string(fix.server.Address), "to", string(fix.to), "reason", fix.why)
	const timeout = internalTimeout
	var f raft.IndexFuture
	if fix.server.Suffrage == raft.Voter {
		f = g.raft.AddVoter(fix.server.ID, fix.to, 0, timeout)
	} else {
		f = g.raft.AddNonvoter(fix.server.ID, fix.to, 0, timeout)
	}
	if err := await(f, internalTimeout, s.stop); err != nil {
		return fmt.Errorf("group %d: update the address of %s: %w", g.id, fix.server.ID, err)
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
