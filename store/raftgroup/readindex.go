package raftgroup

import (
	"context"
	"fmt"
	"sync"

	"github.com/hashicorp/raft"

	"github.com/kvnode/kvnode/region"
)

// ReadIndexer serves the leader's half of linearizable reads (Raft §6.4,
// "read index"): it records the index the leader's state machine has applied,
// confirms leadership with a quorum heartbeat, and hands the index back.
// Readers on the leader then read at once; readers on followers wait until
// their own state machine has applied that index.
//
// Leadership is confirmed by asking every voter for its term with requests
// sent after the index was recorded (ConfirmFunc), not with
// raft.VerifyLeader: hashicorp/raft counts any successful AppendEntries
// answer that arrives after VerifyLeader was called as a vote, including
// answers to requests sent before it. A leader paused (SIGSTOP, a VM
// stall) while such a request was in flight wakes up, finds the old
// term's "success" waiting in its socket, and confirms a leadership it
// lost seconds ago: the chaos pause-leader runs caught it serving a value
// overwritten under the new leader (docs/chaos.md).
//
// Concurrent reads share rounds: a round collects every reader that arrived
// while the previous round was in flight, so one quorum heartbeat serves many
// reads. A reader never joins a round that has already recorded its index,
// because the index must be taken after the read began.
type ReadIndexer struct {
	g       *Group
	confirm ConfirmFunc

	mu       sync.Mutex
	pending  *readRound // the round that new readers join; not yet started
	inflight bool
}

type readRound struct {
	done  chan struct{}
	index uint64
	err   error
}

// ConfirmFunc returns nil when a quorum of g's voters, asked after the
// call began, are in term at most term: then no leader of a later term
// can have been elected before the call (terms only grow, and any two
// quorums share a voter), so no write newer than the leader's could have
// been acknowledged before it.
type ConfirmFunc func(g *Group, term uint64) error

// NewReadIndexer returns the read-index machinery of g with confirm as its
// leadership check. Every group has its own (Group.ReadIndex); a test may
// run another over the same group with a different check.
func NewReadIndexer(g *Group, confirm ConfirmFunc) *ReadIndexer {
	return &ReadIndexer{g: g, confirm: confirm}
}

// ReadIndex returns an index such that a replica whose FSM has applied it
// reflects every write acknowledged before the call.
func (ri *ReadIndexer) ReadIndex(ctx context.Context) (uint64, error) {
	ri.mu.Lock()
	if ri.pending == nil {
		ri.pending = &readRound{done: make(chan struct{})}
	}
	r := ri.pending
	if !ri.inflight {
		ri.inflight = true
		ri.pending = nil
		go ri.run(r)
	}
	ri.mu.Unlock()
	select {
	case <-r.done:
		return r.index, r.err
	case <-ctx.Done():
		return 0, fmt.Errorf("read index: %w", ctx.Err())
	}
}

// run executes r and then every round that gathered readers meanwhile.
func (ri *ReadIndexer) run(r *readRound) {
	for r != nil {
		r.index, r.err = ri.round()
		close(r.done)
		ri.mu.Lock()
		r = ri.pending
		ri.pending = nil
		if r == nil {
			ri.inflight = false
		}
		ri.mu.Unlock()
	}
}

// round performs one read-index round on the leader.
func (ri *ReadIndexer) round() (uint64, error) {
	g := ri.g
	term := g.raft.CurrentTerm()
	if g.raft.State() != raft.Leader {
		return 0, region.ErrNotLeader
	}
	if g.readyTerm.Load() != term {
		// A new leader may not yet have applied entries that earlier leaders
		// committed (and acknowledged). A barrier in this term fixes that.
		if err := g.raft.Barrier(InternalTimeout).Error(); err != nil {
			return 0, fmt.Errorf("read barrier: %w", FromRaft(err))
		}
		g.readyTerm.Store(term)
	}
	// Every write acknowledged so far has been applied here (the leader
	// acknowledges only after applying), so this index covers them all.
	index := g.fsm.AppliedIndex()
	if err := ri.confirm(g, term); err != nil {
		return 0, fmt.Errorf("confirm leadership: %w", err)
	}
	if g.raft.CurrentTerm() != term {
		return 0, fmt.Errorf("term changed during read: %w", region.ErrNotLeader)
	}
	return index, nil
}
