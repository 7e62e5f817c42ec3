package placement

import (
	"fmt"

	"github.com/hashicorp/raft"
)

// AddressFix is one change that brings a configuration's recorded address
// of Server closer to where its member is: record To instead, keeping the
// server's suffrage. Why says so for the log.
type AddressFix struct {
	Server raft.Server
	To     raft.ServerAddress
	Why    string
}

// NextAddressFix returns the next recorded address to change, if any.
// current says where gossip has each live member; joining are members
// about to be added. Raft refuses a configuration in which two servers
// share an address, so when a member's new address (or a joining member's
// address) is still recorded for another server (IPs shuffled by a
// restart), that other server is moved first: to its own new address if
// that is free, else to a placeholder that cannot resolve (".invalid",
// RFC 2606) until its turn comes. Dialing never uses these addresses
// (the store dials members where gossip says they are), so a placeholder costs nothing; the recorded addresses
// matter to operators reading the configuration.
func NextAddressFix(conf raft.Configuration, current func(id string) (string, bool), joining []string) (AddressFix, bool) {
	holder := make(map[raft.ServerAddress]raft.Server, len(conf.Servers))
	for _, srv := range conf.Servers {
		holder[srv.Address] = srv
	}
	// vacate moves other off the address that member needs.
	vacate := func(other raft.Server, member string) (AddressFix, bool) {
		otherWant, ok := current(string(other.ID))
		switch {
		case ok && raft.ServerAddress(otherWant) == other.Address:
			// Gossip gives two members the same address: a
			// misconfiguration that no change here can mend.
			return AddressFix{}, false
		case ok && !has(holder, otherWant):
			return AddressFix{Server: other, To: raft.ServerAddress(otherWant), Why: "member address changed"}, true
		default:
			return AddressFix{
				Server: other,
				To:     raft.ServerAddress(fmt.Sprintf("%s.moved.invalid:0", other.ID)),
				Why:    fmt.Sprintf("its recorded address now belongs to member %s", member),
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
			return AddressFix{Server: srv, To: raft.ServerAddress(want), Why: "member address changed"}, true
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
	return AddressFix{}, false
}

func has(m map[raft.ServerAddress]raft.Server, addr string) bool {
	_, ok := m[raft.ServerAddress(addr)]
	return ok
}
