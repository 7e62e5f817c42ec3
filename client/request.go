package client

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/kvnode/kvnode/client/internal/transport"
)

// request is one call of the API.
type request struct {
	method string
	path   string // escaped, from the API's root: /kv/v1/...
	query  url.Values
	body   []byte // sent as JSON when not nil
	header http.Header
	// idempotent: sending it twice leaves what sending it once does, and
	// its answer means the same (reads, puts, listings): it may be sent
	// again whatever happened to an earlier try.
	idempotent bool
	// region and key, with toLeader, route it to the key's group leader.
	region, key string
	toLeader    bool
	// stream: a 2xx answer's body is handed over open, not read.
	stream bool
}

// response is a 2xx answer.
type response struct {
	status int
	header http.Header
	body   []byte        // read whole, unless the request streams
	stream io.ReadCloser // the open body of a streamed request
	member string        // the base URL that answered
}

// Header names of the single-hop contract (package rest/routing on the
// members' side).
const (
	headerRoute       = "Kvnode-Route"
	headerHops        = "Kvnode-Hops"
	headerOutcome     = "Kvnode-Outcome"
	outcomeNotApplied = "not-applied"
)

// do sends r and returns its 2xx answer, or the error; see the package
// doc for what is retried.
func (c *Client) do(ctx context.Context, r *request) (*response, error) {
	var target string
	var version uint64
	if r.toLeader && c.route != nil {
		target, version = c.route.Leader(r.region, r.key)
	}
	deadline := time.Now().Add(c.cfg.RetryFor)
	var refused []error
	untrusted := 0 // refusals in a row over the member's certificate
	for attempt := 0; ; attempt++ {
		m := c.pick(target, attempt)
		c.requests.Add(1)
		routed := target != "" && m.base == target
		if routed {
			c.routed.Add(1)
		}
		resp, err := c.send(ctx, m, r, version)
		if err == nil {
			if routed && forwarded(resp.header) {
				c.forwarded.Add(1)
			}
			record(ctx, resp)
			return resp, nil
		}
		if ctx.Err() != nil {
			return nil, ended(r, err)
		}
		var ns *transport.NotSentError
		var ae *Error
		var cr *certRefusedError
		switch {
		case errors.As(err, &cr):
			return nil, cr
		case errors.As(err, &ns):
			m.skipUntil.Store(time.Now().Add(c.cfg.SkipFor).UnixNano())
			refused = append(refused, fmt.Errorf("%s: %w", m.base, ns.Err))
			if target != "" {
				c.route.Stale() // the leader we knew is gone
				target = ""
			}
			if untrusted++; !transport.Untrusted(ns.Err) {
				untrusted = 0
			}
			if n := len(c.snapshot()); len(refused)%n == 0 {
				// A certificate no member's verified will not verify later: no wait.
				if untrusted >= n || !pause(ctx, deadline, attempt/n) {
					return nil, &unreachableError{attempts: refused}
				}
			}
		case errors.As(err, &ae) && ae.Status == http.StatusServiceUnavailable:
			if !r.idempotent && !ae.notApplied() {
				ae.unknown = true
				return nil, ae
			}
			if target != "" {
				c.route.Stale()
				target = ""
			}
			if !pause(ctx, deadline, attempt) {
				return nil, ae
			}
		case errors.As(err, &ae):
			return nil, ae
		default:
			// Sent, and no answer came back whole: the leader we aimed at
			// may be gone, whatever becomes of this request.
			if target != "" {
				c.route.Stale()
				target = ""
			}
			if !r.idempotent {
				return nil, fmt.Errorf("%w: %w", ErrOutcomeUnknown, err)
			}
			if !pause(ctx, deadline, attempt) {
				return nil, err
			}
		}
	}
}

// ended is the error of r's last try when ctx ended: a write sent and
// not answered in full, or answered an uncertified 503, is unknown.
func ended(r *request, err error) error {
	var ns *transport.NotSentError
	var ae *Error
	switch {
	case r.idempotent || errors.As(err, &ns):
		return err
	case errors.As(err, &ae):
		ae.unknown = ae.Status == http.StatusServiceUnavailable && !ae.notApplied()
		return ae
	}
	return fmt.Errorf("%w: %w", ErrOutcomeUnknown, err)
}

// forwarded reports whether an answer says that its member had to ask
// another one (Kvnode-Hops above 0).
func forwarded(h http.Header) bool {
	hops := h.Get(headerHops)
	return hops != "" && hops != "0"
}

// notApplied reports whether a 503 certified that nothing was written.
func (e *Error) notApplied() bool { return e.outcome == outcomeNotApplied }

// pause waits before the next try: 50 ms doubling to 1 s. False when the
// retries are over (deadline) or ctx ended.
func pause(ctx context.Context, deadline time.Time, n int) bool {
	d := 50 * time.Millisecond << min(n, 5)
	d = min(d, time.Second)
	if time.Now().Add(d).After(deadline) {
		return false
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}

// pick is the member for the attempt-th try: the key's leader first when
// known and not skipped, then the members in turn (each request starting
// at the next one, so that load spreads), passing over skipped ones unless
// every one is.
func (c *Client) pick(target string, attempt int) *member {
	if target != "" && attempt == 0 {
		m := c.member(target)
		if time.Now().UnixNano() >= m.skipUntil.Load() {
			return m
		}
	}
	ms := c.snapshot()
	start := c.next.Add(1) - 1 // a new client's first request goes to the first endpoint
	now := time.Now().UnixNano()
	for i := range ms {
		m := ms[(start+uint64(i))%uint64(len(ms))]
		if now >= m.skipUntil.Load() {
			return m
		}
	}
	return ms[start%uint64(len(ms))]
}

// send sends r to m once.
func (c *Client) send(ctx context.Context, m *member, r *request, version uint64) (*response, error) {
	u := m.base + r.path
	if len(r.query) > 0 {
		u += "?" + r.query.Encode()
	}
	var body io.Reader
	if r.body != nil {
		body = bytes.NewReader(r.body)
	}
	req, err := http.NewRequestWithContext(ctx, r.method, u, body)
	if err != nil {
		return nil, fmt.Errorf("%s %s: %w", r.method, r.path, err)
	}
	req.Header.Set("Accept", "application/json")
	if r.body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if c.auth != "" {
		req.Header.Set("Authorization", c.auth)
	}
	if version > 0 {
		req.Header.Set(headerRoute, strconv.FormatUint(version, 10))
	}
	for k, v := range r.header {
		req.Header[k] = v
	}
	resp, err := c.hc.Do(req)
	if err != nil {
		if transport.CertRefused(err) {
			return nil, &certRefusedError{member: m.base, err: err}
		}
		var ns *transport.NotSentError
		if errors.As(err, &ns) {
			return nil, ns
		}
		var op *net.OpError // a Config.Transport's failed dial
		if errors.As(err, &op) && op.Op == "dial" {
			return nil, &transport.NotSentError{Err: err}
		}
		return nil, fmt.Errorf("%s %s on %s: %w", r.method, r.path, m.base, err)
	}
	if version > 0 && forwarded(resp.Header) {
		c.route.Stale()
	}
	ok := resp.StatusCode >= 200 && resp.StatusCode <= 299
	if ok && r.stream {
		return &response{status: resp.StatusCode, header: resp.Header, stream: resp.Body, member: m.base}, nil
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, fmt.Errorf("%s %s on %s: reading the answer: %w", r.method, r.path, m.base, err)
	}
	if !ok {
		e := apiError(r.method, m.base+r.path, resp.StatusCode, data)
		e.outcome = resp.Header.Get(headerOutcome)
		if secs, err := strconv.Atoi(resp.Header.Get("Retry-After")); err == nil && secs > 0 {
			e.RetryAfter = time.Duration(secs) * time.Second
		}
		return nil, e
	}
	return &response{status: resp.StatusCode, header: resp.Header, body: data, member: m.base}, nil
}
