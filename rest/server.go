package rest

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/kvnode/kvnode/auth"
	"github.com/kvnode/kvnode/function"
	"github.com/kvnode/kvnode/rest/middleware"
	"github.com/kvnode/kvnode/rest/operations"
	"github.com/kvnode/kvnode/rest/routing"
	"github.com/kvnode/kvnode/rest/watch"
)

// Defaults for the zero Config.
const (
	DefaultRequestTimeout = 10 * time.Second
	DefaultMaxBodyBytes   = 16 << 20
	DefaultMaxQueryTime   = 30 * time.Second
	DefaultMaxQueryRows   = 100_000
)

// Config tunes the REST server. The zero value is usable.
type Config struct {
	RequestTimeout time.Duration // server-side deadline put on every request's context; default 10s
	MaxBodyBytes   int64         // default 16 MiB; larger bodies → 413
	// MaxQueryTime bounds a query's execution (instead of RequestTimeout);
	// past it the query is cancelled and answers 500. Default 30s.
	MaxQueryTime time.Duration
	// MaxQueryRows caps a query's result; a larger one answers 500.
	// Default 100,000.
	MaxQueryRows int
	// Auth, when set, turns security on: credentials and Geode-style
	// permissions on every request but the probes and static pages.
	Auth *auth.Authenticator
	// ClientCertAuth says the listener's TLS handshake requires a client
	// certificate and verifies it (node's --client-cert-auth): a request
	// without Basic credentials is then its certificate's common name.
	ClientCertAuth bool
	// Functions runs server-side functions; nil answers 404 on their paths.
	Functions Functions
	// FunctionTimeout bounds a function call (instead of RequestTimeout).
	// Default 30s.
	FunctionTimeout time.Duration
	// CORSOrigins lets browser pages from these origins call the API
	// (scheme://host[:port] each, or "*" for any; see
	// ValidateCORSOrigins). Empty, the default, keeps cross-origin access
	// off.
	CORSOrigins []string
	Logger      *slog.Logger
	// Metrics serves GET /metrics (the node's registry; package metrics,
	// wired by node): CLUSTER:READ with security on. Nil answers 404.
	Metrics http.Handler
	// Observer, when set, is told how every routed request ended and of
	// every refused login (package metrics implements it).
	Observer Observer
	// Backup answers GET /management/v1/backup (node, store/backup); nil: 404.
	Backup func(w http.ResponseWriter, r *http.Request) error
	// RemoveMember answers DELETE /management/v1/members/{name} (store's
	// RemoveMember); nil: 404.
	RemoveMember func(ctx context.Context, name string) error
	// Rebalances runs Geode's rebalance operations and grows the
	// partition groups (package rest/operations); nil: 404.
	Rebalances operations.Rebalances
	// Routing answers GET /management/v1/routing (package routing); nil: 404.
	Routing func(ctx context.Context) (routing.Document, error)
	// Watch tunes GET /kv/v1/watch (package watch). Its Compile, when
	// nil, is oql's continuous queries (continuousQuery).
	Watch watch.Config
}

// Observer is told what the server does, for its metrics. Its methods run
// on every request: they must be cheap and safe for concurrent use.
type Observer interface {
	// ObserveRequest: a request answered status after elapsed. route is
	// the route template that served it ("/kv/v1/:region/:keys", never
	// the path the client sent), empty when no route matched.
	ObserveRequest(route, method string, status int, elapsed time.Duration)
	// LoginFailed: credentials were refused, for reason (auth.Login's
	// Refusal: bad_credentials, throttled, unknown_certificate_user).
	LoginFailed(reason string)
}

// ValidateCORSOrigins checks Config.CORSOrigins: each is "*" or an origin
// as browsers send it, scheme://host[:port].
func ValidateCORSOrigins(origins []string) error {
	return middleware.ValidateOrigins(origins)
}

// Server is the HTTP API of one node. It holds no state of its own beyond
// its configuration and the routing table built by New, so it is safe for
// concurrent use and several can live in one process.
type Server struct {
	cfg     Config
	log     *slog.Logger
	store   Store
	members Members
	cluster ClusterInfo
	watches *watch.Handler
	echo    *echo.Echo
	// allow maps a route path (as Echo names it, e.g. "/kv/v1/:region") to the
	// methods registered on it, for the Allow header of 405 answers that a
	// handler decides (DELETE on a partitioned region) rather than the router.
	allow map[string][]string
}

// New builds the server over store, members and cluster. members may be nil
// on a node without gossip (GET /servers then answers an empty list), and
// cluster may be nil (GET /management/v1/cluster then answers 404).
func New(cfg Config, store Store, members Members, cluster ClusterInfo) *Server {
	if cfg.RequestTimeout <= 0 {
		cfg.RequestTimeout = DefaultRequestTimeout
	}
	if cfg.MaxBodyBytes <= 0 {
		cfg.MaxBodyBytes = DefaultMaxBodyBytes
	}
	if cfg.MaxQueryTime <= 0 {
		cfg.MaxQueryTime = DefaultMaxQueryTime
	}
	if cfg.MaxQueryRows <= 0 {
		cfg.MaxQueryRows = DefaultMaxQueryRows
	}
	if cfg.FunctionTimeout <= 0 {
		cfg.FunctionTimeout = function.DefaultTimeout
	}
	cfg.Watch.OpenTimeout = cfg.RequestTimeout // a named query's read before the stream
	if cfg.Watch.Compile == nil {
		cfg.Watch.Compile = continuousQuery(store)
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	e := echo.New()
	e.HideBanner = true
	e.HidePort = true
	s := &Server{
		cfg:     cfg,
		log:     cfg.Logger,
		store:   store,
		members: members,
		cluster: cluster,
		watches: watch.New(cfg.Watch, store, store),
		echo:    e,
		allow:   map[string][]string{},
	}
	e.HTTPErrorHandler = s.handleError
	// Before routing: the request's ID first, so that every answer has
	// it; CORS before anything that can answer, so that a page can read
	// every answer, errors included; then the URL as the router sees it.
	e.Pre(middleware.RequestID())
	if len(cfg.CORSOrigins) > 0 {
		e.Pre(middleware.CORS(cfg.CORSOrigins))
	}
	e.Pre(limitURL, middleware.AliasPrefix(geodePrefix, kvPrefix), routeOnEscapedPath)
	// After routing: the client's URL back for everything that reads it;
	// compression around everything that writes an answer; request bodies
	// decoded only for authenticated requests.
	e.Use(middleware.RestoreAliasedURL, middleware.Compress(), s.accessLog, middleware.Recover(s.log), s.authenticate, middleware.Decompress(), s.deadline, routing.CountHops)
	s.routes()
	return s
}

// MaxURLBytes is the longest request target (path and query) served; a
// longer one is 414. It leaves room for a query of oql.MaxQueryLength
// encoded in ?q=.
const MaxURLBytes = 96 << 10

// limitURL refuses request targets longer than MaxURLBytes with 414.
func limitURL(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		if n := len(c.Request().RequestURI); n > MaxURLBytes {
			return writeDoc(c, http.StatusRequestURITooLong, struct {
				Cause string `json:"cause"`
			}{fmt.Sprintf("the request URL is %d bytes long; at most %d are accepted", n, MaxURLBytes)})
		}
		return next(c)
	}
}

// Handler returns the Echo instance; the caller owns the http.Server.
func (s *Server) Handler() http.Handler { return s.echo }

// routeOnEscapedPath makes Echo route on the escaped path. Echo matches
// r.URL.RawPath when it is set and r.URL.Path otherwise, and Go sets RawPath
// only when the client's escaping differs from the default one. Without this,
// a key "a/b" sent as a%2Fb would be split into two segments, and a key
// "100%" sent as 100%25 would reach the handler already decoded, so decoding
// it again would fail. Always routing on the escaped form and decoding each
// parameter exactly once (pathParam) gives one rule for every key.
func routeOnEscapedPath(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		u := c.Request().URL
		u.RawPath = u.EscapedPath()
		return next(c)
	}
}

// deadline puts the server-side deadline on every request, so that no
// request waits forever on a cluster without a leader.
func (s *Server) deadline(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		timeout := s.cfg.RequestTimeout
		switch c.Path() {
		case kvPrefix + "/queries/adhoc", kvPrefix + "/queries/:id":
			// Running a query has its own limit (--max-query-time).
			if c.Request().Method != http.MethodDelete && c.Request().Method != http.MethodPut {
				timeout = s.cfg.MaxQueryTime
			}
		case kvPrefix + "/functions/:id":
			// And so has running a function (--function-timeout).
			timeout = s.cfg.FunctionTimeout
		case kvPrefix + "/watch":
			return next(c) // a stream lasts as long as its client (package watch)
		}
		req := c.Request()
		ctx, cancel := context.WithTimeout(req.Context(), timeout)
		defer cancel()
		c.SetRequest(req.WithContext(ctx))
		// The error handler runs after this returns, when ctx is canceled
		// whatever happened: give it the client's own context, which tells
		// whether the client went away.
		defer c.SetRequest(req)
		return next(c)
	}
}

// accessLog logs every request at debug level and tells the Observer. It
// answers errors itself (through the error handler) so that the logged
// status is the one sent.
func (s *Server) accessLog(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		start := time.Now()
		if err := next(c); err != nil {
			c.Error(err)
		}
		req := c.Request()
		if s.cfg.Observer != nil {
			s.cfg.Observer.ObserveRequest(c.Path(), req.Method, c.Response().Status, time.Since(start))
		}
		if s.log.Enabled(req.Context(), slog.LevelDebug) {
			s.log.LogAttrs(req.Context(), slog.LevelDebug, "request",
				slog.String("method", req.Method),
				slog.String("path", req.URL.EscapedPath()),
				slog.Int("status", c.Response().Status),
				slog.Int64("bytes", c.Response().Size),
				slog.Duration("duration", time.Since(start)),
				slog.String("remote", req.RemoteAddr),
				requestID(c))
		}
		return nil
	}
}

// requestID is the attribute that ends every log line a request causes:
// its ID (X-Request-ID), so that a client's report can be found in the
// logs.
func requestID(c echo.Context) slog.Attr {
	return slog.String("request_id", middleware.RequestIDOf(c))
}
