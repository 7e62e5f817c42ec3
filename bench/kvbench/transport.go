package kvbench

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"sync/atomic"
	"time"
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
func newTransport(cfg *Config, conns int) (*transport, error) {
	tr, err := ClientTransport(cfg, conns)
	if err != nil {
		return nil, err
	}
	return &transport{hc: &http.Client{Transport: tr, Timeout: cfg.Timeout}, endpoints: cfg.Endpoints, auth: cfg.Authorization()}, nil
}

// ClientTransport is the HTTP transport of cfg's clients (its TLS files,
// no proxy, no compression), keeping up to conns idle connections per
// member. Package watchbench builds its streams and writes on it too.
func ClientTransport(cfg *Config, conns int) (*http.Transport, error) {
	tlsCfg, err := loadTLS(cfg)
	if err != nil {
		return nil, err
	}
	perHost := max(conns, 2)
	return &http.Transport{
		Proxy:               nil, // a benchmark measures the cluster, not a proxy
		DialContext:         (&net.Dialer{Timeout: 5 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
		TLSClientConfig:     tlsCfg,
		TLSHandshakeTimeout: 5 * time.Second,
		MaxIdleConns:        perHost * (len(cfg.Endpoints) + 2),
		MaxIdleConnsPerHost: perHost,
		IdleConnTimeout:     90 * time.Second,
		DisableCompression:  true,
	}, nil
}

// Authorization is the Authorization header of cfg's credentials (HTTP
// Basic), or "" without a user.
func (c *Config) Authorization() string {
	if c.User == "" {
		return ""
	}
	return "Basic " + base64.StdEncoding.EncodeToString([]byte(c.User+":"+c.Password))
}

// close drops the idle connections.
func (t *transport) close() { t.hc.CloseIdleConnections() }

// loadTLS is the client's TLS configuration from the files cfg names, or
// nil when it names none (plain http, or https with the system's roots).
func loadTLS(cfg *Config) (*tls.Config, error) {
	if cfg.CACert == "" && cfg.Cert == "" && !cfg.Insecure {
		return nil, nil
	}
	// InsecureSkipVerify only when asked for by its name.
	tc := &tls.Config{InsecureSkipVerify: cfg.Insecure, MinVersion: tls.VersionTLS12}
	if cfg.CACert != "" {
		pem, err := os.ReadFile(cfg.CACert)
		if err != nil {
			return nil, fmt.Errorf("CA certificate: %w", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("CA certificate %s: no PEM certificate in it", cfg.CACert)
		}
		tc.RootCAs = pool
	}
	if cfg.Cert != "" {
		pair, err := tls.LoadX509KeyPair(cfg.Cert, cfg.Key)
		if err != nil {
			return nil, fmt.Errorf("client certificate: %w", err)
		}
		tc.Certificates = []tls.Certificate{pair}
	}
	return tc, nil
}

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

// send sends r to base and reads the answer whole (the body is dropped
// unless r.keep), so that the connection can be used again.
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
	if r.keep {
		a.body, err = io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	} else {
		_, err = io.Copy(io.Discard, resp.Body)
	}
	return a, err
}

// errorKind names a failed request for the summary: its status code, or
// timeout, or transport (refused, reset, TLS) when no answer came.
func errorKind(a answer, err error) string {
	if err == nil {
		return fmt.Sprint(a.status)
	}
	var ne net.Error
	if errors.Is(err, context.DeadlineExceeded) || errors.As(err, &ne) && ne.Timeout() {
		return "timeout"
	}
	return "transport"
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

// unexpected makes an apiError of a, taking the cause from the API's
// {"cause":...} body when it has one.
func unexpected(what string, a answer) error {
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
	return &apiError{what: what, status: a.status, cause: cause}
}
