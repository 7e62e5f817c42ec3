package store

import (
	"errors"

	"github.com/kvnode/kvnode/region"
	"github.com/kvnode/kvnode/store/transport"
)

// errNoAnswer marks a read RPC whose connection broke before the answer:
// harmless for a read, which may be tried again elsewhere.
var errNoAnswer = errors.New("no answer from node")

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
