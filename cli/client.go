package cli

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// client sends requests to a kvnode cluster's REST API. Any member answers
// any request, so it tries the members' URLs in the order given and moves
// on only when one cannot be reached; once a request has been sent, its
// answer (whatever it is) is the answer, because sending a write twice is
// not always harmless (a put-if-absent would then conflict with itself).
type client struct {
	bases []*url.URL
	http  *http.Client
	// user and password are sent as HTTP Basic credentials when auth is set.
	user, password string
	auth           bool
	// cert is set when a client certificate is offered (--cert).
	cert bool
}

// clientOptions configure a client.
type clientOptions struct {
	URLs           []string // base URLs of members: http[s]://host:port (a bare host:port is http, or https with TLS options)
	User, Password string   // HTTP Basic credentials, when User is not empty
	TLS            *tls.Config
	Timeout        time.Duration // bound on each request, answer included; 0 means none
}

// dialTimeout bounds connecting to one member, so that a dead address
// (a black hole, not a refusal) moves on to the next URL quickly.
const dialTimeout = 5 * time.Second

// newClient checks the URLs and builds a client.
func newClient(o clientOptions) (*client, error) {
	if len(o.URLs) == 0 {
		return nil, usagef("no URL of a member: give --url or KVNODE_URL")
	}
	c := &client{user: o.User, password: o.Password, auth: o.User != "", cert: o.TLS != nil && len(o.TLS.Certificates) > 0}
	for _, raw := range o.URLs {
		u, err := parseBase(raw, o.TLS != nil)
		if err != nil {
			return nil, err
		}
		c.bases = append(c.bases, u)
	}
	dialer := &net.Dialer{Timeout: dialTimeout}
	tlsConfig := o.TLS
	if tlsConfig == nil {
		tlsConfig = &tls.Config{}
	}
	tlsDialer := &tls.Dialer{NetDialer: dialer, Config: tlsConfig}
	c.http = &http.Client{
		Timeout: o.Timeout,
		Transport: &http.Transport{
			// No proxy from the environment: the members are addressed as given.
			DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
				conn, err := dialer.DialContext(ctx, network, addr)
				return conn, connectFailed(err)
			},
			// TLS handshakes count as connecting: nothing was sent yet.
			DialTLSContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
				conn, err := tlsDialer.DialContext(ctx, network, addr)
				return conn, connectFailed(err)
			},
			MaxIdleConnsPerHost: 4,
			IdleConnTimeout:     30 * time.Second,
		},
		// A redirect is not part of this API; show it rather than follow it.
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
	return c, nil
}

// parseBase reads a member's base URL; a bare host:port gets http://, or
// https:// when TLS options were given.
func parseBase(raw string, tlsGiven bool) (*url.URL, error) {
	raw = strings.TrimSpace(raw)
	if !strings.Contains(raw, "://") {
		scheme := "http://"
		if tlsGiven {
			scheme = "https://"
		}
		raw = scheme + raw
	}
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" || (u.Scheme != "http" && u.Scheme != "https") || u.RawQuery != "" {
		return nil, usagef("--url %q: want a base URL such as http://localhost:8080", raw)
	}
	u.Path = strings.TrimSuffix(u.Path, "/")
	return u, nil
}

// connectError is a failure to connect to a member (DNS, refusal, dial
// timeout, TLS handshake): the request was not sent, so the next URL may
// be tried.
type connectError struct{ err error }

func (e *connectError) Error() string { return e.err.Error() }
func (e *connectError) Unwrap() error { return e.err }

func connectFailed(err error) error {
	if err == nil {
		return nil
	}
	return &connectError{err}
}

// request is one call of the API. Body, when not nil, is sent as JSON.
type request struct {
	Method string
	Path   string // /kv/v1/...; its segments already escaped
	Query  url.Values
	Body   []byte
	// Stream, when set, reads a 2xx answer's body as it arrives (a
	// backup) instead of it being read whole; Body is then empty.
	Stream func(h http.Header, body io.Reader) error
	// Header adds to (or overrides) the request's headers: a watch's
	// Accept and Last-Event-ID.
	Header http.Header
}

// response is a 2xx answer, read whole.
type response struct {
	Status int
	Header http.Header
	Body   []byte
}

// do sends req to the first member that can be reached and returns its
// answer; an answer outside 2xx is an *APIError.
func (c *client) do(ctx context.Context, req request) (*response, error) {
	var attempts []error
	for _, base := range c.bases {
		resp, err := c.send(ctx, base, req)
		var ce *connectError
		if errors.As(err, &ce) && ctx.Err() == nil {
			attempts = append(attempts, fmt.Errorf("%s: %w", base.Redacted(), ce.err))
			continue
		}
		return resp, err
	}
	return nil, &unreachableError{attempts: attempts}
}

// send sends req to one member.
func (c *client) send(ctx context.Context, base *url.URL, req request) (*response, error) {
	u := *base
	u.RawPath = base.EscapedPath() + req.Path
	u.Path, _ = url.PathUnescape(u.RawPath)
	u.RawQuery = req.Query.Encode()
	var body io.Reader
	if req.Body != nil {
		body = bytes.NewReader(req.Body)
	}
	hreq, err := http.NewRequestWithContext(ctx, req.Method, u.String(), body)
	if err != nil {
		return nil, fmt.Errorf("%s %s: %w", req.Method, req.Path, err)
	}
	hreq.Header.Set("Accept", "application/json")
	if req.Stream != nil {
		hreq.Header.Set("Accept", "application/octet-stream, application/json")
	}
	if req.Body != nil {
		hreq.Header.Set("Content-Type", "application/json")
	}
	for k, v := range req.Header {
		hreq.Header[k] = v
	}
	if c.auth {
		hreq.SetBasicAuth(c.user, c.password)
	}
	hresp, err := c.http.Do(hreq)
	if err != nil {
		if refused := handshakeRefused(err, c.cert); refused != nil {
			return nil, refused
		}
		var ce *connectError
		if errors.As(err, &ce) {
			return nil, ce
		}
		return nil, fmt.Errorf("%s %s on %s: %w", req.Method, req.Path, base.Redacted(), err)
	}
	defer hresp.Body.Close()
	if req.Stream != nil && hresp.StatusCode >= 200 && hresp.StatusCode <= 299 {
		if err := req.Stream(hresp.Header, hresp.Body); err != nil {
			return nil, fmt.Errorf("%s %s on %s: %w", req.Method, req.Path, base.Redacted(), err)
		}
		return &response{Status: hresp.StatusCode, Header: hresp.Header}, nil
	}
	data, err := io.ReadAll(hresp.Body)
	if err != nil {
		return nil, fmt.Errorf("%s %s on %s: reading the answer: %w", req.Method, req.Path, base.Redacted(), err)
	}
	if hresp.StatusCode < 200 || hresp.StatusCode > 299 {
		e := &APIError{
			Method: req.Method, Path: req.Path, Status: hresp.StatusCode,
			Cause: causeOf(data), Body: data, RetryAfter: hresp.Header.Get("Retry-After"),
		}
		if e.Status == http.StatusUnauthorized && !c.auth && !c.cert {
			e.Cause += " (no credentials were sent: give --user with --password-file, or KVNODE_USER and KVNODE_PASSWORD)"
		}
		return nil, e
	}
	return &response{Status: hresp.StatusCode, Header: hresp.Header, Body: data}, nil
}

// causeOf is the cause of an error answer, {"cause": "..."}; "" for any
// other body (a conflict's body is the current value).
func causeOf(body []byte) string {
	var doc struct {
		Cause *string `json:"cause"`
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields() // a stored value may have a "cause" member too
	if err := dec.Decode(&doc); err != nil || doc.Cause == nil {
		return ""
	}
	return *doc.Cause
}
