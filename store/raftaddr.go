package store

import "github.com/kvnode/kvnode/store/transport"

// memberAddrs is where Raft dials the members gossip knows (see
// transport.MemberAddrs).
func memberAddrs(members Membership) transport.MemberAddrs {
	return func(name string) (string, bool) {
		for _, m := range members.Members() {
			if m.Name == name {
				return m.InternalAddr, true
			}
		}
		return "", false
	}
}
