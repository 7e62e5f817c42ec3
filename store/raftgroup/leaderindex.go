package raftgroup

import (
	"context"
	"sync"
)

// A follower's linearizable read needs the leader's read index: one RPC to
// the leader per read made that RPC the largest cost of reads sent to
// followers (64 concurrent readers over three members: two thirds of the
// reads, each an HTTP request and answer on two members). The reads a
// follower serves at the same moment share one: a round asks the leader,
// and every read that arrived before the round began may use its answer,
// since the leader took its index after receiving the request. A read
// that arrives while a round is in flight joins the next one, never the
// one under way (whose index may predate the read).

// indexRounds coalesces a follower's requests for its leader's read index.
type indexRounds struct {
	mu      sync.Mutex
	pending *indexRound // the round that new reads join
	busy    bool        // a round is in flight
}

type indexRound struct {
	done  chan struct{}
	index uint64
	err   error
}

// LeaderIndex returns, on a follower, the read index of the group's
// leader for a read that began before the call: ask asks the leader (the
// store's RPC), once for every read waiting at that moment. A round is
// bounded by the internal timeout, not by any one reader's deadline: a
// reader that gives up must not fail the others.
func (g *Group) LeaderIndex(ctx context.Context, ask func(context.Context) (uint64, error)) (uint64, error) {
	ir := &g.rounds
	ir.mu.Lock()
	r := ir.pending
	if r == nil {
		r = &indexRound{done: make(chan struct{})}
		ir.pending = r
	}
	if !ir.busy {
		ir.busy = true
		ir.pending = nil
		go ir.run(r, ask)
	}
	ir.mu.Unlock()
	select {
	case <-r.done:
		return r.index, r.err
	case <-ctx.Done():
		return 0, ContextError(ctx, "wait for the leader's read index", nil)
	}
}

// run performs r and then every round that gathered reads meanwhile.
func (ir *indexRounds) run(r *indexRound, ask func(context.Context) (uint64, error)) {
	for r != nil {
		ctx, cancel := context.WithTimeout(context.Background(), InternalTimeout)
		r.index, r.err = ask(ctx)
		cancel()
		close(r.done)
		ir.mu.Lock()
		r = ir.pending
		ir.pending = nil
		if r == nil {
			ir.busy = false
		}
		ir.mu.Unlock()
	}
}
