package client

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"mime"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/kvnode/kvnode/client/internal/sse"
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
	// From resumes after this token (an Event's Token): every change after
	// it is delivered, or the watch fails with ErrGone when the members no
	// longer keep it.
	From string
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
}

// ErrWatchEnded: the members ended a watch for good (its region was
// destroyed, its named query deleted); the error says why.
var ErrWatchEnded = errors.New("the watch ended")

// Timings of a watch.
const (
	// watchHeaderWait bounds the wait for a member to start the stream.
	watchHeaderWait = 30 * time.Second
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
// no member accepted it for a minute.
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
		if errors.Is(err, errNotStream) {
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
	waiting := time.AfterFunc(watchHeaderWait, cancel)
	defer waiting.Stop()
	r := &request{method: http.MethodGet, path: "/kv/v1/watch", query: w.query, idempotent: true, stream: true,
		header: http.Header{"Accept": {"text/event-stream, application/json"}}}
	if w.live && w.token != "" {
		r.header.Set("Last-Event-ID", w.token)
	}
	resp, err := w.c.do(attempt, r)
	if err != nil {
		return false, false, err
	}
	defer resp.stream.Close()
	waiting.Stop()
	if mt, _, _ := mime.ParseMediaType(resp.header.Get("Content-Type")); mt != "text/event-stream" {
		return false, false, fmt.Errorf("%w: the answer is %q", errNotStream, resp.header.Get("Content-Type"))
	}
	rd := sse.NewReader(resp.stream, maxEventLine)
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
func (w *watch) event(ev sse.Event) (Event, bool, error) {
	var d struct {
		Event
		Cause string `json:"cause"`
		Token string `json:"token"`
	}
	if err := json.Unmarshal([]byte(ev.Data), &d); err != nil {
		return Event{}, false, fmt.Errorf("%w: event %s: its data is not JSON: %w", errNotStream, ev.Type, err)
	}
	out := d.Event
	out.Type, out.Token = ev.Type, ev.ID
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
		return Event{}, false, fmt.Errorf("%w: %s", ErrWatchEnded, d.Cause)
	case EventInitial:
		out.Token = ""
		if w.seen != nil {
			if v, ok := w.seen[out.Key]; ok && v == string(out.Value) {
				return Event{}, false, nil
			}
			w.seen[out.Key] = string(out.Value)
		}
		return out, true, nil
	case EventCreate, EventUpdate, EventDestroy, EventExpire, EventClear:
		return out, true, nil
	}
	return Event{}, false, nil // a type of a later version
}
