package kvrest

import (
	"context"
	"errors"
	"strings"

	"github.com/kvnode/kvnode/bench/kvbench"
	"github.com/kvnode/kvnode/client"
)

// OutcomeUnknown is the kind of error (kvbench.OpError.Kind) of a write
// the client could not tell the outcome of (client.ErrOutcomeUnknown: a
// 503 that does not certify that nothing was written, or an answer cut
// after the request left). It is not retried: it may have been applied.
const OutcomeUnknown = "outcome-unknown"

// opError is how kvbench counts an error of the client: the status of the
// member's answer ("503", "404", a put-if-absent's "409"), OutcomeUnknown,
// "timeout" or "transport" when no answer came (package kvbench's
// TransportError, which also says that a certificate refused is not worth
// asking again), or "invalid" for a call the client refused to send.
func opError(err error) error {
	var ae *client.Error
	switch {
	case err == nil:
		return nil
	case errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled):
		return kvbench.TransportError(err)
	case errors.Is(err, client.ErrOutcomeUnknown):
		return &kvbench.OpError{Kind: OutcomeUnknown, Err: err}
	case errors.As(err, &ae):
		cause := ae.Message
		if cause == "" && ae.Status >= 500 {
			cause = strings.TrimSpace(string(ae.Body))
		}
		return kvbench.StatusError(ae.Status, cause)
	case errors.Is(err, client.ErrInvalidArgument):
		return &kvbench.OpError{Kind: "invalid", Err: err}
	default:
		return kvbench.TransportError(err)
	}
}
