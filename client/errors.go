package client

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"time"

	"github.com/kvnode/kvnode/client/internal/transport"
	"github.com/kvnode/kvnode/client/internal/wire"
)

// Kinds of failure, for errors.Is.
var (
	// ErrNotFound: no such region, key, query, function, index or member
	// (404).
	ErrNotFound = errors.New("not found")
	// ErrConflict: the key exists (put-if-absent), holds another value
	// (compare-and-set), or the thing to create exists (409). The *Error's
	// Current holds the value found, when the answer carried one.
	ErrConflict = errors.New("conflict")
	// ErrUnauthorized: no credentials, or wrong ones (401), too many lately
	// (429), or a client certificate the member refused at the handshake.
	ErrUnauthorized = errors.New("unauthorized")
	// ErrForbidden: the user lacks the permission (403).
	ErrForbidden = errors.New("forbidden")
	// ErrInvalid: the request was refused as malformed or not allowed
	// (400, 405: say, clearing a partitioned region; 413, 414, 415).
	ErrInvalid = errors.New("invalid request")
	// ErrUnavailable: no member could serve the request (a refused
	// connection everywhere, or 503 until the retries ran out).
	ErrUnavailable = errors.New("unavailable")
	// ErrOutcomeUnknown: a write was sent and no answer says whether it
	// was applied (the connection broke, or a 503 that does not certify
	// that nothing was written). It was not sent again.
	ErrOutcomeUnknown = errors.New("outcome unknown: the write may or may not have been applied")
	// ErrGone: a watch's resume token is older than the change history
	// a member keeps (410); start again from a fresh read.
	ErrGone = errors.New("gone")
)

// Error is an answer outside 2xx.
type Error struct {
	// Method and URL of the request; Status of the answer.
	Method, URL string
	Status      int
	// Message is the API's cause ({"cause": ...}), or the status text.
	Message string
	// Current is the value a 409 answer carried: the entry's value that a
	// put-if-absent found, or that a compare-and-set did not expect.
	Current json.RawMessage
	// Body is the answer's body as it came.
	Body []byte
	// RetryAfter is the wait a 503 or 429 asked for (Retry-After), or 0.
	RetryAfter time.Duration
	// unknown marks a 503 to a write that may have been applied; outcome
	// is the answer's Kvnode-Outcome header.
	unknown bool
	outcome string
	// absent marks a 400 to a REPLACE or CAS whose key does not exist.
	absent bool
}

func (e *Error) Error() string {
	msg := e.Message
	if msg == "" {
		msg = http.StatusText(e.Status)
	}
	s := fmt.Sprintf("%s %s: %d: %s", e.Method, e.URL, e.Status, msg)
	if e.unknown {
		s += " (" + ErrOutcomeUnknown.Error() + ")"
	}
	return s
}

// Is maps the status to the kinds above.
func (e *Error) Is(target error) bool {
	switch target {
	case ErrNotFound:
		return e.Status == http.StatusNotFound || e.absent
	case ErrConflict:
		return e.Status == http.StatusConflict
	case ErrUnauthorized:
		return e.Status == http.StatusUnauthorized || e.Status == http.StatusTooManyRequests
	case ErrForbidden:
		return e.Status == http.StatusForbidden
	case ErrInvalid:
		return slices.Contains([]int{http.StatusBadRequest, http.StatusMethodNotAllowed, http.StatusRequestEntityTooLarge,
			http.StatusRequestURITooLong, http.StatusUnsupportedMediaType}, e.Status)
	case ErrUnavailable:
		return e.Status == http.StatusServiceUnavailable
	case ErrOutcomeUnknown:
		return e.unknown
	case ErrGone:
		return e.Status == http.StatusGone
	}
	return false
}

// apiError builds the *Error of an answer.
func apiError(method, url string, status int, body []byte) *Error {
	e := &Error{Method: method, URL: url, Status: status, Body: body, Message: wire.Cause(body)}
	if status == http.StatusConflict && e.Message == "" && json.Valid(body) {
		e.Current = json.RawMessage(body)
	}
	return e
}

// unreachableError is every member refusing the connection.
type unreachableError struct{ attempts []error }

func (e *unreachableError) Error() string {
	return fmt.Sprintf("no member reachable (%d tries): %s", len(e.attempts), transport.Distinct(e.attempts))
}

func (e *unreachableError) Is(target error) bool { return target == ErrUnavailable }

func (e *unreachableError) Unwrap() []error { return e.attempts }

// certRefusedError is a member refusing the TLS handshake over the
// client's certificate (transport.CertRefused): the request was not read,
// and every member would refuse it, so it is not sent again.
type certRefusedError struct {
	member string
	err    error
}

func (e *certRefusedError) Error() string {
	return fmt.Sprintf("%s refused the TLS handshake (%v): no client certificate, or one its client CA did not sign", e.member, e.err)
}
func (e *certRefusedError) Unwrap() error        { return e.err }
func (e *certRefusedError) Is(target error) bool { return target == ErrUnauthorized }
