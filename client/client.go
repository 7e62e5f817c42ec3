package client

import (
	"crypto/tls"
	"encoding/base64"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/kvnode/kvnode/client/internal/route"
	"github.com/kvnode/kvnode/client/internal/transport"
)

// Config says where the cluster is and how to reach it. Only Endpoints is
// required.
type Config struct {
	// Endpoints are base URLs of members: http://host:port or
	// https://host:port. A bare host:port is http, or https when TLS is
	// set. More members are learned from the routing document; these are
	// the ones asked first.
	Endpoints []string
	// Username and Password are sent as HTTP Basic credentials when
	// Username is not empty.
	Username, Password string
	// TLS configures https: the CAs to trust (RootCAs) and a client
	// certificate (Certificates), whose common name is the user for members
	// started with --client-cert-auth.
	TLS *tls.Config
	// DialTimeout bounds connecting to one member, so that an address that
	// does not answer moves on to the next member (default 5 s).
	DialTimeout time.Duration
	// RetryFor bounds how long a request that may be sent again keeps
	// being retried while no member can serve it (default 15 s); the
	// context's deadline, when sooner, wins. A negative RetryFor sends
	// each request once, for a program with a retry policy of its own (a
	// load generator counting every refusal): a 503 or a broken answer is
	// returned at once; a refused connection still moves on to the next
	// member, which cannot have applied anything.
	RetryFor time.Duration
	// SkipFor is how long a member that could not be reached is skipped
	// before it is tried again (default 5 s).
	SkipFor time.Duration
	// DisableSingleHop sends every request to the members in turn instead
	// of to its key's leader.
	DisableSingleHop bool
	// MaxIdleConnsPerMember is how many idle connections are kept to each
	// member for reuse (default 64): set it to the number of requests a
	// program sends at once.
	MaxIdleConnsPerMember int
	// DisableCompression asks for answers as they are: without it the
	// client accepts gzip, which members use for answers of 1 KiB or more
	// (listings, query results) and the client undoes. Set it where the
	// network is fast and CPU dear (a load generator on the members'
	// machine).
	DisableCompression bool
	// Transport, when set, carries every request instead of the client's
	// own (TLS, DialTimeout and MaxIdleConnsPerMember are then its
	// business; a failed dial must be a *net.OpError "dial", as
	// net/http's is); for tests and instrumentation.
	Transport http.RoundTripper
}

// Client is a connection to a kvnode cluster, safe for concurrent use by
// any number of goroutines. Make one per cluster and share it.
type Client struct {
	cfg  Config
	hc   *http.Client
	auth string // the Authorization header, or ""

	// members are the configured endpoints, in order, then members
	// learned from the routing document; byBase finds them.
	mu      sync.Mutex
	members []*member
	byBase  map[string]*member
	next    atomic.Uint64 // where the next request's turn starts

	route *route.Router // nil with DisableSingleHop

	// The counts of Stats.
	requests, routed, forwarded atomic.Int64
}

// Stats counts what a client sent since it was made: how much of its
// traffic single hop takes straight to a leader. Take two and subtract
// for an interval.
type Stats struct {
	// Requests counts every request sent to a member, each try of one.
	Requests int64
	// Routed counts the requests sent to their key's group leader as the
	// routing document named it (single hop); 0 with DisableSingleHop.
	Routed int64
	// Forwarded counts the routed requests answered by a member that had
	// to ask another one all the same (Kvnode-Hops above 0: the document
	// was out of date, and is read again).
	Forwarded int64
}

// Stats returns the counts so far.
func (c *Client) Stats() Stats {
	return Stats{Requests: c.requests.Load(), Routed: c.routed.Load(), Forwarded: c.forwarded.Load()}
}

// member is one member's base URL and when it may be tried again.
type member struct {
	base      string
	skipUntil atomic.Int64 // unix nanoseconds
}

// Defaults of Config.
const (
	defaultDialTimeout = 5 * time.Second
	defaultRetryFor    = 15 * time.Second
	defaultSkipFor     = 5 * time.Second
	defaultIdleConns   = 64
)

// New checks cfg and makes a client. It does not connect: the first
// request does.
func New(cfg Config) (*Client, error) {
	if len(cfg.Endpoints) == 0 {
		return nil, errors.New("client: no endpoint: give the base URL of at least one member")
	}
	if cfg.DialTimeout <= 0 {
		cfg.DialTimeout = defaultDialTimeout
	}
	if cfg.RetryFor == 0 {
		cfg.RetryFor = defaultRetryFor
	}
	if cfg.SkipFor <= 0 {
		cfg.SkipFor = defaultSkipFor
	}
	if cfg.MaxIdleConnsPerMember <= 0 {
		cfg.MaxIdleConnsPerMember = defaultIdleConns
	}
	c := &Client{cfg: cfg, byBase: map[string]*member{}}
	for _, raw := range cfg.Endpoints {
		base, err := ParseBase(raw, cfg.TLS != nil)
		if err != nil {
			return nil, err
		}
		c.member(base)
	}
	if cfg.Username != "" {
		c.auth = "Basic " + base64.StdEncoding.EncodeToString([]byte(cfg.Username+":"+cfg.Password))
	}
	rt := cfg.Transport
	if rt == nil {
		rt = transport.New(transport.Options{DialTimeout: cfg.DialTimeout, TLS: cfg.TLS,
			MaxIdleConnsPerHost: cfg.MaxIdleConnsPerMember, DisableCompression: cfg.DisableCompression})
	}
	c.hc = &http.Client{
		Transport: rt,
		// A redirect is not part of this API: it is answered, not followed.
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
	if !cfg.DisableSingleHop {
		c.route = newRouter(c)
	}
	return c, nil
}

// Close releases the idle connections. Requests in flight finish.
func (c *Client) Close() error {
	c.hc.CloseIdleConnections()
	return nil
}

// ParseBase reads a member's base URL as Config.Endpoints takes it and
// returns it without a trailing slash; a bare host:port gets http://, or
// https:// when tlsGiven.
func ParseBase(raw string, tlsGiven bool) (string, error) {
	raw = strings.TrimSpace(raw)
	if !strings.Contains(raw, "://") {
		scheme := "http://"
		if tlsGiven {
			scheme = "https://"
		}
		raw = scheme + raw
	}
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" || (u.Scheme != "http" && u.Scheme != "https") || u.RawQuery != "" || u.Fragment != "" || u.User != nil {
		return "", fmt.Errorf("client: endpoint %q: want a base URL such as http://localhost:8080", raw)
	}
	return strings.TrimSuffix(u.String(), "/"), nil
}

// member returns the member at base, adding it when new.
func (c *Client) member(base string) *member {
	c.mu.Lock()
	defer c.mu.Unlock()
	if m, ok := c.byBase[base]; ok {
		return m
	}
	m := &member{base: base}
	c.byBase[base] = m
	c.members = append(c.members, m)
	return m
}

// snapshot is the members as they are now.
func (c *Client) snapshot() []*member {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.members
}
