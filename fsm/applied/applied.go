// Package applied is a state machine's applied index, with a way to wait
// for it to advance without polling: many readers (read-index reads,
// followers catching up) wait on it at once, and applying entries
// allocates nothing while nobody waits.
//
// It imports nothing of kvnode.
package applied

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
)

// Index is the Raft index of the last entry a state machine has seen. The
// zero value is index 0. Its methods are safe for concurrent use.
type Index struct {
	index atomic.Uint64

	mu sync.Mutex
	// advanced is closed (and cleared) by the next Set. It is nil while
	// nobody waits.
	advanced chan struct{}
}

// Load is the index.
func (a *Index) Load() uint64 { return a.index.Load() }

// Set records index and wakes every waiter. A restore may move it
// backwards.
func (a *Index) Set(index uint64) {
	a.index.Store(index)
	a.mu.Lock()
	if a.advanced != nil {
		close(a.advanced)
		a.advanced = nil
	}
	a.mu.Unlock()
}

// Wait blocks until the index is at least index, ctx ends, or stopped is
// closed (then it returns stopErr()).
func (a *Index) Wait(ctx context.Context, index uint64, stopped <-chan struct{}, stopErr func() error) error {
	for {
		// Read the index under mu: Set stores before it takes mu, so either
		// we see the new index or the channel we get is closed by that Set.
		a.mu.Lock()
		cur := a.index.Load()
		if cur >= index {
			a.mu.Unlock()
			return nil
		}
		if a.advanced == nil {
			a.advanced = make(chan struct{})
		}
		ch := a.advanced
		a.mu.Unlock()

		select {
		case <-ch:
		case <-stopped:
			if a.index.Load() >= index {
				return nil
			}
			return stopErr()
		case <-ctx.Done():
			return fmt.Errorf("fsm: waiting for applied index %d (at %d): %w", index, a.index.Load(), ctx.Err())
		}
	}
}
