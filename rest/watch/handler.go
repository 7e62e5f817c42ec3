package watch

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"time"

	"github.com/kvnode/kvnode/region"
	"github.com/kvnode/kvnode/rest/jsonout"
)

// Defaults for the zero Config.
const (
	DefaultMaxWatchers  = 10_000
	DefaultBuffer       = 4096
	DefaultKeepAlive    = 15 * time.Second
	DefaultWriteTimeout = 10 * time.Second
	DefaultOpenTimeout  = 10 * time.Second
)

// Config tunes the watches of one member. The zero value is usable.
type Config struct {
	// MaxWatchers is how many watches this member serves at once
	// (--max-watchers); past it a watch is refused with 503.
	MaxWatchers int
	// Buffer is how many events a watch may fall behind before it is
	// disconnected as a slow consumer (--watch-buffer;
	// region.WatchOptions.Buffer).
	Buffer int
	// KeepAlive is the longest silence of a stream (15 s).
	KeepAlive time.Duration
	// WriteTimeout bounds each write to a client (10 s; doc.go).
	WriteTimeout time.Duration
	// OpenTimeout bounds the reads before a stream that wait on the
	// cluster, such as a named query's (10 s; rest passes its request
	// timeout): a cluster without a leader is a 503, not a hang.
	OpenTimeout time.Duration
	// Compile turns a continuous query's text into its region and
	// Matcher; nil refuses q and query.
	Compile Compiler
	// Observer, when set, is told of streams and events (package metrics).
	Observer Observer
	Logger   *slog.Logger
}

// Source opens watches: the data API (store/regions). Watch returns
// region.ErrRegionNotFound, region.ErrInvalid (a bad token) and
// *region.GoneError (a token older than the history kept).
type Source interface {
	Watch(ctx context.Context, region string, opts region.WatchOptions) (region.Watch, error)
}

// Queries finds a named query's text (region.ErrKeyNotFound when unknown).
type Queries interface {
	NamedQuery(ctx context.Context, c region.Consistency, id string) (region.NamedQuery, error)
}

// Compiler compiles a continuous query: OQL text and its bind values into
// the region it reads (a name, no leading slash) and the test of one
// entry. A query a continuous query cannot evaluate entry by entry, a
// syntax error or bind values that do not fit wrap region.ErrInvalid.
type Compiler func(text string, binds []any) (regionName string, m Matcher, err error)

// Matcher tells whether one entry is in a continuous query's result.
type Matcher interface {
	Matches(key string, value json.RawMessage) (bool, error)
}

// Why a stream ended, as Observer.WatchClosed is told.
const (
	ReasonSlow            = "slow"             // fell more than Buffer events behind
	ReasonShutdown        = "shutdown"         // the member is shutting down
	ReasonRegionDestroyed = "region_destroyed" // the region was destroyed
	ReasonClient          = "client"           // the client went away or stopped reading
	ReasonError           = "error"            // the watch failed otherwise
)

// Observer is told what the watches do, for the node's metrics. Its
// methods must be cheap and safe for concurrent use.
type Observer interface {
	WatchOpened()              // a stream began (its 200 was sent)
	WatchClosed(reason string) // a stream ended, for one of the Reason* reasons
	EventsSent(n int)          // n change events (initial ones included) went to a client
}

// ErrTooManyWatchers: the member serves Config.MaxWatchers watches
// already (503, Retry-After).
var ErrTooManyWatchers = errors.New("this member serves as many watches as it may")

// Handler answers GET /kv/v1/watch. It is safe for concurrent use.
type Handler struct {
	cfg     Config
	log     *slog.Logger
	source  Source
	queries Queries
	// slots holds a token per open watch: a semaphore of MaxWatchers.
	slots chan struct{}
	// closing ends when Shutdown is called; every stream's context
	// ends with it.
	closing context.Context
	stop    context.CancelFunc
}

// New builds the handler over source and queries.
func New(cfg Config, source Source, queries Queries) *Handler {
	if cfg.MaxWatchers <= 0 {
		cfg.MaxWatchers = DefaultMaxWatchers
	}
	if cfg.Buffer <= 0 {
		cfg.Buffer = DefaultBuffer
	}
	if cfg.KeepAlive <= 0 {
		cfg.KeepAlive = DefaultKeepAlive
	}
	if cfg.WriteTimeout <= 0 {
		cfg.WriteTimeout = DefaultWriteTimeout
	}
	if cfg.OpenTimeout <= 0 {
		cfg.OpenTimeout = DefaultOpenTimeout
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	h := &Handler{cfg: cfg, log: cfg.Logger, source: source, queries: queries, slots: make(chan struct{}, cfg.MaxWatchers)}
	h.closing, h.stop = context.WithCancel(context.Background())
	return h
}

// Shutdown ends every stream, now and later, with an error event that
// carries its token (the member is going away); the handlers return. Call
// it when the HTTP server shuts down (http.Server.RegisterOnShutdown).
func (h *Handler) Shutdown() { h.stop() }

// Serve answers one watch. authorize checks that the client may read the
// watched region (401/403 errors). An error is returned only before the
// answer began, for the caller to answer as JSON; once the stream has
// begun, its end is an event and Serve returns nil.
func (h *Handler) Serve(w http.ResponseWriter, r *http.Request, authorize func(region string) error) error {
	req, err := parseRequest(r)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithCancel(r.Context())
	defer cancel()
	defer context.AfterFunc(h.closing, cancel)()
	name, cq, err := h.resolve(ctx, req)
	if err != nil {
		return err
	}
	if err := authorize(name); err != nil {
		return err
	}
	select {
	case h.slots <- struct{}{}:
		defer func() { <-h.slots }()
	default:
		return fmt.Errorf("%w: %d watches are open (--max-watchers); try again later or on another member", ErrTooManyWatchers, cap(h.slots))
	}
	if h.closing.Err() != nil {
		return errShuttingDown
	}

	out := newSSE(w, name, h.cfg.WriteTimeout, h.opened)
	f := newFilter(req, cq)
	opts := region.WatchOptions{From: req.from, Buffer: h.cfg.Buffer}
	if req.initial && req.from == "" {
		opts.Initial = func(key string, value json.RawMessage) error {
			if e, ok := f.apply(region.Event{Type: region.EventInitial, Key: key, Value: value}); ok {
				return out.event(e)
			}
			return nil
		}
	}
	wt, err := h.source.Watch(ctx, name, opts)
	if err != nil {
		if !out.started {
			return h.refuse(w, err)
		}
		h.finish(ctx, out, "", err)
		return nil
	}
	defer wt.Close()
	if out.ready(wt.Token()) != nil || out.flush() != nil {
		h.closed(out, ReasonClient)
		return nil
	}
	h.stream(ctx, out, f, wt)
	return nil
}

// resolve finds the watched region and, for q or query, compiles the
// continuous query.
func (h *Handler) resolve(ctx context.Context, req *request) (string, Matcher, error) {
	if !req.cq() {
		return req.region, nil, nil
	}
	if h.cfg.Compile == nil {
		return "", nil, fmt.Errorf("%w: continuous queries (q, query) are not served by this member", region.ErrInvalid)
	}
	if req.query != "" {
		qctx, cancel := context.WithTimeout(ctx, h.cfg.OpenTimeout)
		defer cancel()
		nq, err := h.queries.NamedQuery(qctx, region.Linearizable, req.query)
		if err != nil {
			return "", nil, fmt.Errorf("named query %q: %w", req.query, err)
		}
		req.text = nq.OQL
	}
	name, m, err := h.cfg.Compile(req.text, req.binds)
	if err != nil {
		return "", nil, err
	}
	if req.region != "" && req.region != name {
		return "", nil, fmt.Errorf("%w: region %q is not the region the query reads (%q); leave region out", region.ErrInvalid, req.region, name)
	}
	return name, m, nil
}

// errShuttingDown refuses watches once Shutdown was called (503).
var errShuttingDown = fmt.Errorf("%w: watches are not served any more", region.ErrShuttingDown)

// refuse answers an error of Watch before the stream began: a 410 with
// the oldest token here, anything else by the caller's error table.
func (h *Handler) refuse(w http.ResponseWriter, err error) error {
	var gone *region.GoneError
	if !errors.As(err, &gone) {
		if h.closing.Err() != nil && errors.Is(err, context.Canceled) {
			return errShuttingDown // Shutdown came while the watch opened
		}
		return err
	}
	body, merr := jsonout.Marshal(struct {
		Cause       string `json:"cause"`
		OldestToken string `json:"oldestToken"`
	}{err.Error(), gone.Oldest})
	if merr != nil {
		return merr
	}
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.WriteHeader(http.StatusGone)
	_, _ = w.Write(body) // a client gone now has nobody to tell
	return nil
}

// stream sends the watch's batches until it ends.
//
// Next waits under a deadline a keep-alive after the stream's last write,
// kept across calls until it passes: Next runs once per batch, and a
// context.WithTimeout for each was a noticeable share of a busy member's
// CPU. A deadline that passes after a later write is renewed, not sent.
func (h *Handler) stream(ctx context.Context, out *sse, f *filter, wt region.Watch) {
	quiet := &quietDeadline{parent: ctx}
	defer quiet.stop()
	for {
		qctx := quiet.get(out.lastWrite.Add(h.cfg.KeepAlive))
		batch, err := wt.Next(qctx)
		// The keep-alive's own deadline, not a failure wrapping a timeout.
		silent := errors.Is(qctx.Err(), context.DeadlineExceeded)
		if err != nil && ctx.Err() == nil && silent && errors.Is(err, context.DeadlineExceeded) {
			if time.Since(out.lastWrite) < h.cfg.KeepAlive {
				continue // written since the deadline was set
			}
			err = out.keepAlive(wt.Token()) // nothing sent for KeepAlive
		} else if err != nil {
			h.finish(ctx, out, wt.Token(), err)
			return
		} else {
			for _, e := range batch {
				if e, ok := f.apply(e); ok && out.event(e) != nil {
					break
				}
			}
			err = out.flush()
			if err == nil && time.Since(out.lastWrite) >= h.cfg.KeepAlive {
				err = out.keepAlive(wt.Token()) // the filters dropped everything for a while
			}
			if n := out.takeEvents(); n > 0 && h.cfg.Observer != nil {
				h.cfg.Observer.EventsSent(n)
			}
		}
		if err != nil {
			h.closed(out, ReasonClient)
			return
		}
	}
}

// quietDeadline is a context ending at a deadline, reused until it has
// passed (or its parent ended).
type quietDeadline struct {
	parent context.Context
	ctx    context.Context
	cancel context.CancelFunc
}

// get returns the current context, or a new one ending at deadline when
// the last one is done.
func (q *quietDeadline) get(deadline time.Time) context.Context {
	if q.ctx == nil || q.ctx.Err() != nil {
		q.stop()
		q.ctx, q.cancel = context.WithDeadline(q.parent, deadline)
	}
	return q.ctx
}

func (q *quietDeadline) stop() {
	if q.cancel != nil {
		q.cancel()
	}
}

// finish ends a started stream after the watch failed with err, with an
// end or error event as the contract says, unless the client is gone.
func (h *Handler) finish(ctx context.Context, out *sse, token string, err error) {
	reason, cause := ReasonError, err.Error()
	switch {
	case out.broken != nil:
		h.closed(out, ReasonClient)
		return
	case errors.Is(err, region.ErrRegionNotFound):
		_ = out.end(fmt.Sprintf("region %q was destroyed", out.name)) // a client gone now has nobody to tell
		h.closed(out, ReasonRegionDestroyed)
		return
	case errors.Is(err, region.ErrSlowConsumer):
		reason, cause = ReasonSlow, err.Error()+"; resume from the token"
	case h.closing.Err() != nil, errors.Is(err, region.ErrShuttingDown):
		reason, cause = ReasonShutdown, "the member is shutting down; resume from token on another member"
	case ctx.Err() != nil:
		h.closed(out, ReasonClient) // the client went away
		return
	default:
		h.log.Warn("watch failed", "region", out.name, "error", err)
	}
	_ = out.fail(cause, token) // a client gone now has nobody to tell
	h.closed(out, reason)
}

// opened tells the Observer that a stream began.
func (h *Handler) opened() {
	if h.cfg.Observer != nil {
		h.cfg.Observer.WatchOpened()
	}
}

// closed tells the Observer that out ended, and why.
func (h *Handler) closed(out *sse, reason string) {
	if h.cfg.Observer == nil {
		return
	}
	if n := out.takeEvents(); n > 0 {
		h.cfg.Observer.EventsSent(n)
	}
	h.cfg.Observer.WatchClosed(reason)
}
