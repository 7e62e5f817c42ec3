package client

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
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
	// ErrUnauthorized: no credentials, or wrong ones (401).
	ErrUnauthorized = errors.New("unauthorized")
	// ErrForbidden: the user lacks the permission (403).
	ErrForbidden = errors.New("forbidden")
	// ErrInvalid: the request was refused as malformed (400, 413, 415).
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
		return e.Status == http.StatusUnauthorized
	case ErrForbidden:
		return e.Status == http.StatusForbidden
	case ErrInvalid:
		return e.Status == http.StatusBadRequest || e.Status == http.StatusRequestEntityTooLarge || e.Status == http.StatusUnsupportedMediaType
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
	e := &Error{Method: method, URL: url, Status: status, Body: body, Message: causeOf(body)}
	if status == http.StatusConflict && e.Message == "" && json.Valid(body) {
		e.Current = json.RawMessage(body)
	}
	return e
}

// causeOf is the cause of an error answer, {"cause": "..."}; "" for any
// other body (a conflict's body is the current value, which may have a
// "cause" member of its own among others).
func causeOf(body []byte) string {
	var doc struct {
		Cause *string `json:"cause"`
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&doc); err != nil || doc.Cause == nil {
		return ""
	}
	return *doc.Cause
}

// unreachableError is every member refusing the connection.
type unreachableError struct{ attempts []error }

func (e *unreachableError) Error() string {
	return fmt.Sprintf("no member could be reached: %v", errors.Join(e.attempts...))
}

func (e *unreachableError) Is(target error) bool { return target == ErrUnavailable }

func (e *unreachableError) Unwrap() []error { return e.attempts }
