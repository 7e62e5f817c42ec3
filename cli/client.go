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

// This file is the HTTP client the commands not yet on package client
// use; it goes when they are.

// legacyClient sends requests to a kvnode cluster's REST API. Any member answers
// any request, so it tries the members' URLs in the order given and moves
// on only when one cannot be reached; once a request has been sent, its
// answer (whatever it is) is the answer, because sending a write twice is
// not always harmless (a put-if-absent would then conflict with itself).
type legacyClient struct {
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

// options is the legacy client's options from the flags.
func (f *connFlags) options() (clientOptions, error) {
	cfg, err := f.config()
	return clientOptions{URLs: cfg.Endpoints, User: cfg.Username, Password: cfg.Password, TLS: cfg.TLS, Timeout: f.timeout}, err
}

// newClient checks the URLs and builds a client.
func newClient(o clientOptions) (*legacyClient, error) {
	if len(o.URLs) == 0 {
		return nil, usagef("no URL of a member: give --url or KVNODE_URL")
	}
	c := &legacyClient{user: o.User, password: o.Password, auth: o.User != "", cert: o.TLS != nil && len(o.TLS.Certificates) > 0}
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
func (c *legacyClient) do(ctx context.Context, req request) (*response, error) {
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
func (c *legacyClient) send(ctx context.Context, base *url.URL, req request) (*response, error) {
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

// legacyDeniedError is a refusal that came before any answer: a member refused
// the TLS handshake, as one that requires a client certificate
// (--client-cert-auth) refuses a client without one it accepts.
type legacyDeniedError struct{ err error }

func (e *legacyDeniedError) Error() string { return e.err.Error() }
func (e *legacyDeniedError) Unwrap() error { return e.err }
func (*legacyDeniedError) ExitCode() int   { return ExitDenied }

// handshakeRefused is err as a legacyDeniedError when it is a TLS alert about
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
	return &legacyDeniedError{fmt.Errorf("the member refused the TLS handshake (%w): %s", err, hint)}
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

// ExitCode is e's exit code, from its status.
func (e *APIError) ExitCode() int { return statusExitCode(e.Status) }

// ExitCode: no member reachable.
func (e *unreachableError) ExitCode() int { return ExitUnavailable }
