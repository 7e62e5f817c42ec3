package client

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"mime"
	"net/http"
	"net/url"
	"strings"
	"sync/atomic"
	"time"

	"github.com/kvnode/kvnode/client/internal/sse"
	"github.com/kvnode/kvnode/client/internal/wire"
)

// WatchOptions say what a watch follows (GET /kv/v1/watch): a region's
// changes, maybe only some keys, or a continuous query's.
type WatchOptions struct {
	// Region is the region to watch; with Query or NamedQuery it may be
	// left empty (the query's FROM region is watched).
	Region string
	// Keys or Prefix keep only the changes of those keys.
	Keys   []string
	Prefix string
	// Query is a continuous query's OQL text (SELECT * FROM /r WHERE ...);
	// NamedQuery the id of a named one. Binds are their bind values.
	Query      string
	NamedQuery string
	Binds      []any
	// Initial sends the entries that match now first (EventInitial), then
	// EventReady; the changes follow.
	Initial bool
	// From resumes after this token (an Event's Token, or a
	// WatchStream's Last): every change after it is delivered, or the
	// watch fails with ErrGone when the members no longer keep it.
	From string
	// IdleTimeout: a member that starts no stream within it, or whose
	// stream brings nothing for as long (the members send a keep-alive
	// every 15 s), is left for another. Default 30 s.
	IdleTimeout time.Duration
	// OnStream, when set, is told of each stream's start and end, before
	// its events are delivered, in the iterator's goroutine.
	OnStream func(WatchStream)
	// Undecoded delivers the changes with Type, Token and Data only, as
	// the member sent them and unchecked (Region, Key and Value empty):
	// for a program that passes events on or reads what it needs from
	// Data itself, at hundreds of thousands a second (decoding is about
	// half of what an event costs the client). Initial entries, ready and
	// the end are decoded as ever.
	Undecoded bool
}

// WatchStream is one request of a watch, for OnStream.
type WatchStream struct {
	Member string // the serving member's base URL; "" if none started it
	After  string // the token it resumed after (Last-Event-ID)
	// Err is nil at the start; at the end, or when no member started a
	// stream, why (context.DeadlineExceeded when it was left idle).
	Err error
	// Last is the token the watch resumes after next (a keep-alive's
	// may be later than the last event's): a From to save.
	Last string
}

// Event types.
const (
	EventCreate  = "create"
	EventUpdate  = "update"
	EventDestroy = "destroy"
	EventExpire  = "expire"
	EventClear   = "clear"   // a replicated region was cleared
	EventInitial = "initial" // an entry that matched when the watch began
	EventReady   = "ready"   // the initial entries are over; the changes follow
)

// Event is one change of a watched region.
type Event struct {
	Type   string          `json:"type"`
	Region string          `json:"region"`
	Key    string          `json:"key"`
	Value  json.RawMessage `json:"value,omitempty"` // create, update, initial
	// Token is the position to resume after (WatchOptions.From); empty on
	// initial entries, which cannot be resumed.
	Token string `json:"-"`
	// Data is the event's data as the member sent it, a JSON object, for
	// a program that passes events on as they came.
	Data json.RawMessage `json:"-"`
}

// ErrWatchEnded: the members ended a watch for good (its region was
// destroyed, its named query deleted); a *WatchEndedError says why.
var ErrWatchEnded = errors.New("the watch ended")

// WatchEndedError is how a watch the members ended for good ends
// (errors.Is(err, ErrWatchEnded)): Cause is why, Data the end event's
// data as the member sent it.
type WatchEndedError struct {
	Cause string
	Data  json.RawMessage
}

func (e *WatchEndedError) Error() string        { return ErrWatchEnded.Error() + ": " + e.Cause }
func (e *WatchEndedError) Is(target error) bool { return target == ErrWatchEnded }

// Timings of a watch.
const (
	// watchIdle is the default IdleTimeout.
	watchIdle = 30 * time.Second
	// watchPatience is how long a watch keeps trying members that do not
	// accept it before it gives up.
	watchPatience = time.Minute
	// maxEventLine bounds one event's data line: the largest value a watch
	// accepts.
	maxEventLine = 64 << 20
)

// Watch follows changes as an iterator of events. When the stream breaks
// (the member dies, shuts down or is cut off) the watch resumes on another
// member after the last token, so that every change is delivered once and
// in order; before EventReady it starts over, and initial entries already
// delivered are not delivered again. The iteration ends when ctx ends or
// the loop breaks; it ends with an error (and no event) when the watch
// cannot go on: ErrGone (the resume token is older than the history the
// members keep: read afresh and watch with Initial), ErrWatchEnded, a
// refusal (ErrNotFound, ErrForbidden, ErrInvalid), or ErrUnavailable when
// no member accepted it for a minute. Events of a type not named here (a
// later version's) are delivered as they come, with their Type: ignore
// those you do not know.
func (c *Client) Watch(ctx context.Context, opts WatchOptions) iter.Seq2[Event, error] {
	return func(yield func(Event, error) bool) {
		q, err := opts.params()
		if err != nil {
			yield(Event{}, err)
			return
		}
		w := &watch{c: c, opts: opts, query: q, token: opts.From}
		if opts.Initial && opts.From == "" {
			w.seen = map[string]string{}
		} else {
			w.live = true
		}
		err = w.run(ctx, yield)
		if err != nil && ctx.Err() == nil && !errors.Is(err, errStopped) {
			yield(Event{}, err)
		}
	}
}

// params are the watch's URL parameters.
func (o WatchOptions) params() (url.Values, error) {
	q := url.Values{}
	if o.Region != "" {
		q.Set("region", o.Region)
	}
	if o.Keys != nil {
		q.Set("keys", strings.Join(o.Keys, ","))
	}
	if o.Prefix != "" {
		q.Set("prefix", o.Prefix)
	}
	if o.Query != "" {
		q.Set("q", o.Query)
	}
	if o.NamedQuery != "" {
		q.Set("query", o.NamedQuery)
	}
	if o.Binds != nil {
		b, err := json.Marshal(o.Binds)
		if err != nil {
			return nil, fmt.Errorf("%w: the bind values: %w", ErrInvalidArgument, err)
		}
		q.Set("binds", string(b))
	}
	if o.Initial && o.From == "" {
		q.Set("initial", "true")
	}
	return q, nil
}

// watch is one Watch's state across its streams.
type watch struct {
	c     *Client
	opts  WatchOptions
	query url.Values
	live  bool   // ready was received (or no initial entries were asked)
	ready bool   // EventReady was delivered
	token string // the last event's token: where a new stream resumes
	// seen are the initial entries delivered before ready: a stream that
	// drops before it starts them again, and none is delivered twice.
	seen map[string]string
	dec  wire.EventDecoder
}

// errStopped: the caller broke the loop.
var errStopped = errors.New("the caller stopped")

// run opens streams on the members in turn until the watch ends.
func (w *watch) run(ctx context.Context, yield func(Event, error) bool) error {
	lastOK, delay := time.Now(), time.Duration(0)
	for {
		accepted, delivered, err := w.stream(ctx, yield)
		if ctx.Err() != nil || errors.Is(err, errStopped) || errors.Is(err, ErrWatchEnded) {
			return err
		}
		var ae *Error
		if errors.As(err, &ae) && ae.Status != http.StatusServiceUnavailable {
			return err // a refusal another member would repeat (410 too)
		}
		var cr *certRefusedError
		if errors.Is(err, errNotStream) || errors.As(err, &cr) {
			return err
		}
		if accepted {
			lastOK = time.Now()
		}
		if delivered {
			delay = 0
		} else if time.Since(lastOK) > watchPatience {
			return fmt.Errorf("%w: no member accepted the watch for %v; the last said: %w", ErrUnavailable, watchPatience, err)
		}
		t := time.NewTimer(delay)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil
		case <-t.C:
		}
		delay = min(max(2*delay, 100*time.Millisecond), 5*time.Second)
	}
}

// errNotStream is an answer that is not the API's event stream.
var errNotStream = errors.New("not the API's event stream")

// stream runs one request: accepted says that a member answered with a
// stream, delivered that an event came.
func (w *watch) stream(ctx context.Context, yield func(Event, error) bool) (accepted, delivered bool, err error) {
	attempt, cancel := context.WithCancel(ctx)
	defer cancel()
	idle := cmp.Or(max(w.opts.IdleTimeout, 0), watchIdle)
	var idled atomic.Bool
	waiting := time.AfterFunc(idle, func() { idled.Store(true); cancel() })
	defer waiting.Stop()
	r := &request{method: http.MethodGet, path: "/kv/v1/watch", query: w.query, idempotent: true, stream: true,
		header: http.Header{"Accept": {"text/event-stream, application/json"}}}
	after := ""
	if w.live && w.token != "" {
		after = w.token
		r.header.Set("Last-Event-ID", w.token)
	}
	member := ""
	defer func() {
		if err != nil && idled.Load() {
			err = fmt.Errorf("nothing came for %v: %w: %w", idle, context.DeadlineExceeded, err)
		}
		if err != nil && w.opts.OnStream != nil && !errors.Is(err, errStopped) && ctx.Err() == nil {
			w.opts.OnStream(WatchStream{Member: member, After: after, Err: err, Last: w.token})
		}
	}()
	resp, err := w.c.do(attempt, r)
	if err != nil {
		return false, false, err
	}
	defer resp.stream.Close()
	if mt, _, _ := mime.ParseMediaType(resp.header.Get("Content-Type")); mt != "text/event-stream" {
		return false, false, fmt.Errorf("%w: the answer is %q", errNotStream, resp.header.Get("Content-Type"))
	}
	waiting.Reset(idle)
	member = resp.member
	if w.opts.OnStream != nil {
		w.opts.OnStream(WatchStream{Member: member, After: after, Last: w.token})
	}
	rd := sse.NewReader(sse.Idle(resp.stream, waiting, idle), maxEventLine)
	for {
		ev, err := rd.Next()
		if w.live && rd.LastID() != "" {
			w.token = rd.LastID()
		}
		if err != nil {
			return true, delivered, fmt.Errorf("the stream from %s dropped: %w", resp.member, err)
		}
		delivered = true
		out, ok, err := w.event(ev)
		if err != nil {
			return true, true, err
		}
		if ok && !yield(out, nil) {
			return true, true, errStopped
		}
	}
}

// event turns one SSE event into the Event to deliver (ok false: none).
// Its data is copied once, for the caller to keep; Value is a slice of it.
func (w *watch) event(ev sse.Event) (Event, bool, error) {
	data := json.RawMessage(bytes.Clone(ev.Data))
	switch ev.Type {
	case EventCreate, EventUpdate, EventDestroy, EventExpire, EventClear:
		if w.opts.Undecoded {
			return Event{Type: ev.Type, Token: ev.ID, Data: data}, true, nil
		}
	}
	d, err := w.dec.Decode(data)
	if err != nil {
		return Event{}, false, fmt.Errorf("%w: event %s: its data is not JSON: %w", errNotStream, ev.Type, err)
	}
	out := Event{Type: ev.Type, Region: d.Region, Key: d.Key, Value: d.Value, Token: ev.ID, Data: data}
	switch ev.Type {
	case EventReady:
		// Every stream starts with one, a resumed one too: the caller is
		// told once.
		first := !w.ready
		w.live, w.ready, w.seen, w.token = true, true, nil, ev.ID
		w.query.Del("initial")
		return out, first, nil
	case "error":
		if w.live && d.Token != "" {
			w.token = d.Token
		}
		return Event{}, false, errors.New("the member ended the stream: " + d.Cause)
	case "end":
		return Event{}, false, &WatchEndedError{Cause: d.Cause, Data: out.Data}
	case EventInitial:
		out.Token = ""
		if w.seen != nil {
			if v, ok := w.seen[out.Key]; ok && v == string(out.Value) {
				return Event{}, false, nil
			}
			w.seen[out.Key] = string(out.Value)
		}
		return out, true, nil
	}
	// The changes, and types of a later version, for the caller to ignore.
	return out, true, nil
}
