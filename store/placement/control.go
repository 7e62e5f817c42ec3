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
}

// ControlMemory is what the control group's decisions remember between
// calls.
type ControlMemory struct {
	// NonvoterSince is when each non-voter was first seen caught up.
	NonvoterSince map[raft.ServerID]time.Time
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
}

// NextControlStep is the next membership change of the control group, at
// most one per call (Raft applies configuration changes one at a time),
// in this order: alive members missing from the configuration join as
// non-voters (in name order); a member that left goes at once, a failed
// one after DeadMemberTimeout, one gossip never heard of after
// DeadMemberTimeout counted from Started; then the voters move toward
// VoterTarget of the live members: caught-up live non-voters are promoted
// (in name order, each once caught up for PromoteAfter), and extra voters
// are demoted, the greatest name other than Self first, only while every
// voter is alive. Address fixes come before all of this and are the
// caller's. mem is updated.
func NextControlStep(v ControlView, mem *ControlMemory) ControlStep {
	if mem.NonvoterSince == nil {
		mem.NonvoterSince = map[raft.ServerID]time.Time{}
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
		if m.Status != Alive || m.InternalAddr == "" {
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
