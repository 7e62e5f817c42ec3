package placement

import (
	"time"

	"github.com/hashicorp/raft"
)

// GroupView is what a partition group's leader knows when it converges
// the group to the table.
type GroupView struct {
	// Self is this member, the group's leader.
	Self string
	// Members are the table's members of the group, preferred leader first.
	Members []string
	// Bootstrapped is the table's record that the group was bootstrapped;
	// until then nothing is changed.
	Bootstrapped bool
	// Conf is the group's latest Raft configuration.
	Conf raft.Configuration
	// Alive maps each member gossip shows alive to its internal address.
	Alive map[string]string
	// CaughtUp reports whether a member's replica has caught up with the
	// leader. It may be an RPC, so it is asked only when a decision needs
	// it.
	CaughtUp func(raft.Server) bool
	// Now is the time of the decision.
	Now time.Time
	// PromoteAfter is how long a non-voter must have been seen caught up
	// before it is promoted.
	PromoteAfter time.Duration
	// TransferEvery is the least time between two leadership transfers.
	TransferEvery time.Duration
}

// Memory is what the decisions of one group remember between calls.
type Memory struct {
	// NonvoterSince is when each wanted non-voter was first seen caught up.
	NonvoterSince map[raft.ServerID]time.Time
	// LastTransfer is when leadership was last handed over.
	LastTransfer time.Time
}

// Kind is what a Step does.
type Kind int

const (
	// None: the group is where the table wants it, or must wait.
	None Kind = iota
	// AddNonvoter adds Server at Address as a non-voter, to catch up.
	AddNonvoter
	// Promote makes the caught-up non-voter Server a voter.
	Promote
	// Remove removes Server, which the table moved away.
	Remove
	// Transfer hands leadership to Server at Address.
	Transfer
	// Demote makes the voter Server a non-voter.
	Demote
)

func (k Kind) String() string {
	switch k {
	case AddNonvoter:
		return "add-nonvoter"
	case Promote:
		return "promote"
	case Remove:
		return "remove"
	case Transfer:
		return "transfer"
	case Demote:
		return "demote"
	}
	return "none"
}

// Step is one change to a group's configuration or leadership.
type Step struct {
	Kind    Kind
	Server  raft.ServerID
	Address raft.ServerAddress
}

// NextGroupStep is the next change that brings the group of v closer to
// the table, in this order: members the table added join as non-voters;
// caught-up non-voters the table wants become voters once they have been
// caught up for PromoteAfter; once every wanted live member votes, a
// member the table dropped is removed (when that is the leader itself,
// leadership goes first to another wanted voter that has caught up); and
// finally leadership goes to the table's preferred leader. Transfers are
// at most one per TransferEvery. mem is updated.
func NextGroupStep(v GroupView, mem *Memory) Step {
	if !v.Bootstrapped {
		return Step{}
	}
	if mem.NonvoterSince == nil {
		mem.NonvoterSince = map[raft.ServerID]time.Time{}
	}
	want := make(map[string]bool, len(v.Members))
	for _, name := range v.Members {
		want[name] = true
	}
	inConf := make(map[string]raft.Server, len(v.Conf.Servers))
	for _, srv := range v.Conf.Servers {
		inConf[string(srv.ID)] = srv
	}

	// Members the table added join as non-voters and catch up.
	for _, name := range v.Members {
		if _, ok := inConf[name]; ok {
			continue
		}
		if addr, ok := v.Alive[name]; ok {
			return Step{Kind: AddNonvoter, Server: raft.ServerID(name), Address: raft.ServerAddress(addr)}
		}
	}
	// Caught-up new members become voters.
	for _, srv := range v.Conf.Servers {
		if srv.Suffrage == raft.Voter || !want[string(srv.ID)] || !v.CaughtUp(srv) {
			delete(mem.NonvoterSince, srv.ID)
			continue
		}
		if !caughtUpFor(mem.NonvoterSince, srv.ID, v.Now, v.PromoteAfter) {
			continue
		}
		delete(mem.NonvoterSince, srv.ID)
		return Step{Kind: Promote, Server: srv.ID, Address: srv.Address}
	}
	// Once every wanted member that is alive is a voter, drop the others.
	for _, name := range v.Members {
		srv, ok := inConf[name]
		if _, up := v.Alive[name]; up && (!ok || srv.Suffrage != raft.Voter) && name != v.Self {
			return Step{} // a move is still in progress
		}
	}
	for _, srv := range v.Conf.Servers {
		id := string(srv.ID)
		if want[id] {
			continue
		}
		if id == v.Self {
			return transfer(v, mem, v.Members)
		}
		return Step{Kind: Remove, Server: srv.ID, Address: srv.Address}
	}
	// Leaders spread: hand over to the table's preferred leader.
	if len(v.Members) > 0 && v.Members[0] != v.Self {
		return transfer(v, mem, v.Members[:1])
	}
	return Step{}
}

// caughtUpFor reports whether the caught-up non-voter id has been seen
// caught up for at least after, remembering in since when it was first
// seen so (a member must stay caught up through PromoteAfter before it
// votes: one that just received a snapshot may still be behind).
func caughtUpFor(since map[raft.ServerID]time.Time, id raft.ServerID, now time.Time, after time.Duration) bool {
	first, seen := since[id]
	if !seen {
		since[id] = now
		return false
	}
	return now.Sub(first) >= after
}

// transfer hands leadership to the first of candidates that is alive, a
// voter and caught up, at most once every TransferEvery.
func transfer(v GroupView, mem *Memory, candidates []string) Step {
	if v.Now.Sub(mem.LastTransfer) < v.TransferEvery {
		return Step{}
	}
	for _, name := range candidates {
		if name == v.Self {
			continue
		}
		addr, ok := v.Alive[name]
		if !ok {
			continue
		}
		for _, srv := range v.Conf.Servers {
			if string(srv.ID) == name && srv.Suffrage == raft.Voter && v.CaughtUp(srv) {
				mem.LastTransfer = v.Now
				return Step{Kind: Transfer, Server: srv.ID, Address: raft.ServerAddress(addr)}
			}
		}
	}
	return Step{}
}
