package cli

import (
	"context"
	"errors"
	"fmt"

	"github.com/kvnode/kvnode/client"
)

// Exit codes of the client commands: one per kind of answer a script may
// want to tell apart, from the API's status (rest-details.md).
const (
	ExitOK          = 0 // done
	ExitFailure     = 1 // anything else: the server failed (500), an unexpected answer
	ExitBadInput    = 2 // the command line, or a request the API refused as malformed (400, 405, 413, 414, 415)
	ExitNotFound    = 3 // no such region, key, query, function or index (404)
	ExitConflict    = 4 // it exists already, or a compare-and-set did not match (409)
	ExitDenied      = 5 // missing or wrong credentials, a missing permission, too many failed logins (401, 403, 429), a client certificate refused
	ExitUnavailable = 6 // no member reachable, no leader (503), or the request timed out
	ExitGone        = 7 // a watch's resume token is older than the history the cluster keeps (410)
)

// exitCodesHelp documents the exit codes in every client command's help.
const exitCodesHelp = `
Exit codes:
  0  done
  1  any other failure (the server failed: 500)
  2  bad input: the command line, or a request the API refused (400, 405, 413, 415)
  3  not found: region, key, query, function or index (404)
  4  conflict: it exists already, or the expected value did not match (409)
  5  denied: missing or wrong credentials, a missing permission (401, 403,
     429), a client certificate refused at the TLS handshake
  6  unavailable: no member reachable, no leader (503), or timed out
  7  gone: a watch's resume token is older than the history kept (410)
`

// usageError is a command line the command cannot run.
type usageError struct{ err error }

func (e *usageError) Error() string { return e.err.Error() }
func (e *usageError) Unwrap() error { return e.err }

// Usage marks err as the command line's fault (exit code 2): cmd/kvnode
// wraps cobra's own flag and argument errors with it.
func Usage(err error) error {
	if err == nil {
		return nil
	}
	return &usageError{err}
}

// usagef is a usage error with a message.
func usagef(format string, args ...any) error {
	return &usageError{fmt.Errorf(format, args...)}
}

// ExitCode is the process exit code for err, as the constants above say;
// an error with an ExitCode method chooses its own.
func ExitCode(err error) int {
	var usage *usageError
	var coded interface{ ExitCode() int }
	switch {
	case err == nil:
		return ExitOK
	case errors.As(err, &coded):
		return coded.ExitCode()
	case errors.As(err, &usage), errors.Is(err, client.ErrInvalid), errors.Is(err, client.ErrInvalidArgument):
		return ExitBadInput
	case errors.Is(err, client.ErrNotFound):
		return ExitNotFound
	case errors.Is(err, client.ErrConflict):
		return ExitConflict
	case errors.Is(err, client.ErrUnauthorized), errors.Is(err, client.ErrForbidden):
		return ExitDenied
	case errors.Is(err, client.ErrUnavailable), errors.Is(err, context.DeadlineExceeded):
		return ExitUnavailable
	case errors.Is(err, client.ErrGone):
		return ExitGone
	}
	return ExitFailure
}
