package kvrest

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync/atomic"

	"github.com/kvnode/kvnode/bench/kvbench"
)

// transport sends the requests of every client: one HTTP client with
// enough idle connections for all of them, the credentials, and the choice
// of endpoint.
type transport struct {
	hc        *http.Client
	endpoints []string
	auth      string // the Authorization header, or ""
	// leaders, under --route leader, maps keys to their leader's URL.
	leaders atomic.Pointer[leaderMap]
	// routed counts requests sent to a leader the map named.
	routed atomic.Int64
}

// newTransport builds the HTTP client for up to conns requests in flight.
func newTransport(cfg *kvbench.Config, conns int) (*transport, error) {
	tr, err := kvbench.ClientTransport(cfg, conns)
	if err != nil {
		return nil, err
	}
	return &transport{hc: &http.Client{Transport: tr, Timeout: cfg.Timeout}, endpoints: cfg.Endpoints, auth: cfg.Authorization()}, nil
}

// close drops the idle connections.
func (t *transport) close() { t.hc.CloseIdleConnections() }

// endpoint is the base URL for r, the n-th request of client c: its key's
// leader when the leader map knows it, else the endpoints in turn (each
// client starting at its own, so that one client alone spreads too).
func (t *transport) endpoint(r request, c int, n uint64) string {
	if m := t.leaders.Load(); m != nil && r.key != "" {
		if u := m.leaderOf(r.key); u != "" {
			t.routed.Add(1)
			return u
		}
	}
	return t.endpoints[(uint64(c)+n)%uint64(len(t.endpoints))]
}

// answer is what a member answered.
type answer struct {
	status int
	body   []byte // only when the request asked to keep it
	header http.Header
}

// send sends r to base and reads the answer whole (the body of a success
// is dropped unless r.keep), so that the connection can be used again.
func (t *transport) send(ctx context.Context, base string, r request) (answer, error) {
	var body io.Reader
	if r.body != nil {
		body = bytes.NewReader(r.body)
	}
	req, err := http.NewRequestWithContext(ctx, r.method, base+r.path, body)
	if err != nil {
		return answer{}, err
	}
	req.Header.Set("Accept", "application/json")
	if r.body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if t.auth != "" {
		req.Header.Set("Authorization", t.auth)
	}
	resp, err := t.hc.Do(req)
	if err != nil {
		return answer{}, err
	}
	defer resp.Body.Close()
	a := answer{status: resp.StatusCode, header: resp.Header}
	if r.keep || resp.StatusCode >= 300 { // a refusal's body says why
		a.body, err = io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	} else {
		_, err = io.Copy(io.Discard, resp.Body)
	}
	return a, err
}

// apiError is an unexpected answer during a run's setup.
type apiError struct {
	what   string
	status int
	cause  string
}

func (e *apiError) Error() string {
	return fmt.Sprintf("%s: %d %s", e.what, e.status, e.cause)
}

// unexpected makes an apiError of a.
func unexpected(what string, a answer) error {
	return &apiError{what: what, status: a.status, cause: causeOf(a)}
}

// causeOf is what a said of itself: the API's {"cause":...}, the body, or
// the status's text.
func causeOf(a answer) string {
	var doc struct {
		Cause string `json:"cause"`
	}
	cause := strings.TrimSpace(string(a.body))
	if json.Unmarshal(a.body, &doc) == nil && doc.Cause != "" {
		cause = doc.Cause
	}
	if cause == "" {
		cause = http.StatusText(a.status)
	}
	return cause
}
