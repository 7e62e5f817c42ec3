package watch

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kvnode/kvnode/region"
	"github.com/kvnode/kvnode/rest/jsonout"
)

// This file holds the test doubles: a Source whose watches the test feeds,
// an Observer that counts, a server that answers Serve's errors as
// package rest's table does, and a client that reads the stream with the
// parsing rules of the HTML standard's EventSource.

// opened is what a fakeSource was asked for.
type opened struct {
	From    string
	Buffer  int
	Initial bool
}

// fakeSource opens fakeWatches; entries are each region's current entries
// (handed to Initial in order), errs what Watch fails with per region.
type fakeSource struct {
	mu      sync.Mutex
	entries map[string][][2]string
	errs    map[string]error
	asked   []opened
	watches chan *fakeWatch
}

func newFakeSource() *fakeSource {
	return &fakeSource{entries: map[string][][2]string{}, errs: map[string]error{}, watches: make(chan *fakeWatch, 64)}
}

func (s *fakeSource) Watch(ctx context.Context, name string, opts region.WatchOptions) (region.Watch, error) {
	s.mu.Lock()
	s.asked = append(s.asked, opened{From: opts.From, Buffer: opts.Buffer, Initial: opts.Initial != nil})
	err, entries := s.errs[name], s.entries[name]
	s.mu.Unlock()
	if err != nil {
		return nil, err
	}
	if name == "opening" { // a watch that takes until its context ends to open
		<-ctx.Done()
		return nil, fmt.Errorf("open opening: %w", ctx.Err())
	}
	if opts.Initial != nil {
		for _, e := range entries {
			if err := opts.Initial(e[0], json.RawMessage(e[1])); err != nil {
				return nil, err
			}
		}
	}
	w := &fakeWatch{token: "t0", batches: make(chan batch, 64), closed: make(chan struct{})}
	s.watches <- w
	return w, nil
}

// lastAsked is the options of the last Watch call.
func (s *fakeSource) lastAsked(t *testing.T) opened {
	t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.asked) == 0 {
		t.Fatal("Watch was never called")
	}
	return s.asked[len(s.asked)-1]
}

// batch is what one Next returns.
type batch struct {
	events []region.Event
	err    error
}

// fakeWatch returns the batches the test sends.
type fakeWatch struct {
	batches   chan batch
	mu        sync.Mutex // the test moves the token (moveTo)
	token     string
	closed    chan struct{}
	closeOnce sync.Once
}

func (w *fakeWatch) Next(ctx context.Context) ([]region.Event, error) {
	select {
	case b := <-w.batches:
		if b.err != nil {
			return nil, b.err
		}
		w.moveTo(b.events[len(b.events)-1].Token)
		return b.events, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

func (w *fakeWatch) Token() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.token
}

// moveTo sets the watch's position, as events the filters drop would.
func (w *fakeWatch) moveTo(token string) {
	w.mu.Lock()
	w.token = token
	w.mu.Unlock()
}
func (w *fakeWatch) Close() { w.closeOnce.Do(func() { close(w.closed) }) }

// send hands the watch one batch.
func (w *fakeWatch) send(evs ...region.Event) { w.batches <- batch{events: evs} }

// fail makes the watch's next Next fail with err.
func (w *fakeWatch) fail(err error) { w.batches <- batch{err: err} }

// fakeObserver counts what the handler reports.
type fakeObserver struct {
	mu      sync.Mutex
	open    int
	sent    int
	reasons map[string]int
}

func (o *fakeObserver) WatchOpened() { o.mu.Lock(); o.open++; o.mu.Unlock() }
func (o *fakeObserver) WatchClosed(reason string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.open--
	if o.reasons == nil {
		o.reasons = map[string]int{}
	}
	o.reasons[reason]++
}
func (o *fakeObserver) EventsSent(n int) { o.mu.Lock(); o.sent += n; o.mu.Unlock() }

func (o *fakeObserver) counts() (open, sent int, reasons map[string]int) {
	o.mu.Lock()
	defer o.mu.Unlock()
	r := map[string]int{}
	for k, v := range o.reasons {
		r[k] = v
	}
	return o.open, o.sent, r
}

// hotMatcher matches values with "hot":true, and fails on values with
// "bad":true, as a query that cannot evaluate an entry does.
type hotMatcher struct{}

func (hotMatcher) Matches(key string, value json.RawMessage) (bool, error) {
	if strings.Contains(string(value), `"bad":true`) {
		return false, errors.New("cannot compare a string with a number")
	}
	return strings.Contains(string(value), `"hot":true`), nil
}

// errForbidden is what the test server's authorize answers for the region
// "secret".
var errForbidden = errors.New("forbidden")

// harness is a Handler behind a real HTTP server.
type harness struct {
	src *fakeSource
	obs *fakeObserver
	h   *Handler
	srv *httptest.Server
}

// queries is the named queries of the tests: "hot" over /orders.
type queries map[string]string

func (q queries) NamedQuery(ctx context.Context, _ region.Consistency, id string) (region.NamedQuery, error) {
	if id == "leaderless" { // the control group has no leader: the read waits
		<-ctx.Done()
		return region.NamedQuery{}, fmt.Errorf("read query %q: %w", id, ctx.Err())
	}
	text, ok := q[id]
	if !ok {
		return region.NamedQuery{}, region.ErrKeyNotFound
	}
	return region.NamedQuery{ID: id, OQL: text}, nil
}

// compileHot is the tests' Compiler: any text compiles to hotMatcher over
// the region after FROM /, binds recorded in the harness.
func compileHot(text string, binds []any) (string, Matcher, error) {
	_, after, ok := strings.Cut(text, "FROM /")
	if !ok {
		return "", nil, errors.Join(region.ErrInvalid, errors.New("not a continuous query: no FROM"))
	}
	name, _, _ := strings.Cut(after, " ")
	return name, hotMatcher{}, nil
}

// newHarness serves a Handler over a fakeSource. Serve's errors are
// answered as package rest's table would: status and {"cause"}.
func newHarness(t *testing.T, cfg Config) *harness {
	t.Helper()
	hs := &harness{src: newFakeSource(), obs: &fakeObserver{}}
	cfg.Observer = hs.obs
	if cfg.Compile == nil {
		cfg.Compile = compileHot
	}
	hs.h = New(cfg, hs.src, queries{"hot": "SELECT * FROM /orders o WHERE o.hot = true"})
	hs.srv = httptest.NewServer(http.HandlerFunc(hs.serve))
	t.Cleanup(hs.srv.Close)
	return hs
}

func (hs *harness) serve(w http.ResponseWriter, r *http.Request) {
	err := hs.h.Serve(w, r, func(name string) error {
		if name == "secret" {
			return errForbidden
		}
		return nil
	})
	if err == nil {
		return
	}
	status := http.StatusInternalServerError
	switch {
	case errors.Is(err, errForbidden):
		status = http.StatusForbidden
	case errors.Is(err, region.ErrInvalid):
		status = http.StatusBadRequest
	case errors.Is(err, region.ErrRegionNotFound), errors.Is(err, region.ErrKeyNotFound):
		status = http.StatusNotFound
	case errors.Is(err, ErrTooManyWatchers), errors.Is(err, region.ErrNoLeader), errors.Is(err, context.DeadlineExceeded):
		status = http.StatusServiceUnavailable
	}
	body, _ := jsonout.Marshal(struct {
		Cause string `json:"cause"`
	}{err.Error()})
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.WriteHeader(status)
	_, _ = w.Write(body)
}

// client is one watch from the client's side.
type client struct {
	resp   *http.Response
	cancel context.CancelFunc
	p      *parser
}

// watch opens GET /kv/v1/watch?query with the given headers (name, value
// pairs).
func (hs *harness) watch(t *testing.T, query string, header ...string) *client {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, hs.srv.URL+"/kv/v1/watch?"+query, nil)
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := hs.srv.Client().Do(req)
	if err != nil {
		cancel()
		t.Fatalf("GET %s: %v", req.URL, err)
	}
	c := &client{resp: resp, cancel: cancel, p: &parser{r: bufio.NewReader(resp.Body)}}
	t.Cleanup(c.close)
	return c
}

func (c *client) close() {
	c.cancel()
	c.resp.Body.Close()
}

// next reads the next block of the stream.
func (c *client) next(t *testing.T) block {
	t.Helper()
	b, err := c.p.next()
	if err != nil {
		t.Fatalf("reading the stream: %v", err)
	}
	return b
}

// body reads what remains of the answer.
func (c *client) body(t *testing.T) string {
	t.Helper()
	var sb strings.Builder
	for {
		line, err := c.p.r.ReadString('\n')
		sb.WriteString(line)
		if err != nil {
			return sb.String()
		}
	}
}

// block is one block of the stream as EventSource sees it: the event it
// dispatches (Type "" when it dispatches none: a comment, or no data), the
// id field when the block has one, and the last event ID after it (what
// a browser sends as Last-Event-ID when it reconnects).
type block struct {
	Type        string
	Data        string
	ID          string
	HasID       bool
	Comments    []string
	LastEventID string
}

// doc decodes the block's data.
func (b block) doc(t *testing.T) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal([]byte(b.Data), &m); err != nil {
		t.Fatalf("data of %q is not JSON: %v: %s", b.Type, err, b.Data)
	}
	return m
}

// parser is the HTML standard's event stream interpretation (§9.2.6),
// reduced to what a test reads: lines end with LF, CRLF or CR; a line
// starting with a colon is a comment; "field: value" loses one space
// after the colon; data lines join with LF; an id sets the last event ID
// buffer, which outlives the block; a blank line dispatches.
type parser struct {
	r      *bufio.Reader
	lastID string
}

func (p *parser) next() (block, error) {
	var b block
	var data []string
	var event string
	seen := false
	for {
		line, err := p.r.ReadString('\n')
		if err != nil {
			return b, err
		}
		line = strings.TrimSuffix(strings.TrimSuffix(line, "\n"), "\r")
		if line == "" {
			if !seen {
				continue
			}
			b.LastEventID = p.lastID
			if len(data) > 0 {
				b.Data = strings.Join(data, "\n")
				b.Type = event
				if b.Type == "" {
					b.Type = "message"
				}
			}
			return b, nil
		}
		seen = true
		if strings.HasPrefix(line, ":") {
			b.Comments = append(b.Comments, strings.TrimPrefix(line[1:], " "))
			continue
		}
		field, value, _ := strings.Cut(line, ":")
		value = strings.TrimPrefix(value, " ")
		switch field {
		case "event":
			event = value
		case "data":
			data = append(data, value)
		case "id":
			if !strings.ContainsRune(value, 0) {
				p.lastID = value
				b.ID, b.HasID = value, true
			}
		}
	}
}

// q builds a query string.
func q(kv ...string) string {
	v := url.Values{}
	for i := 0; i+1 < len(kv); i += 2 {
		v.Add(kv[i], kv[i+1])
	}
	return v.Encode()
}
