package workload

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/kvnode/kvnode/chaos/model"
)

// Watcher follows a region's changes (GET /kv/v1/watch) for the length of
// a run and records every event it receives. Whenever its stream ends,
// whatever ended it (the member killed or cut off, paused past the idle
// timeout, an `error` event), it moves to the next member and resumes
// with Last-Event-ID, the last id it received: what model.CheckWatch
// checks is that the stream, across every such move, is whole, ordered
// and free of duplicates.
type Watcher struct {
	Region string
	// Prefix narrows the watch to keys starting with it (the workload's
	// keys: "f"), so the ledger's and the probes' writes stay out.
	Prefix string
	// URLs are the members' REST base URLs; Names their node names. The
	// first connection goes to URLs[First].
	URLs, Names []string
	First       int
	// Clock stamps every event (the history's clock, History.Now), so the
	// check can compare receipt with the writes' times.
	Clock func() int64
	// IdleTimeout: a stream with no byte for this long (a member sends a
	// keep-alive every 15 s) is abandoned for another member: the member
	// is paused or cut off. 20 s when zero.
	IdleTimeout time.Duration
	// ConnectTimeout bounds the wait for the answer's headers (a paused
	// member accepts connections and answers nothing). 5 s when zero.
	ConnectTimeout time.Duration
	// Logf, when set, logs every connection's end and every move.
	Logf func(format string, args ...any)

	once  sync.Once
	ready chan struct{}

	mu       sync.Mutex
	events   []model.WatchEvent
	lastID   string
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

// errEnd: the server ended the watch for good (event `end`).
var errEnd = errors.New("the watch ended")

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

// Run watches until ctx ends (or the server ends the watch), moving to
// the next member whenever a stream ends or cannot be opened.
func (w *Watcher) Run(ctx context.Context) {
	w.init()
	if w.IdleTimeout == 0 {
		w.IdleTimeout = 20 * time.Second
	}
	if w.ConnectTimeout == 0 {
		w.ConnectTimeout = 5 * time.Second
	}
	tr := &http.Transport{DialContext: (&net.Dialer{Timeout: w.ConnectTimeout}).DialContext, DisableKeepAlives: true}
	defer tr.CloseIdleConnections()
	hc := &http.Client{Transport: tr}
	m := w.First % len(w.URLs)
	failed := 0 // members in a row that gave no stream
	lost := w.Clock()
	for ctx.Err() == nil {
		live, err := w.stream(ctx, hc, m, &lost)
		if errors.Is(err, errEnd) {
			return
		}
		if ctx.Err() != nil {
			return
		}
		next := (m + 1) % len(w.URLs)
		w.end(reason(err))
		what := "no stream"
		if live {
			what = "stream ended"
		}
		if live || failed%(10*len(w.URLs)) == 0 {
			// Every end of a stream, and the first of each run of refusals.
			w.logf("watch %s: %s on %s: %v; resuming on %s after %q", w.Region, what, w.Names[m], err, w.Names[next], w.resumeID())
		}
		m = next
		if live {
			failed = 0
			continue
		}
		// Every member refused in turn: wait a little before the next round.
		if failed++; failed%len(w.URLs) == 0 {
			select {
			case <-ctx.Done():
			case <-time.After(time.Duration(min(failed/len(w.URLs), 10)) * 100 * time.Millisecond):
			}
		}
	}
}

// stream opens one watch on member m and reads it until it ends; live
// says whether it was answered 200. lost is when the watcher last had a
// live stream (for Gone.Outage); stream moves it on.
func (w *Watcher) stream(ctx context.Context, hc *http.Client, m int, lost *int64) (live bool, err error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var idle sync.Mutex
	idled := false
	timer := time.AfterFunc(w.ConnectTimeout, func() {
		idle.Lock()
		idled = true
		idle.Unlock()
		cancel()
	})
	defer timer.Stop()
	timedOut := func(err error) error {
		idle.Lock()
		defer idle.Unlock()
		if idled {
			return fmt.Errorf("nothing received for its timeout: %w", err)
		}
		return err
	}

	q := url.Values{"region": {w.Region}}
	if w.Prefix != "" {
		q.Set("prefix", w.Prefix)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, w.URLs[m]+"/kv/v1/watch?"+q.Encode(), nil)
	if err != nil {
		return false, err
	}
	req.Header.Set("Accept", "text/event-stream")
	from := w.resumeID()
	if from != "" {
		req.Header.Set("Last-Event-ID", from)
	}
	resp, err := hc.Do(req)
	if err != nil {
		return false, timedOut(err)
	}
	defer resp.Body.Close()
	switch resp.StatusCode {
	case http.StatusOK:
	case http.StatusGone:
		var body struct {
			Cause  string `json:"cause"`
			Oldest string `json:"oldestToken"`
		}
		_ = json.NewDecoder(io.LimitReader(resp.Body, 1<<16)).Decode(&body)
		now := w.Clock()
		w.mu.Lock()
		w.gone = append(w.gone, Gone{At: now, Member: w.Names[m], Token: from, Oldest: body.Oldest, Outage: time.Duration(now - *lost)})
		w.lastID = "" // go on from the present: the gap is the 410's
		w.mu.Unlock()
		return false, fmt.Errorf("410 Gone resuming after %q (oldest kept %q): %s", from, body.Oldest, body.Cause)
	default:
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<12))
		err := fmt.Errorf("%s: %s", resp.Status, strings.TrimSpace(string(b)))
		// A 4xx is a refusal the contract gives no reason for here (the
		// token came from the stream itself); a 5xx is a member not
		// serving yet, counted in Ends like a refused connection.
		if resp.StatusCode < 500 {
			w.problem("%s answered the watch after %q with %v", w.Names[m], from, err)
		}
		return false, err
	}
	w.mu.Lock()
	conn := w.conns
	w.conns++
	w.mu.Unlock()
	timer.Reset(w.IdleTimeout)
	defer func() { *lost = w.Clock() }()
	err = w.read(bufio.NewReader(&idleReader{r: resp.Body, t: timer, d: w.IdleTimeout}), m, conn)
	return true, timedOut(err)
}

// read parses the event stream: blocks of `field: value` lines ended by
// an empty line; a line starting with ':' is a comment (the keep-alive).
// Every block's id, the keep-alive's too, is where a resume starts.
func (w *Watcher) read(r *bufio.Reader, m, conn int) error {
	var typ, id, data string
	hasID := false
	for {
		line, err := r.ReadString('\n')
		if err != nil {
			if err == io.EOF {
				err = io.ErrUnexpectedEOF // a watch never ends cleanly but with `end`
			}
			return err
		}
		line = strings.TrimRight(line, "\r\n")
		if line == "" {
			if hasID {
				w.mu.Lock()
				w.lastID = id
				w.mu.Unlock()
			}
			if typ != "" || data != "" {
				if err := w.dispatch(typ, id, data, m, conn); err != nil {
					return err
				}
			}
			typ, id, data, hasID = "", "", "", false
			continue
		}
		if line[0] == ':' {
			continue
		}
		field, value, _ := strings.Cut(line, ":")
		value = strings.TrimPrefix(value, " ")
		switch field {
		case "event":
			typ = value
		case "id":
			id, hasID = value, true
		case "data":
			if data != "" {
				data += "\n"
			}
			data += value
		}
	}
}

// dispatch records one event block.
func (w *Watcher) dispatch(typ, id, data string, m, conn int) error {
	var d struct {
		Type  string          `json:"type"`
		Key   *string         `json:"key"`
		Value json.RawMessage `json:"value"`
		Cause string          `json:"cause"`
		Token string          `json:"token"`
	}
	if err := json.Unmarshal([]byte(data), &d); err != nil {
		w.problem("%s sent event %q with data %q: %v", w.Names[m], typ, data, err)
		return nil
	}
	switch typ {
	case "ready":
		w.mu.Lock()
		w.lastID = d.Token
		w.mu.Unlock()
		select {
		case <-w.ready:
		default:
			close(w.ready)
		}
	case "error":
		// The server closes next; resume from its token.
		if d.Token != "" {
			w.mu.Lock()
			w.lastID = d.Token
			w.mu.Unlock()
		}
		return fmt.Errorf("error event: %s", d.Cause)
	case "end":
		w.problem("%s ended the watch: %s", w.Names[m], d.Cause)
		return errEnd
	case "create", "update", "initial", "destroy", "expire", "clear":
		ev := model.WatchEvent{Type: typ, Token: id, Member: w.Names[m], Conn: conn, Time: w.Clock()}
		if d.Key != nil {
			ev.Key = *d.Key
		}
		if len(d.Value) > 0 {
			v, err := ParseValue(d.Value)
			if err != nil {
				ev.Raw = string(d.Value)
			}
			ev.Value = v
		}
		w.mu.Lock()
		w.events = append(w.events, ev)
		w.mu.Unlock()
	default:
		w.problem("%s sent an event of unknown type %q: %s", w.Names[m], typ, data)
	}
	return nil
}

func (w *Watcher) resumeID() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.lastID
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

// reason shortens why a connection ended to a class worth counting.
func reason(err error) string {
	s := err.Error()
	switch {
	case strings.Contains(s, "nothing received for its timeout"):
		return "timeout"
	case strings.HasPrefix(s, "error event: "):
		return s
	case strings.HasPrefix(s, "410 "):
		return "410 Gone"
	case IsRefused(err):
		return "refused"
	case errors.Is(err, io.ErrUnexpectedEOF):
		return "closed"
	case strings.Contains(s, "connection reset"):
		return "reset"
	}
	if i := strings.IndexByte(s, ':'); i > 0 && len(s) > 3 && s[0] >= '1' && s[0] <= '5' {
		return s[:i] // a status
	}
	if len(s) > 60 {
		s = s[:60]
	}
	return s
}

// idleReader resets t to d whenever bytes come: when none come for d,
// t's function cancels the stream.
type idleReader struct {
	r io.Reader
	t *time.Timer
	d time.Duration
}

func (ir *idleReader) Read(p []byte) (int, error) {
	n, err := ir.r.Read(p)
	if n > 0 {
		ir.t.Reset(ir.d)
	}
	return n, err
}
