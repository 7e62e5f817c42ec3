package raftgroup

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/hashicorp/raft"

	"github.com/kvnode/kvnode/fsm/codec"
	"github.com/kvnode/kvnode/region"
)

// ErrBadCommand: a command that does not decode. It is refused before it
// reaches the log; the sender has a bug (or another format).
var ErrBadCommand = errors.New("malformed command")

// Apply appends data on this member, which must be the group's leader,
// and returns the state machine's result once the entry is committed and
// applied here. It is the only way into a Raft log (besides the batcher,
// which packs commands that passed here), so it decodes every command
// first, whichever path brought it: a committed entry that does not
// decode would halt every replica of the group that applies it
// (fsm.Halted). Commands over stageAbove travel staged (stage.go), entry
// commands are batched (batch.go).
func (g *Group) Apply(ctx context.Context, data []byte) (*codec.Result, error) {
	op, err := codec.CheckCommand(data)
	if err != nil {
		return nil, fmt.Errorf("group %d: %w: refused before it entered the log: %v", g.id, ErrBadCommand, err)
	}
	timeout := InternalTimeout
	if dl, ok := ctx.Deadline(); ok {
		timeout = time.Until(dl)
		if timeout <= 0 {
			return nil, ContextError(ctx, "apply", nil)
		}
	}
	if len(data) > stageAbove {
		return g.applyStaged(ctx, data, timeout)
	}
	if op.Batchable() {
		return g.batch.apply(ctx, data)
	}
	f := g.raft.Apply(data, timeout)
	done := make(chan error, 1)
	go func() { done <- f.Error() }()
	select {
	case err := <-done:
		if err != nil {
			return nil, FromRaft(err)
		}
	case <-ctx.Done():
		return nil, fmt.Errorf("%w: %v while the entry was being committed", region.ErrIndeterminate, ctx.Err())
	}
	res, ok := f.Response().(*codec.Result)
	if !ok {
		return nil, fmt.Errorf("group %d: unexpected state machine response %T", g.id, f.Response())
	}
	return res, nil
}

// ReadIndex returns, on the leader, an index such that a replica whose
// state machine has applied it reflects every write acknowledged before
// the call (see ReadIndexer).
func (g *Group) ReadIndex(ctx context.Context) (uint64, error) {
	return g.reads.ReadIndex(ctx)
}

// FromRaft translates hashicorp/raft errors into the region vocabulary,
// keeping the original text. The translation encodes what the error says
// about the outcome of a write:
//   - not leader / transfer in progress / enqueue timeout: the entry was never
//     appended, so a retry on the right leader is safe;
//   - leadership lost, aborted by restore, shutdown: the entry may or may not
//     be committed, so the outcome is unknown.
func FromRaft(err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, raft.ErrNotLeader), errors.Is(err, raft.ErrLeadershipTransferInProgress):
		return fmt.Errorf("%w (%v)", region.ErrNotLeader, err)
	case errors.Is(err, raft.ErrEnqueueTimeout):
		return fmt.Errorf("%w (%v)", region.ErrNoLeader, err)
	case errors.Is(err, raft.ErrLeadershipLost), errors.Is(err, raft.ErrAbortedByRestore),
		errors.Is(err, raft.ErrRaftShutdown):
		return fmt.Errorf("%w (%v)", region.ErrIndeterminate, err)
	}
	return err
}

// ContextError turns the end of a request's context into the error clients
// see: a deadline while waiting for the cluster means it is unavailable
// right now. what names the wait; last is the error that kept it waiting.
func ContextError(ctx context.Context, what string, last error) error {
	if last != nil {
		return fmt.Errorf("%s: %w: gave up after %v (last error: %v)", what, region.ErrNoLeader, ctx.Err(), last)
	}
	return fmt.Errorf("%s: %w: %v", what, region.ErrNoLeader, ctx.Err())
}
