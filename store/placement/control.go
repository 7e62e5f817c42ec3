package placement

import (
	"fmt"
	"sort"
	"time"

	"github.com/hashicorp/raft"
)

// Status is a member's state as gossip reports it.
type Status int

const (
	// Unknown: gossip has not heard of the member.
	Unknown Status = iota
	// Alive: gossip hears from it.
	Alive
	// Failed: gossip stopped hearing from it (it may come back).
	Failed
	// Left: it left the cluster gracefully.
	Left
)

// Member is what gossip says of one member.
type Member struct {
	Status Status
	// Since is when the member entered Status.
	Since time.Time
	// InternalAddr is where its internal port is ("" when unknown).
	InternalAddr string
	// Verified says it proved its identity at InternalAddr over the
	// internal port (package admission): gossip alone admits no one.
	Verified bool
}

// ControlView is what the control group's leader knows when it
// reconciles the group's membership with gossip.
type ControlView struct {
	// Self is this member, the control group's leader.
	Self string
	// Conf is the control group's latest Raft configuration.
	Conf raft.Configuration
	// Members is every member gossip knows, by name.
	Members map[string]Member
	// CaughtUp reports whether a member's replica has caught up with the
	// leader; it may be an RPC, so it is asked only when needed.
	CaughtUp func(raft.Server) bool
	// Now is the time of the decision; Started is when this leader's
	// store started (a member gossip never heard of is timed from then).
	Now, Started time.Time
	// DeadMemberTimeout is how long a failed or unknown member stays.
	DeadMemberTimeout time.Duration
	// PromoteAfter is how long a non-voter must have been seen caught up
	// before it is promoted.
	PromoteAfter time.Duration
	// CatchUpTimeout is how long a live non-voter may take to catch up
	// for the first time before it is removed again (0: for ever).
	CatchUpTimeout time.Duration
}

// ControlMemory is what the control group's decisions remember between
// calls.
type ControlMemory struct {
	// NonvoterSince is when each non-voter was first seen caught up.
	NonvoterSince map[raft.ServerID]time.Time
	// Joining is when each live non-voter not yet seen caught up was
	// first seen; CaughtUp the non-voters seen caught up at least once.
	Joining  map[raft.ServerID]time.Time
	CaughtUp map[raft.ServerID]bool
}

// neverCaughtUp is the removal of an alive non-voter that this leader has
// not seen caught up since it first saw it, CatchUpTimeout ago. A
// non-voter seen caught up once is never removed by this rule (a
// permanent non-voter of a large cluster that falls behind under load
// catches up again); a failed one is left to the dead-member timeout.
func neverCaughtUp(v ControlView, mem *ControlMemory, inConf map[string]raft.Server) (ControlStep, bool) {
	for id := range mem.Joining {
		if srv, ok := inConf[string(id)]; !ok || srv.Suffrage == raft.Voter {
			delete(mem.Joining, id)
		}
	}
	for id := range mem.CaughtUp {
		if _, ok := inConf[string(id)]; !ok {
			delete(mem.CaughtUp, id)
		}
	}
	if v.CatchUpTimeout <= 0 {
		return ControlStep{}, false
	}
	for _, srv := range v.Conf.Servers {
		id := string(srv.ID)
		if srv.Suffrage == raft.Voter || id == v.Self || mem.CaughtUp[srv.ID] || v.Members[id].Status != Alive {
			continue
		}
		first, seen := mem.Joining[srv.ID]
		if !seen {
			first = v.Now
			mem.Joining[srv.ID] = first
		}
		if v.CaughtUp(srv) {
			mem.CaughtUp[srv.ID] = true
			delete(mem.Joining, srv.ID)
			continue
		}
		if v.Now.Sub(first) > v.CatchUpTimeout {
			return ControlStep{Step: Step{Kind: Remove, Server: srv.ID, Address: srv.Address},
				Reason: fmt.Sprintf("joined as a non-voter but did not catch up within %v", v.CatchUpTimeout), Refuse: true}, true
		}
	}
	return ControlStep{}, false
}

// VoterTarget is how many voters the control group wants among n live
// members: all of them up to 3, then 3 until there are 5, then 5.
func VoterTarget(n int) int {
	switch {
	case n >= 5:
		return 5
	case n < 1:
		return 1
	default:
		return min(n, 3)
	}
}

// ControlStep is one membership change of the control group.
type ControlStep struct {
	Step
	// Reason says why a member is removed.
	Reason string
	// Voters and Target are the voter count and the voter target that a
	// promotion or a demotion moves between.
	Voters, Target int
	// Refuse says a removed member must not be added back at once: it
	// joined but did not catch up (the caller keeps it out for a while).
	Refuse bool
}

// NextControlStep is the next membership change of the control group, at
// most one per call (Raft applies configuration changes one at a time),
// in this order: alive members that proved their identity (Verified) and
// are missing from the configuration join as non-voters (in name order);
// a member that left goes at once, a failed one after DeadMemberTimeout,
// one gossip never heard of after DeadMemberTimeout counted from Started,
// an alive non-voter never seen caught up after CatchUpTimeout (Refuse:
// something stops it from following the group, so it holds a place in
// the partition table, and maybe votes in partition groups, that it
// cannot fill, and its groups are placed elsewhere); then the voters move toward
// VoterTarget of the live members: caught-up live non-voters are promoted
// (in name order, each once caught up for PromoteAfter), and extra voters
// are demoted, the greatest name other than Self first, only while every
// voter is alive. Address fixes come before all of this and are the
// caller's. mem is updated.
func NextControlStep(v ControlView, mem *ControlMemory) ControlStep {
	if mem.NonvoterSince == nil {
		mem.NonvoterSince = map[raft.ServerID]time.Time{}
	}
	if mem.Joining == nil {
		mem.Joining = map[raft.ServerID]time.Time{}
		mem.CaughtUp = map[raft.ServerID]bool{}
	}
	// Each member's catch-up is asked once per decision (it may be an RPC).
	asked := map[raft.ServerID]bool{}
	caughtUp := v.CaughtUp
	v.CaughtUp = func(srv raft.Server) bool {
		ok, done := asked[srv.ID]
		if !done {
			ok = caughtUp(srv)
			asked[srv.ID] = ok
		}
		return ok
	}
	inConf := make(map[string]raft.Server, len(v.Conf.Servers))
	for _, srv := range v.Conf.Servers {
		inConf[string(srv.ID)] = srv
	}

	// 1. Alive members missing from Raft join as non-voters.
	names := make([]string, 0, len(v.Members))
	for name := range v.Members {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		m := v.Members[name]
		if m.Status != Alive || m.InternalAddr == "" || !m.Verified {
			continue
		}
		if _, ok := inConf[name]; !ok {
			return ControlStep{Step: Step{Kind: AddNonvoter, Server: raft.ServerID(name), Address: raft.ServerAddress(m.InternalAddr)}}
		}
	}

	// 2. Members that left go at once; failed ones after the dead-member
	// timeout; ones gossip has never heard of (this leader restarted)
	// after the timeout counted from the start.
	for _, srv := range v.Conf.Servers {
		id := string(srv.ID)
		if id == v.Self {
			continue
		}
		m, known := v.Members[id]
		reason := ""
		switch {
		case known && m.Status == Left:
			reason = "left the cluster"
		case known && m.Status == Failed && v.Now.Sub(m.Since) > v.DeadMemberTimeout:
			reason = fmt.Sprintf("failed for more than %v", v.DeadMemberTimeout)
		case !known && v.Now.Sub(v.Started) > v.DeadMemberTimeout:
			reason = fmt.Sprintf("unknown to gossip for more than %v", v.DeadMemberTimeout)
		}
		if reason != "" {
			return ControlStep{Step: Step{Kind: Remove, Server: srv.ID, Address: srv.Address}, Reason: reason}
		}
	}
	if step, ok := neverCaughtUp(v, mem, inConf); ok {
		return step
	}

	// 3. Voters: reach the target with caught-up, alive non-voters; shed
	// extra voters only while every voter is alive.
	alive := func(id string) bool {
		return id == v.Self || v.Members[id].Status == Alive
	}
	var voters, aliveVoters, aliveServers int
	var nonvoters []raft.Server
	for _, srv := range v.Conf.Servers {
		a := alive(string(srv.ID))
		if a {
			aliveServers++
		}
		if srv.Suffrage == raft.Voter {
			voters++
			if a {
				aliveVoters++
			}
		} else if a {
			nonvoters = append(nonvoters, srv)
		}
	}
	for id := range mem.NonvoterSince {
		if srv, ok := inConf[string(id)]; !ok || srv.Suffrage == raft.Voter {
			delete(mem.NonvoterSince, id)
		}
	}
	target := VoterTarget(aliveServers)
	if aliveVoters < target {
		sort.Slice(nonvoters, func(i, j int) bool { return nonvoters[i].ID < nonvoters[j].ID })
		for _, srv := range nonvoters {
			if !v.CaughtUp(srv) {
				delete(mem.NonvoterSince, srv.ID)
				continue
			}
			if !caughtUpFor(mem.NonvoterSince, srv.ID, v.Now, v.PromoteAfter) {
				continue
			}
			return ControlStep{Step: Step{Kind: Promote, Server: srv.ID, Address: srv.Address}, Voters: voters, Target: target}
		}
		return ControlStep{}
	}
	if voters > target && aliveVoters == voters {
		var victim raft.ServerID
		for _, srv := range v.Conf.Servers {
			if srv.Suffrage == raft.Voter && string(srv.ID) != v.Self && srv.ID > victim {
				victim = srv.ID
			}
		}
		if victim != "" {
			return ControlStep{Step: Step{Kind: Demote, Server: victim}, Voters: voters, Target: target}
		}
	}
	return ControlStep{}
}
