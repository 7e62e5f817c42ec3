package store

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/hashicorp/raft"

	"github.com/kvnode/kvnode/region"
)

// readIndexer serves the leader's half of linearizable reads (Raft §6.4,
// "read index"): it records the index the leader's state machine has applied,
// confirms leadership with a quorum heartbeat, and hands the index back.
// Readers on the leader then read at once; readers on followers wait until
// their own state machine has applied that index.
//
// Concurrent reads share rounds: a round collects every reader that arrived
// while the previous round was in flight, so one quorum heartbeat serves many
// reads. A reader never joins a round that has already recorded its index,
// because the index must be taken after the read began.
type readIndexer struct {
	g *group

	mu       sync.Mutex
	pending  *readRound // the round that new readers join; not yet started
	inflight bool
}

type readRound struct {
	done  chan struct{}
	index uint64
	err   error
}

func newReadIndexer(g *group) *readIndexer { return &readIndexer{g: g} }

// readIndex returns an index such that a replica whose FSM has applied it
// reflects every write acknowledged before the call.
func (ri *readIndexer) readIndex(ctx context.Context) (uint64, error) {
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
func (ri *readIndexer) run(r *readRound) {
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
func (ri *readIndexer) round() (uint64, error) {
	g := ri.g
	term := g.raft.CurrentTerm()
	if g.raft.State() != raft.Leader {
		return 0, region.ErrNotLeader
	}
	if g.readyTerm.Load() != term {
		// A new leader may not yet have applied entries that earlier leaders
		// committed (and acknowledged). A barrier in this term fixes that.
		if err := g.raft.Barrier(10 * time.Second).Error(); err != nil {
			return 0, fmt.Errorf("read barrier: %w", raftErr(err))
		}
		g.readyTerm.Store(term)
	}
	// Every write acknowledged so far has been applied here (the leader
	// acknowledges only after applying), so this index covers them all.
	index := g.fsm.AppliedIndex()
	if err := g.raft.VerifyLeader().Error(); err != nil {
		return 0, fmt.Errorf("verify leadership: %w", raftErr(err))
	}
	if g.raft.CurrentTerm() != term {
		return 0, fmt.Errorf("term changed during read: %w", region.ErrNotLeader)
	}
	return index, nil
}
