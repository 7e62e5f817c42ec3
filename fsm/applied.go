package fsm

import (
	"context"
)

// AppliedIndex is the Raft index of the last log entry this FSM has seen:
// a LogCommand or LogConfiguration entry, or the index a restored snapshot
// was taken at. hashicorp/raft does not hand no-op and barrier entries to
// the FSM, so this may trail Raft's commit index; it is identical on every
// replica for the same log prefix, which is what read-index compares.
func (f *FSM) AppliedIndex() uint64 { return f.applied.Load() }

// WaitApplied blocks until AppliedIndex() >= index or ctx ends; then it
// returns an error wrapping ctx.Err(). It returns the HaltError at once when
// the state machine has halted (see Halted) short of index.
func (f *FSM) WaitApplied(ctx context.Context, index uint64) error {
	return f.applied.Wait(ctx, index, f.stopped, f.Halted)
}
