package workload

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/kvnode/kvnode/chaos/model"
	"github.com/kvnode/kvnode/client"
)

// Watcher follows a region's changes (GET /kv/v1/watch, through
// client.Watch) for the length of a run and records every event it
// receives. Whenever its stream ends, whatever ended it (the member killed
// or cut off, paused past the idle timeout, an `error` event), the watch
// moves to the next member and resumes with Last-Event-ID, the last id it
// received: what model.CheckWatch checks is that the stream, across every
// such move, is whole, ordered and free of duplicates. The client delivers
// every event of every stream as it came (it drops none and repeats none
// of a watch without initial entries), and tells the watcher of each
// stream (client.WatchOptions.OnStream): which member served it, after
// which token it resumed, why it ended.
type Watcher struct {
	Region string
	// Prefix narrows the watch to keys starting with it (the workload's
	// keys: "f"), so the ledger's and the probes' writes stay out.
	Prefix string
	// URLs are the members' REST base URLs; Names their node names. The
	// first stream is asked of URLs[First], the next ones of the members
	// in turn.
	URLs, Names []string
	First       int
	// Clock stamps every event (the history's clock, History.Now), so the
	// check can compare receipt with the writes' times.
	Clock func() int64
	// IdleTimeout: a stream with no byte for this long (a member sends a
	// keep-alive every 15 s), or a member that does not start one within
	// it (a paused member accepts connections and answers nothing), is
	// abandoned for another member. 20 s when zero.
	IdleTimeout time.Duration
	// Logf, when set, logs every connection's end and every move.
	Logf func(format string, args ...any)

	once  sync.Once
	ready chan struct{}

	mu       sync.Mutex
	events   []model.WatchEvent
	conns    int
	ends     map[string]int
	gone     []Gone
	problems []string
}

// Gone is a resume the server refused with 410: the token had left the
// history it keeps. The events between were lost to the watcher.
type Gone struct {
	At     int64  `json:"at"` // on Clock
	Member string `json:"member"`
	Token  string `json:"token"`
	Oldest string `json:"oldestToken"`
	// Outage is how long the watcher had been without a stream.
	Outage time.Duration `json:"outage"`
}

// WatchResult is what a Watcher saw.
type WatchResult struct {
	Events []model.WatchEvent
	// Connections counts streams that were answered 200.
	Connections int
	// Ends counts why connections ended or were refused.
	Ends map[string]int
	Gone []Gone
	// Problems: what the contract does not allow (an `end` event, a 4xx
	// other than 410, an event of an unknown type or unreadable data).
	Problems []string
}

// maxProblems bounds WatchResult.Problems: a member that answers 400 to
// every resume would otherwise fill it for the whole run.
const maxProblems = 20

func (w *Watcher) init() {
	w.once.Do(func() { w.ready = make(chan struct{}) })
}

// Ready is closed once the first stream is live (event `ready`): writes
// made after it are all in the stream.
func (w *Watcher) Ready() <-chan struct{} {
	w.init()
	return w.ready
}

// Result is a copy of what the watcher saw so far.
func (w *Watcher) Result() WatchResult {
	w.mu.Lock()
	defer w.mu.Unlock()
	ends := make(map[string]int, len(w.ends))
	for k, n := range w.ends {
		ends[k] = n
	}
	return WatchResult{
		Events:      append([]model.WatchEvent(nil), w.events...),
		Connections: w.conns,
		Ends:        ends,
		Gone:        append([]Gone(nil), w.gone...),
		Problems:    append([]string(nil), w.problems...),
	}
}

// Run watches until ctx ends (or the server ends the watch). A watch the
// client gives up (a 410, a refusal, no member for a minute) starts again:
// after a 410 from the present, otherwise after the last token.
func (w *Watcher) Run(ctx context.Context) {
	w.init()
	if w.IdleTimeout == 0 {
		w.IdleTimeout = 20 * time.Second
	}
	// A new client asks its first endpoint first, URLs[First], then the
	// members in turn.
	n := len(w.URLs)
	endpoints := make([]string, n)
	for i := range endpoints {
		endpoints[i] = w.URLs[(w.First+i)%n]
	}
	cl, err := client.New(client.Config{Endpoints: endpoints, DisableSingleHop: true, DialTimeout: w.IdleTimeout})
	if err != nil {
		w.problem("watch %s: %v", w.Region, err)
		return
	}
	defer cl.Close()
	f := &following{lost: w.Clock()}
	for ctx.Err() == nil {
		opts := client.WatchOptions{Region: w.Region, Prefix: w.Prefix, From: f.last, IdleTimeout: w.IdleTimeout,
			OnStream: func(s client.WatchStream) { w.onStream(f, s) }}
		var err error
		for ev, e := range cl.Watch(ctx, opts) {
			if e != nil {
				err = e
				break
			}
			w.record(f, ev)
		}
		var ae *client.Error
		switch {
		case ctx.Err() != nil:
			return
		case errors.Is(err, client.ErrGone):
			f.last = "" // go on from the present: the gap is the 410's
		case errors.Is(err, client.ErrWatchEnded):
			w.problem("%s ended the watch: %v", f.member, err)
			return
		case errors.As(err, &ae) && ae.Status < 500:
			// A refusal the contract gives no reason for here (the token
			// came from the stream itself).
			w.problem("%s answered the watch after %q with %d %s", w.memberOf(ae.URL), f.last, ae.Status, strings.TrimSpace(string(ae.Body)))
		case err != nil && !errors.Is(err, client.ErrUnavailable):
			w.problem("the watch failed on %s: %v", f.member, err) // an answer that is not the API's stream
		}
		select {
		case <-ctx.Done():
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// following is where a Run stands: the stream events come on, the token
// to resume after, when it last had a stream (for Gone.Outage), and how
// many requests in a row started none.
type following struct {
	member string // the name of the member serving the stream
	conn   int    // the stream's number, from 0
	last   string
	lost   int64
	failed int
}

// onStream notes a stream's start or end (client.WatchOptions.OnStream).
func (w *Watcher) onStream(f *following, s client.WatchStream) {
	f.last = s.Last
	if s.Err == nil {
		w.mu.Lock()
		f.member, f.conn = w.memberOf(s.Member), w.conns
		w.conns++
		w.mu.Unlock()
		f.failed = 0
		return
	}
	w.end(reason(s.Err))
	if s.Member != "" {
		// A live stream ended: the watch resumes on the next member.
		f.lost = w.Clock()
		w.logf("watch %s: stream ended on %s: %v; resuming after %q", w.Region, f.member, s.Err, s.Last)
		return
	}
	var ae *client.Error
	if errors.As(s.Err, &ae) && ae.Status == http.StatusGone {
		var body struct {
			Oldest string `json:"oldestToken"`
		}
		_ = json.Unmarshal(ae.Body, &body)
		now := w.Clock()
		w.mu.Lock()
		w.gone = append(w.gone, Gone{At: now, Member: w.memberOf(ae.URL), Token: s.After, Oldest: body.Oldest, Outage: time.Duration(now - f.lost)})
		w.mu.Unlock()
	}
	if f.failed%(10*len(w.URLs)) == 0 {
		// The first of each run of requests that started no stream.
		w.logf("watch %s: no stream after %q: %v", w.Region, s.After, s.Err)
	}
	f.failed++
}

// record keeps one event of the stream f is on.
func (w *Watcher) record(f *following, e client.Event) {
	switch e.Type {
	case client.EventReady:
		select {
		case <-w.ready:
		default:
			close(w.ready)
		}
	case client.EventCreate, client.EventUpdate, client.EventInitial, client.EventDestroy, client.EventExpire, client.EventClear:
		ev := model.WatchEvent{Type: e.Type, Key: e.Key, Token: e.Token, Member: f.member, Conn: f.conn, Time: w.Clock()}
		if len(e.Value) > 0 {
			v, err := ParseValue(e.Value)
			if err != nil {
				ev.Raw = string(e.Value)
			}
			ev.Value = v
		}
		w.mu.Lock()
		w.events = append(w.events, ev)
		w.mu.Unlock()
	default:
		w.problem("%s sent an event of unknown type %q (key %q)", f.member, e.Type, e.Key)
	}
}

// memberOf is the name of the member a URL of the client's names (a base
// URL, or a request's URL), the URL itself when none matches.
func (w *Watcher) memberOf(u string) string {
	for i, base := range w.URLs {
		if b, err := client.ParseBase(base, false); err == nil && (u == b || strings.HasPrefix(u, b+"/")) {
			return w.Names[i]
		}
	}
	return u
}

func (w *Watcher) end(why string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.ends == nil {
		w.ends = map[string]int{}
	}
	w.ends[why]++
}

// problem records what the contract does not allow, each text once.
func (w *Watcher) problem(format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(w.problems) < maxProblems && !slices.Contains(w.problems, msg) {
		w.problems = append(w.problems, msg)
	}
}

func (w *Watcher) logf(format string, args ...any) {
	if w.Logf != nil {
		w.Logf(format, args...)
	}
}

// reason shortens why a stream ended, or none started, to a class worth
// counting.
func reason(err error) string {
	s := err.Error()
	var ae *client.Error
	switch {
	case errors.Is(err, context.DeadlineExceeded):
		return "timeout"
	case strings.Contains(s, "the member ended the stream: "):
		_, cause, _ := strings.Cut(s, "the member ended the stream: ")
		return "error event: " + cause
	case errors.Is(err, client.ErrGone):
		return "410 Gone"
	case errors.As(err, &ae):
		return strconv.Itoa(ae.Status)
	case errors.Is(err, client.ErrUnavailable) || IsRefused(err):
		return "refused"
	case errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF):
		return "closed"
	case strings.Contains(s, "connection reset"):
		return "reset"
	}
	if len(s) > 60 {
		s = s[:60]
	}
	return s
}
