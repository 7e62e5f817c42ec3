package cli

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strings"
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

// APIError is an answer of the API outside 2xx: its status, the cause the
// body gave ({"cause": ...}), and the body itself, which for a conflict is
// the current value.
type APIError struct {
	Method string
	Path   string
	Status int
	Cause  string
	Body   []byte
	// RetryAfter is the Retry-After header of a 503 or 429, if any.
	RetryAfter string
}

func (e *APIError) Error() string {
	msg := fmt.Sprintf("%s %s: %d %s", e.Method, e.Path, e.Status, http.StatusText(e.Status))
	if e.Cause != "" {
		msg += ": " + e.Cause
	}
	if e.RetryAfter != "" {
		msg += " (retry after " + e.RetryAfter + "s)"
	}
	return msg
}

// deniedError is a refusal that came before any answer: a member refused
// the TLS handshake, as one that requires a client certificate
// (--client-cert-auth) refuses a client without one it accepts.
type deniedError struct{ err error }

func (e *deniedError) Error() string { return e.err.Error() }
func (e *deniedError) Unwrap() error { return e.err }
func (*deniedError) ExitCode() int   { return ExitDenied }

// handshakeRefused is err as a deniedError when it is a TLS alert about
// this client's certificate that the member sent (under TLS 1.3 a refused
// client certificate is only heard of when the request is sent), else
// nil. Nothing reached the API, and every member asks the same, so no
// other member is tried.
func handshakeRefused(err error, certSent bool) error {
	var op *net.OpError
	if !errors.As(err, &op) || op.Op != "remote error" || !strings.Contains(op.Err.Error(), "certificate") {
		return nil
	}
	hint := "give --cert and --key (or KVNODE_CERT and KVNODE_KEY) of a certificate its client CA signed"
	if certSent {
		hint = "the member does not accept the certificate of --cert (another CA's, expired, or not for client use?)"
	}
	return &deniedError{fmt.Errorf("the member refused the TLS handshake (%w): %s", err, hint)}
}

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

// unreachableError is every URL failing before a request could be sent.
type unreachableError struct{ attempts []error }

func (e *unreachableError) Error() string {
	parts := make([]string, len(e.attempts))
	for i, err := range e.attempts {
		parts[i] = err.Error()
	}
	return "no member reachable: " + strings.Join(parts, "; ")
}

func (e *unreachableError) Unwrap() []error { return e.attempts }

// ExitCode is the process exit code for err, as the constants above say;
// an error with an ExitCode method chooses its own.
func ExitCode(err error) int {
	var api *APIError
	var usage *usageError
	var unreachable *unreachableError
	var coded interface{ ExitCode() int }
	switch {
	case err == nil:
		return ExitOK
	case errors.As(err, &coded):
		return coded.ExitCode()
	case errors.As(err, &api):
		return statusExitCode(api.Status)
	case errors.As(err, &usage):
		return ExitBadInput
	case errors.As(err, &unreachable), errors.Is(err, context.DeadlineExceeded):
		return ExitUnavailable
	}
	return ExitFailure
}

// statusExitCode maps an HTTP status outside 2xx to an exit code.
func statusExitCode(status int) int {
	switch status {
	case http.StatusBadRequest, http.StatusMethodNotAllowed, http.StatusRequestEntityTooLarge,
		http.StatusRequestURITooLong, http.StatusUnsupportedMediaType:
		return ExitBadInput
	case http.StatusNotFound:
		return ExitNotFound
	case http.StatusConflict:
		return ExitConflict
	case http.StatusUnauthorized, http.StatusForbidden, http.StatusTooManyRequests:
		return ExitDenied
	case http.StatusServiceUnavailable, http.StatusGatewayTimeout:
		return ExitUnavailable
	case http.StatusGone:
		return ExitGone
	}
	return ExitFailure
}
