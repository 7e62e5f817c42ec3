package raftgroup

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/hashicorp/raft"

	"github.com/kvnode/kvnode/fsm"
	"github.com/kvnode/kvnode/fsm/codec"
	"github.com/kvnode/kvnode/region"
)

// stageAbove is the size over which a command is carried in chunks of
// fsm.StageChunkBytes rather than as one Raft entry. Decoding an entry is
// quadratic in its size in hashicorp/raft's transport and raft-boltdb
// (fsm/stage.go says why); up to a few MiB that costs little.
const stageAbove = 4 * fsm.StageChunkBytes

// applyStaged appends a large command as chunks followed by their commit
// (fsm.StageCommand), on this node, the group's leader, and returns the
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
	var commit raft.ApplyFuture
	for _, e := range fsm.StageCommand(id, data) {
		commit = g.raft.Apply(e, timeout) // in order: one goroutine, one channel
	}
	done := make(chan error, 1)
	go func() { done <- commit.Error() }()
	select {
	case err := <-done:
		if err != nil {
			err = FromRaft(err)
			if !errors.Is(err, region.ErrIndeterminate) && g.IsLeader() {
				_ = g.raft.Apply(fsm.DropStaged(id), time.Second)
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
