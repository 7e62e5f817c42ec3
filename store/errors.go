package store

import (
	"context"
	"errors"
	"fmt"

	"github.com/hashicorp/raft"

	"github.com/kvnode/kvnode/region"
	"github.com/kvnode/kvnode/store/transport"
)

// errNoAnswer marks a read RPC whose connection broke before the answer:
// harmless for a read, which may be tried again elsewhere.
var errNoAnswer = errors.New("no answer from node")

// raftErr translates hashicorp/raft errors into the region vocabulary, keeping
// the original text. The translation encodes what the error says about the
// outcome of a write:
//   - not leader / transfer in progress / enqueue timeout: the entry was never
//     appended, so a retry on the right leader is safe;
//   - leadership lost, aborted by restore, shutdown: the entry may or may not
//     be committed, so the outcome is unknown.
func raftErr(err error) error {
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

// retryableWrite reports whether a write that failed with err certainly did
// not take effect and may be sent again.
func retryableWrite(err error) bool {
	return errors.Is(err, region.ErrNotLeader) || errors.Is(err, region.ErrNoLeader) ||
		errors.Is(err, transport.ErrUnreachable)
}

// retryableRead reports whether a read barrier that failed with err may be
// tried again: reads change nothing, so any leadership trouble qualifies.
func retryableRead(err error) bool {
	return retryableWrite(err) || errors.Is(err, region.ErrIndeterminate) || errors.Is(err, errNoAnswer) ||
		errors.Is(err, errLagging)
}

// ctxErr turns the end of a request's context into the error clients see: a
// deadline while waiting for the cluster means it is unavailable right now.
func ctxErr(ctx context.Context, what string, last error) error {
	if last != nil {
		return fmt.Errorf("%s: %w: gave up after %v (last error: %v)", what, region.ErrNoLeader, ctx.Err(), last)
	}
	return fmt.Errorf("%s: %w: %v", what, region.ErrNoLeader, ctx.Err())
}
