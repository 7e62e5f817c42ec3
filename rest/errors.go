package rest

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"

	"github.com/labstack/echo/v4"

	"github.com/kvnode/kvnode/auth"
	"github.com/kvnode/kvnode/function"
	"github.com/kvnode/kvnode/region"
	"github.com/kvnode/kvnode/rest/middleware"
	"github.com/kvnode/kvnode/rest/routing"
	"github.com/kvnode/kvnode/rest/watch"
)

// errorStatus is one row of the error → HTTP status table.
type errorStatus struct {
	matches func(error) bool
	status  int
}

// is matches err wrapping target.
func is(target error) func(error) bool {
	return func(err error) bool { return errors.Is(err, target) }
}

// as matches err wrapping an error of type T.
func as[T error]() func(error) bool {
	return func(err error) bool {
		var t T
		return errors.As(err, &t)
	}
}

// errorStatuses is THE table mapping errors to statuses; the first matching
// row wins and an error no row matches is a 500. Conflicts (409 for an
// existing key or a CAS mismatch) are listed for completeness: their
// handlers answer them with the current value as the body before this table
// is consulted, so the table applies only when no value came with them.
func errorStatuses() []errorStatus {
	return []errorStatus{
		{is(auth.ErrUnauthenticated), http.StatusUnauthorized},
		{is(auth.ErrForbidden), http.StatusForbidden},
		{is(auth.ErrThrottled), http.StatusTooManyRequests},
		{as[*queryError](), http.StatusInternalServerError},
		{as[*functionError](), http.StatusInternalServerError},
		{is(function.ErrUnknownFunction), http.StatusNotFound},
		{is(function.ErrUnknownTarget), http.StatusNotFound},
		{is(region.ErrInvalid), http.StatusBadRequest},
		{is(region.ErrKeyAbsent), http.StatusBadRequest},
		{is(region.ErrRegionNotFound), http.StatusNotFound},
		{is(region.ErrKeyNotFound), http.StatusNotFound},
		{is(region.ErrKeyExists), http.StatusConflict},
		{is(region.ErrCASMismatch), http.StatusConflict},
		{is(region.ErrRegionExists), http.StatusConflict},
		{is(region.ErrMemberNotFound), http.StatusNotFound},
		{is(region.ErrMemberAlive), http.StatusConflict},
		{is(region.ErrUpgradeInProgress), http.StatusConflict},
		{is(region.ErrNotSupported), http.StatusMethodNotAllowed},
		{as[*http.MaxBytesError](), http.StatusRequestEntityTooLarge},
		{is(region.ErrTooLarge), http.StatusRequestEntityTooLarge},
		{is(errUnsupportedMediaType), http.StatusUnsupportedMediaType},
		{is(middleware.ErrUnsupportedEncoding), http.StatusUnsupportedMediaType},
		{is(region.ErrNoLeader), http.StatusServiceUnavailable},
		{is(region.ErrWrongGroup), http.StatusServiceUnavailable},
		{is(watch.ErrTooManyWatchers), http.StatusServiceUnavailable},
		{is(region.ErrNotLeader), http.StatusServiceUnavailable},
		{is(region.ErrIndeterminate), http.StatusServiceUnavailable},
		{is(context.DeadlineExceeded), http.StatusServiceUnavailable},
	}
}

// statusOf maps err to its HTTP status through errorStatuses; the router's
// own errors (no route, wrong method) keep their status.
func statusOf(err error) int {
	for _, row := range errorStatuses() {
		if row.matches(err) {
			return row.status
		}
	}
	var he *echo.HTTPError
	if errors.As(err, &he) {
		return he.Code
	}
	return http.StatusInternalServerError
}

// causeOf is the message of an error answer: the chain of wrapped messages,
// or for the router's errors a sentence naming what was asked.
func causeOf(err error, c echo.Context) string {
	var he *echo.HTTPError
	if !errors.As(err, &he) {
		return err.Error()
	}
	req := c.Request()
	switch he.Code {
	case http.StatusNotFound:
		return fmt.Sprintf("no resource at %s %s", req.Method, req.URL.EscapedPath())
	case http.StatusMethodNotAllowed:
		return fmt.Sprintf("method %s is not allowed on %s", req.Method, req.URL.EscapedPath())
	}
	if msg, ok := he.Message.(string); ok {
		return msg
	}
	return http.StatusText(he.Code)
}

// statusClientClosedRequest is nginx's non-standard status for a request
// whose client went away before the answer.
const statusClientClosedRequest = 499

// clientGone reports whether err is the request's own context being
// canceled because the client disconnected (net/http cancels it when the
// connection closes). A context.Canceled from anything else, with the
// client still there, stays a server error.
func clientGone(err error, req *http.Request) bool {
	return errors.Is(err, context.Canceled) && errors.Is(req.Context().Err(), context.Canceled)
}

// handleError is Echo's HTTPErrorHandler: every error answer is
// {"cause":"..."} with the status from errorStatuses, plus Retry-After on
// 503 (the cluster may have a leader a moment later) and on 429 (when the
// client's failed-login window ends), and Allow on 405.
func (s *Server) handleError(err error, c echo.Context) {
	req := c.Request()
	if c.Response().Committed {
		s.log.Warn("error after the response was sent", "method", req.Method, "path", req.URL.EscapedPath(), "error", err, requestID(c))
		return
	}
	if clientGone(err, req) {
		// Nobody is left to read an answer, and nothing failed on our side:
		// not a server error. The status is nginx's 499 (client closed
		// request), for the access log; the client never sees it.
		s.log.Debug("client disconnected before the answer", "method", req.Method, "path", req.URL.EscapedPath(), "error", err, requestID(c))
		c.Response().WriteHeader(statusClientClosedRequest)
		return
	}
	status := statusOf(err)
	h := c.Response().Header()
	switch status {
	case http.StatusUnauthorized:
		h.Set(echo.HeaderWWWAuthenticate, `Basic realm="kvnode"`)
	case http.StatusTooManyRequests:
		retry := "60" // the default failed-login window
		if te := (*auth.ThrottledError)(nil); errors.As(err, &te) {
			retry = strconv.Itoa(te.RetryAfterSeconds())
		}
		h.Set(headerRetryAfter, retry)
	case http.StatusServiceUnavailable:
		h.Set(headerRetryAfter, "1")
		routing.SetOutcome(h, err)
	case http.StatusMethodNotAllowed:
		// The router sets Allow for its own 405s; a handler's 405 (DELETE on
		// a partitioned region) allows the route's other methods.
		if h.Get(echo.HeaderAllow) == "" {
			h.Set(echo.HeaderAllow, s.allowHeader(c.Path(), req.Method))
		}
	}
	if status >= 500 {
		s.log.Warn("request failed", "method", req.Method, "path", req.URL.EscapedPath(), "status", status, "error", err, requestID(c))
	}
	if werr := writeDoc(c, status, struct {
		Cause string `json:"cause"`
	}{causeOf(err, c)}); werr != nil {
		s.log.Debug("writing the error answer failed", "error", werr)
	}
}
