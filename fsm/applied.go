package fsm

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
)

// appliedIndex is the Raft index of the last entry the FSM has seen, with a
// way to wait for it to advance without polling.
type appliedIndex struct {
	index atomic.Uint64

	mu sync.Mutex
	// advanced is closed (and cleared) by the next set. It is nil while
	// nobody waits, so applying entries allocates nothing for it.
	advanced chan struct{}
}

// set records index and wakes every waiter. Restore may move it backwards.
func (a *appliedIndex) set(index uint64) {
	a.index.Store(index)
	a.mu.Lock()
	if a.advanced != nil {
		close(a.advanced)
		a.advanced = nil
	}
	a.mu.Unlock()
}

// wait blocks until the index is at least index, ctx ends, or stopped is
// closed (then it returns stopErr()).
func (a *appliedIndex) wait(ctx context.Context, index uint64, stopped <-chan struct{}, stopErr func() error) error {
	for {
		// Read the index under mu: set stores before it takes mu, so either
		// we see the new index or the channel we get is closed by that set.
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

// AppliedIndex is the Raft index of the last log entry this FSM has seen:
// a LogCommand or LogConfiguration entry, or the index a restored snapshot
// was taken at. hashicorp/raft does not hand no-op and barrier entries to
// the FSM, so this may trail Raft's commit index; it is identical on every
// replica for the same log prefix, which is what read-index compares.
func (f *FSM) AppliedIndex() uint64 { return f.applied.index.Load() }

// WaitApplied blocks until AppliedIndex() >= index or ctx ends; then it
// returns an error wrapping ctx.Err(). It returns the HaltError at once when
// the state machine has halted (see Halted) short of index.
func (f *FSM) WaitApplied(ctx context.Context, index uint64) error {
	return f.applied.wait(ctx, index, f.stopped, f.Halted)
}
