package raftgroup

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/hashicorp/raft"

	"github.com/kvnode/kvnode/fsm/codec"
	"github.com/kvnode/kvnode/region"
)

// stageAbove is the size over which a command is carried in chunks of
// codec.StageChunkBytes rather than as one Raft entry. Decoding an entry is
// quadratic in its size in hashicorp/raft's transport and raft-boltdb
// (fsm/stage.go says why); up to a few MiB that costs little.
const stageAbove = 4 * codec.StageChunkBytes

// stageWindow is how many chunks of a staged command may be appended
// before the first of them is applied (see applyStaged).
const stageWindow = 8

// applyStaged appends a large command as chunks followed by their commit
// (codec.StageCommand), on this node, the group's leader, and returns the
// commit's result: the command's. One staged command at a time per group:
// a second one would replace the first one's chunks. If the commit is
// known not to have been appended, the chunks are dropped again (best
// effort: the state machine also forgets them on its own).
func (g *Group) applyStaged(ctx context.Context, data []byte, timeout time.Duration) (*codec.Result, error) {
	select {
	case g.staging <- struct{}{}:
	case <-ctx.Done():
		return nil, ContextError(ctx, "wait for the group's previous large write", nil)
	}
	defer func() { <-g.staging }()

	id := rand.Uint64()
	entries := codec.StageCommand(id, data)
	// At most stageWindow chunks in flight: appended all at once, 100 MiB
	// of chunks went out as one AppendEntries and one fsync on every
	// member, and every other write of the group waited behind them (p99
	// over 1 s for small writes during a 100 MiB one). A window keeps the
	// pipeline busy and lets other writes in between.
	futures := make([]raft.ApplyFuture, 0, len(entries))
	for i, e := range entries {
		if i >= stageWindow {
			if err := g.awaitChunk(ctx, futures[i-stageWindow], id); err != nil {
				return nil, err
			}
		}
		futures = append(futures, g.raft.Apply(e, timeout)) // in order: one goroutine, one channel
	}
	commit := futures[len(futures)-1]
	done := make(chan error, 1)
	go func() { done <- commit.Error() }()
	select {
	case err := <-done:
		if err != nil {
			err = FromRaft(err)
			if !errors.Is(err, region.ErrIndeterminate) && g.IsLeader() {
				_ = g.raft.Apply(codec.DropStaged(id), time.Second)
			}
			return nil, err
		}
	case <-ctx.Done():
		return nil, fmt.Errorf("%w: %v while the entry was being committed", region.ErrIndeterminate, ctx.Err())
	}
	res, ok := commit.Response().(*codec.Result)
	if !ok {
		return nil, fmt.Errorf("group %d: unexpected state machine response %T", g.id, commit.Response())
	}
	return res, nil
}

// awaitChunk waits until chunk f of staged command id is applied. A chunk
// that fails, or a request that ends meanwhile, stops the command before
// its commit is appended: nothing of it is applied (the state machine
// forgets chunks without a commit), so the error says so, and a caller may
// send the write again.
func (g *Group) awaitChunk(ctx context.Context, f raft.ApplyFuture, id uint64) error {
	done := make(chan error, 1)
	go func() { done <- f.Error() }()
	var err error
	select {
	case err = <-done:
	case <-ctx.Done():
		err = ctx.Err()
	}
	if err == nil {
		return nil
	}
	if g.IsLeader() {
		_ = g.raft.Apply(codec.DropStaged(id), time.Second)
	}
	return fmt.Errorf("group %d: %w: a chunk of a large write was not committed (%v); nothing of it was written", g.id, region.ErrNoLeader, err)
}
