package raftgroup

import (
	"github.com/hashicorp/raft"

	"github.com/kvnode/kvnode/fsm"
)

// Status describes one Raft group as this member sees it. Members send
// each other their groups' Status (the store's status RPC); operators see
// it in /management/v1.
type Status struct {
	ID           uint64 `json:"id"`
	State        string `json:"state"`
	Leader       string `json:"leader"`
	Term         uint64 `json:"term"`
	AppliedIndex uint64 `json:"appliedIndex"`
	LastIndex    uint64 `json:"lastIndex"`
	CommitIndex  uint64 `json:"commitIndex"`
	HasState     bool   `json:"hasState"`
	// The latest Raft configuration this node knows, and the index of its
	// entry: committed once CommitIndex has reached ConfigIndex.
	Voters      []string `json:"voters"`
	NonVoters   []string `json:"nonVoters"`
	ConfigIndex uint64   `json:"configIndex"`
}

// Status describes the group as this member sees it.
func (g *Group) Status() Status {
	leader, _ := g.Leader()
	gs := Status{
		ID:           g.id,
		State:        g.raft.State().String(),
		Leader:       leader,
		Term:         g.raft.CurrentTerm(),
		AppliedIndex: g.fsm.AppliedIndex(),
		LastIndex:    g.raft.LastIndex(),
		CommitIndex:  g.raft.CommitIndex(),
		HasState:     g.HasState(),
		Voters:       []string{},
		NonVoters:    []string{},
	}
	f := g.raft.GetConfiguration()
	if f.Error() == nil {
		gs.ConfigIndex = f.Index()
		for _, srv := range f.Configuration().Servers {
			if srv.Suffrage == raft.Voter {
				gs.Voters = append(gs.Voters, string(srv.ID))
			} else {
				gs.NonVoters = append(gs.NonVoters, string(srv.ID))
			}
		}
	}
	return gs
}

// ID is the group's ID (0: the control group).
func (g *Group) ID() uint64 { return g.id }

// FSM is the group's state machine on this member: reads go to it once a
// read barrier allows (the store's read path).
func (g *Group) FSM() *fsm.FSM { return g.fsm }

// Raft is the group's Raft instance, for membership changes (bootstrap,
// add, promote, remove, transfer: the store's reconcilers) and tests.
// Commands go through Apply, never straight to Raft.
func (g *Group) Raft() *raft.Raft { return g.raft }

// FirstIndex is the first entry still in the group's log: it grows when a
// snapshot compacts the log.
func (g *Group) FirstIndex() (uint64, error) { return g.log.FirstIndex() }
