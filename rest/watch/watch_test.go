package watch

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/kvnode/kvnode/internal/waitfor"
	"github.com/kvnode/kvnode/region"
)

func ev(typ region.EventType, key, value, old, token string) region.Event {
	e := region.Event{Type: typ, Key: key, Token: token}
	if value != "" {
		e.Value = json.RawMessage(value)
	}
	if old != "" {
		e.Old = json.RawMessage(old)
	}
	return e
}

// expect reads the next block and checks its event type, id and data.
func expect(t *testing.T, c *client, typ, id, data string) block {
	t.Helper()
	b := c.next(t)
	if b.Type != typ || b.ID != id || b.HasID != (id != "") || b.Data != data {
		t.Fatalf("got event %q id %q (has id %v) data %s; want event %q id %q data %s", b.Type, b.ID, b.HasID, b.Data, typ, id, data)
	}
	return b
}

// TestEventsOnTheWire: the headers, the exact bytes of the ready and change
// blocks, and every event type's data (value for create and update, none
// for destroy and expire, no key for clear).
func TestEventsOnTheWire(t *testing.T) {
	hs := newHarness(t, Config{})
	c := hs.watch(t, q("region", "orders"))
	if c.resp.StatusCode != 200 {
		t.Fatalf("status %d, want 200", c.resp.StatusCode)
	}
	for h, want := range map[string]string{"Content-Type": "text/event-stream", "Cache-Control": "no-cache", "X-Accel-Buffering": "no"} {
		if got := c.resp.Header.Get(h); got != want {
			t.Errorf("%s: got %q, want %q", h, got, want)
		}
	}
	w := <-hs.src.watches
	w.send(
		ev(region.EventCreate, "1", `{"total":5}`, "", "0:10.1"),
		ev(region.EventUpdate, "1", `{"total":10.0}`, `{"total":5}`, "0:11.1"),
		ev(region.EventDestroy, "1", "", `{"total":10.0}`, "0:12.1"),
		ev(region.EventExpire, "a\"b\n", "", `{"total":1}`, "0:13.1"),
		ev(region.EventClear, "", "", "", "0:14.1"),
	)
	w.send(ev(region.EventCreate, "<&>", `{"s":"<&>","n":2e3}`, "", "0:15.1"))
	want := "event: ready\nid: t0\ndata: {\"type\":\"ready\",\"region\":\"orders\",\"token\":\"t0\"}\n\n" +
		"event: create\nid: 0:10.1\ndata: {\"type\":\"create\",\"region\":\"orders\",\"key\":\"1\",\"value\":{\"total\":5}}\n\n" +
		"event: update\nid: 0:11.1\ndata: {\"type\":\"update\",\"region\":\"orders\",\"key\":\"1\",\"value\":{\"total\":10.0}}\n\n" +
		"event: destroy\nid: 0:12.1\ndata: {\"type\":\"destroy\",\"region\":\"orders\",\"key\":\"1\"}\n\n" +
		"event: expire\nid: 0:13.1\ndata: {\"type\":\"expire\",\"region\":\"orders\",\"key\":\"a\\\"b\\n\"}\n\n" +
		"event: clear\nid: 0:14.1\ndata: {\"type\":\"clear\",\"region\":\"orders\"}\n\n" +
		"event: create\nid: 0:15.1\ndata: {\"type\":\"create\",\"region\":\"orders\",\"key\":\"<&>\",\"value\":{\"s\":\"<&>\",\"n\":2e3}}\n\n"
	got := make([]byte, len(want))
	if _, err := io.ReadFull(c.p.r, got); err != nil {
		t.Fatalf("read %d bytes: %v (got %q)", len(want), err, got)
	}
	if string(got) != want {
		t.Fatalf("stream:\n%s\nwant:\n%s", got, want)
	}
	waitfor.Cond(t, 5*time.Second, "6 events counted as sent", func() bool {
		_, sent, _ := hs.obs.counts()
		return sent == 6
	})
}

// flushCounter is a ResponseWriter that counts flushes.
type flushCounter struct {
	*httptest.ResponseRecorder
	flushes chan int
	n       int
}

func (f *flushCounter) Flush() {
	f.n++
	f.flushes <- f.n
}

// TestOneFlushPerBatch: the events of one Next go out with one flush.
func TestOneFlushPerBatch(t *testing.T) {
	src := newFakeSource()
	h := New(Config{}, src, nil)
	fc := &flushCounter{ResponseRecorder: httptest.NewRecorder(), flushes: make(chan int, 16)}
	req := httptest.NewRequest(http.MethodGet, "/kv/v1/watch?region=orders", nil)
	done := make(chan error)
	go func() { done <- h.Serve(fc, req, func(string) error { return nil }) }()
	w := <-src.watches
	if n := <-fc.flushes; n != 1 {
		t.Fatalf("got flush %d after ready, want 1", n)
	}
	w.send(ev(region.EventCreate, "a", `{}`, "", "1"), ev(region.EventCreate, "b", `{}`, "", "2"), ev(region.EventCreate, "c", `{}`, "", "3"))
	if n := <-fc.flushes; n != 2 {
		t.Fatalf("got flush %d after one batch, want 2", n)
	}
	w.send(ev(region.EventCreate, "d", `{}`, "", "4"))
	if n := <-fc.flushes; n != 3 {
		t.Fatalf("got flush %d after two batches, want 3", n)
	}
	h.Shutdown()
	if err := <-done; err != nil {
		t.Fatalf("Serve: %v", err)
	}
	if n := <-fc.flushes; n != 4 {
		t.Fatalf("got flush %d after the error event, want 4", n)
	}
	if got := strings.Count(fc.Body.String(), "event: create"); got != 4 {
		t.Errorf("got %d create events, want 4", got)
	}
}

// TestInitialThenReady: initial entries first (no id: they cannot be
// resumed from), then ready with the watch's token; the last event ID a
// browser keeps is that token.
func TestInitialThenReady(t *testing.T) {
	hs := newHarness(t, Config{})
	hs.src.entries["orders"] = [][2]string{{"a", `{"n":1}`}, {"b", `{"n":2}`}, {"us-1", `{"n":3}`}}
	c := hs.watch(t, q("region", "orders", "initial", "true"))
	expect(t, c, "initial", "", `{"type":"initial","region":"orders","key":"a","value":{"n":1}}`)
	b := expect(t, c, "initial", "", `{"type":"initial","region":"orders","key":"b","value":{"n":2}}`)
	if b.LastEventID != "" {
		t.Errorf("last event ID after an initial event: got %q, want none", b.LastEventID)
	}
	expect(t, c, "initial", "", `{"type":"initial","region":"orders","key":"us-1","value":{"n":3}}`)
	b = expect(t, c, "ready", "t0", `{"type":"ready","region":"orders","token":"t0"}`)
	if b.LastEventID != "t0" {
		t.Errorf("last event ID after ready: got %q, want t0", b.LastEventID)
	}
	if got := hs.src.lastAsked(t); !got.Initial || got.From != "" || got.Buffer != DefaultBuffer {
		t.Errorf("Watch was asked %+v, want Initial, no From, Buffer %d", got, DefaultBuffer)
	}

	// The filters apply to the initial entries too.
	c = hs.watch(t, q("region", "orders", "initial", "true", "prefix", "us-"))
	expect(t, c, "initial", "", `{"type":"initial","region":"orders","key":"us-1","value":{"n":3}}`)
	expect(t, c, "ready", "t0", `{"type":"ready","region":"orders","token":"t0"}`)

	// Without initial=true: ready at once.
	c = hs.watch(t, q("region", "orders"))
	expect(t, c, "ready", "t0", `{"type":"ready","region":"orders","token":"t0"}`)
	if hs.src.lastAsked(t).Initial {
		t.Error("Watch was asked for the initial entries without initial=true")
	}
}

// TestKeysAndPrefix: keys= and prefix= narrow the events; a clear passes.
func TestKeysAndPrefix(t *testing.T) {
	hs := newHarness(t, Config{})
	for _, tc := range []struct {
		query string
		want  []string // keys of the events received
	}{
		{q("region", "orders", "keys", "a,c"), []string{"a", "c", ""}},
		{q("region", "orders", "keys", "b"), []string{"b", ""}},
		{q("region", "orders", "prefix", "a"), []string{"a", "ab", ""}},
		{q("region", "orders"), []string{"a", "ab", "b", "c", ""}},
	} {
		t.Run(tc.query, func(t *testing.T) {
			c := hs.watch(t, tc.query)
			c.next(t) // ready
			w := <-hs.src.watches
			w.send(ev(region.EventCreate, "a", `{}`, "", "1"), ev(region.EventCreate, "ab", `{}`, "", "2"),
				ev(region.EventUpdate, "b", `{}`, `{}`, "3"), ev(region.EventDestroy, "c", "", `{}`, "4"),
				ev(region.EventClear, "", "", "", "5"))
			var got []string
			for len(got) < len(tc.want) {
				b := c.next(t)
				k, _ := b.doc(t)["key"].(string)
				got = append(got, k)
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("got keys %q, want %q", got, tc.want)
			}
		})
	}
}

// TestContinuousQuery: a change becomes what it means for the query's
// result, and changes outside it are skipped; keys= narrows a query too.
func TestContinuousQuery(t *testing.T) {
	hs := newHarness(t, Config{})
	hot, cold, bad := `{"hot":true}`, `{"hot":false}`, `{"bad":true}`
	changes := []region.Event{
		ev(region.EventCreate, "k1", hot, "", "1"),   // enters: create
		ev(region.EventCreate, "k2", cold, "", "2"),  // outside: skipped
		ev(region.EventUpdate, "k2", hot, cold, "3"), // enters: create
		ev(region.EventUpdate, "k1", hot, hot, "4"),  // stays: update
		ev(region.EventUpdate, "k1", cold, hot, "5"), // leaves: destroy
		ev(region.EventUpdate, "k1", cold, cold, "6"),
		ev(region.EventDestroy, "k2", "", hot, "7"), // destroyed while matching: destroy
		ev(region.EventDestroy, "k3", "", cold, "8"),
		ev(region.EventCreate, "k4", hot, "", "9"),
		ev(region.EventExpire, "k4", "", hot, "10"), // expired while matching: destroy
		ev(region.EventExpire, "k5", "", cold, "11"),
		ev(region.EventCreate, "k6", bad, "", "12"), // cannot be evaluated: does not match
		ev(region.EventClear, "", "", "", "13"),
	}
	want := []string{
		`create 1 {"type":"create","region":"orders","key":"k1","value":{"hot":true}}`,
		`create 3 {"type":"create","region":"orders","key":"k2","value":{"hot":true}}`,
		`update 4 {"type":"update","region":"orders","key":"k1","value":{"hot":true}}`,
		`destroy 5 {"type":"destroy","region":"orders","key":"k1"}`,
		`destroy 7 {"type":"destroy","region":"orders","key":"k2"}`,
		`create 9 {"type":"create","region":"orders","key":"k4","value":{"hot":true}}`,
		`destroy 10 {"type":"destroy","region":"orders","key":"k4"}`,
		`clear 13 {"type":"clear","region":"orders"}`,
	}
	for _, query := range []string{
		q("q", "SELECT * FROM /orders o WHERE o.hot = true"),
		q("query", "hot", "region", "orders"),
	} {
		t.Run(query, func(t *testing.T) {
			c := hs.watch(t, query)
			expect(t, c, "ready", "t0", `{"type":"ready","region":"orders","token":"t0"}`)
			w := <-hs.src.watches
			w.send(changes...)
			for _, line := range want {
				b := c.next(t)
				if got := b.Type + " " + b.ID + " " + b.Data; got != line {
					t.Fatalf("got %s, want %s", got, line)
				}
			}
		})
	}

	// keys= with a query: only k2's part.
	c := hs.watch(t, q("q", "SELECT * FROM /orders o WHERE o.hot = true", "keys", "k2"))
	c.next(t)
	w := <-hs.src.watches
	w.send(changes...)
	for _, line := range []string{
		`create 3 {"type":"create","region":"orders","key":"k2","value":{"hot":true}}`,
		`destroy 7 {"type":"destroy","region":"orders","key":"k2"}`,
		`clear 13 {"type":"clear","region":"orders"}`,
	} {
		if b := c.next(t); b.Type+" "+b.ID+" "+b.Data != line {
			t.Fatalf("got %s %s %s, want %s", b.Type, b.ID, b.Data, line)
		}
	}

	// The initial entries of a query are the matching ones.
	hs.src.entries["orders"] = [][2]string{{"a", cold}, {"b", hot}, {"c", bad}}
	c = hs.watch(t, q("query", "hot", "initial", "true"))
	expect(t, c, "initial", "", `{"type":"initial","region":"orders","key":"b","value":{"hot":true}}`)
	expect(t, c, "ready", "t0", `{"type":"ready","region":"orders","token":"t0"}`)
}

// TestResumeToken: from= resumes; Last-Event-ID, which a browser resends,
// wins over it; initial=true is ignored when resuming.
func TestResumeToken(t *testing.T) {
	hs := newHarness(t, Config{Buffer: 7})
	for _, tc := range []struct {
		name   string
		query  string
		header []string
		want   opened
	}{
		{"from", q("region", "orders", "from", "0:5.1"), nil, opened{From: "0:5.1", Buffer: 7}},
		{"Last-Event-ID wins", q("region", "orders", "from", "0:5.1"), []string{"Last-Event-ID", "0:9.2"}, opened{From: "0:9.2", Buffer: 7}},
		{"Last-Event-ID alone", q("region", "orders"), []string{"Last-Event-ID", "0:9.2"}, opened{From: "0:9.2", Buffer: 7}},
		{"resume ignores initial", q("region", "orders", "initial", "true", "from", "0:5.1"), nil, opened{From: "0:5.1", Buffer: 7}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := hs.watch(t, tc.query, tc.header...)
			expect(t, c, "ready", "t0", `{"type":"ready","region":"orders","token":"t0"}`)
			if got := hs.src.lastAsked(t); got != tc.want {
				t.Errorf("Watch was asked %+v, want %+v", got, tc.want)
			}
		})
	}
}

// TestBrowserReconnect: what a browser's EventSource keeps as the last
// event ID (the last id line: events and keep-alives, not initial
// entries) is what it resends, and the server resumes from it.
func TestBrowserReconnect(t *testing.T) {
	hs := newHarness(t, Config{KeepAlive: 30 * time.Millisecond})
	hs.src.entries["orders"] = [][2]string{{"a", `{}`}}
	c := hs.watch(t, q("region", "orders", "initial", "true"))
	if b := c.next(t); b.Type != "initial" || b.LastEventID != "" {
		t.Fatalf("got %q with last event ID %q, want initial with none", b.Type, b.LastEventID)
	}
	if b := c.next(t); b.Type != "ready" || b.LastEventID != "t0" {
		t.Fatalf("got %q with last event ID %q, want ready with t0", b.Type, b.LastEventID)
	}
	w := <-hs.src.watches
	w.send(ev(region.EventCreate, "b", `{}`, "", "0:7.1"))
	if b := c.next(t); b.LastEventID != "0:7.1" {
		t.Fatalf("last event ID after create: got %q, want 0:7.1", b.LastEventID)
	}
	// A keep-alive dispatches nothing but moves the last event ID.
	w.moveTo("0:8.1") // the watch moved on (events of other keys, say)
	b := c.next(t)
	if b.Type != "" || len(b.Comments) != 1 || b.Comments[0] != "keep-alive" || b.LastEventID != "0:8.1" {
		t.Fatalf("got %+v, want a keep-alive comment that sets the last event ID to 0:8.1", b)
	}
	c.close()
	// The browser reconnects with the URL it opened and Last-Event-ID.
	c = hs.watch(t, q("region", "orders", "initial", "true"), "Last-Event-ID", b.LastEventID)
	expect(t, c, "ready", "t0", `{"type":"ready","region":"orders","token":"t0"}`)
	if got := hs.src.lastAsked(t); got.From != "0:8.1" || got.Initial {
		t.Errorf("the reconnect asked %+v, want From 0:8.1 without initial entries", got)
	}
}

// TestKeepAlive: a silent stream carries a comment with the current token;
// so does one whose events the filters all drop.
func TestKeepAlive(t *testing.T) {
	hs := newHarness(t, Config{KeepAlive: 20 * time.Millisecond})
	c := hs.watch(t, q("region", "orders", "keys", "mine"))
	c.next(t)
	w := <-hs.src.watches
	raw := func() string {
		t.Helper()
		b := c.next(t)
		return fmt.Sprintf("%q %q %v", b.Type, b.ID, b.Comments)
	}
	if got, want := raw(), `"" "t0" [keep-alive]`; got != want {
		t.Fatalf("got %s, want %s", got, want)
	}
	// Events of other keys, continuously: keep-alives still come, with
	// the position those events reached.
	stop := make(chan struct{})
	defer close(stop)
	go func() {
		for i := 1; ; i++ {
			select {
			case <-stop:
				return
			case w.batches <- batch{events: []region.Event{ev(region.EventCreate, "other", `{}`, "", fmt.Sprintf("0:%d.1", i))}}:
				time.Sleep(time.Millisecond) // a steady trickle, not a flood
			}
		}
	}()
	for {
		b := c.next(t)
		if b.Type != "" || len(b.Comments) != 1 {
			t.Fatalf("got %+v, want only keep-alives", b)
		}
		if b.ID != "t0" {
			break // a token the other key's events reached
		}
	}
}

// TestRefusals: errors before the stream are answered as JSON with their
// status, and open nothing.
func TestRefusals(t *testing.T) {
	hs := newHarness(t, Config{OpenTimeout: 50 * time.Millisecond})
	hs.src.errs["gone"] = fmt.Errorf("watch: %w", region.ErrRegionNotFound)
	hs.src.errs["old"] = &region.GoneError{Token: "0:1.1", Oldest: "0:500.1"}
	hs.src.errs["badtoken"] = fmt.Errorf("%w: token %q is not a token of region old", region.ErrInvalid, "x")
	for _, tc := range []struct {
		query  string
		status int
		cause  string
	}{
		{"", 400, "say what to watch"},
		{q("region", ""), 400, "region is empty"},
		{q("region", "orders", "keys", "a", "prefix", "b"), 400, "keys and prefix cannot be used together"},
		{q("region", "orders", "keys", "a,,b"), 400, "empty key"},
		{q("q", "SELECT * FROM /orders", "query", "hot"), 400, "q and query cannot be used together"},
		{q("q", " "), 400, "q (the OQL text) is empty"},
		{q("query", ""), 400, "query (a named query's id) is empty"},
		{q("region", "orders", "binds", "[1]"), 400, "neither was given"},
		{q("q", "SELECT * FROM /orders", "binds", "{"), 400, "binds is not a JSON array"},
		{q("q", "SELECT * FROM /orders", "binds", `[{"@type":"int","@value":"x"}]`), 400, "bind value 1"},
		{q("q", "SELECT * FROM /orders", "binds", `[[1]]`), 400, "bind value 1 is an array"},
		{q("region", "orders", "initial", "yes"), 400, "initial"},
		{q("q", "SELECT 1"), 400, "not a continuous query"},
		{q("q", "SELECT * FROM /orders o", "region", "other"), 400, `region "other" is not the region the query reads ("orders")`},
		{q("query", "nope"), 404, `named query "nope"`},
		{q("query", "leaderless"), 503, "deadline exceeded"},
		{q("region", "gone"), 404, "region not found"},
		{q("region", "badtoken", "from", "x"), 400, "not a token"},
		{q("region", "secret"), 403, "forbidden"},
		{q("q", "SELECT * FROM /secret s"), 403, "forbidden"},
	} {
		t.Run(tc.query, func(t *testing.T) {
			c := hs.watch(t, tc.query)
			body := c.body(t)
			var doc struct{ Cause string }
			if err := json.Unmarshal([]byte(body), &doc); err != nil {
				t.Fatalf("body is not JSON: %v: %s", err, body)
			}
			if c.resp.StatusCode != tc.status || !strings.Contains(doc.Cause, tc.cause) {
				t.Errorf("got %d %q, want %d with a cause containing %q", c.resp.StatusCode, doc.Cause, tc.status, tc.cause)
			}
		})
	}

	// 410: the token is older than the history; the body names the oldest.
	c := hs.watch(t, q("region", "old", "from", "0:1.1"))
	body := c.body(t)
	var gone struct{ Cause, OldestToken string }
	if err := json.Unmarshal([]byte(body), &gone); err != nil {
		t.Fatalf("410 body is not JSON: %v: %s", err, body)
	}
	if c.resp.StatusCode != http.StatusGone || gone.OldestToken != "0:500.1" || !strings.Contains(gone.Cause, "older than the history kept") ||
		c.resp.Header.Get("Content-Type") != "application/json; charset=utf-8" {
		t.Errorf("got %d %s %q, want 410 with oldestToken 0:500.1", c.resp.StatusCode, c.resp.Header.Get("Content-Type"), body)
	}

	if open, _, reasons := hs.obs.counts(); open != 0 || len(reasons) != 0 {
		t.Errorf("refused watches were counted: open %d, ended %v", open, reasons)
	}
	// No continuous queries without a Compiler.
	h := New(Config{}, hs.src, nil)
	rec := httptest.NewRecorder()
	err := h.Serve(rec, httptest.NewRequest("GET", "/kv/v1/watch?q=SELECT+*+FROM+/orders", nil), func(string) error { return nil })
	if !errors.Is(err, region.ErrInvalid) || !strings.Contains(err.Error(), "not served") {
		t.Errorf("q without a Compiler: got %v, want a 400 saying continuous queries are not served", err)
	}
}

// TestBinds: bind values in the query API's form and as plain JSON.
func TestBinds(t *testing.T) {
	got, err := parseBinds(`[5, 2.5, "x", true, null, {"@type":"int","@value":"7"}, {"@type":"String","@value":"y"}, -3e2]`)
	if err != nil {
		t.Fatal(err)
	}
	want := []any{int64(5), 2.5, "x", true, nil, int64(7), "y", -300.0}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got %#v, want %#v", got, want)
	}
	var seen []any
	hs := newHarness(t, Config{Compile: func(text string, binds []any) (string, Matcher, error) {
		seen = binds
		return "orders", hotMatcher{}, nil
	}})
	c := hs.watch(t, q("q", "SELECT * FROM /orders o WHERE o.n = $1", "binds", `[{"@type":"long","@value":9}]`))
	c.next(t)
	if !reflect.DeepEqual(seen, []any{int64(9)}) {
		t.Errorf("the Compiler got binds %#v, want [9]", seen)
	}
}

// TestMaxWatchers: past MaxWatchers a watch is refused at once; a client
// that leaves frees its place (nothing leaks).
func TestMaxWatchers(t *testing.T) {
	hs := newHarness(t, Config{MaxWatchers: 2})
	a := hs.watch(t, q("region", "orders"))
	a.next(t)
	b := hs.watch(t, q("region", "orders"))
	b.next(t)
	c := hs.watch(t, q("region", "orders"))
	if body := c.body(t); c.resp.StatusCode != 503 || !strings.Contains(body, "--max-watchers") {
		t.Fatalf("third watch: got %d %s, want 503 naming --max-watchers", c.resp.StatusCode, body)
	}
	if open, _, _ := hs.obs.counts(); open != 2 {
		t.Errorf("got %d open watches, want 2", open)
	}
	a.close()
	waitfor.Cond(t, 5*time.Second, "the closed watch to be released", func() bool {
		open, _, reasons := hs.obs.counts()
		return open == 1 && reasons[ReasonClient] == 1
	})
	for i := 0; i < 20; i++ {
		d := hs.watch(t, q("region", "orders"))
		if d.resp.StatusCode != 200 {
			t.Fatalf("watch %d after a place was freed: got %d, want 200", i, d.resp.StatusCode)
		}
		d.next(t)
		d.close()
		waitfor.Cond(t, 5*time.Second, "the watch to be released", func() bool {
			open, _, _ := hs.obs.counts()
			return open == 1
		})
	}
	if got := len(hs.h.slots); got != 1 {
		t.Errorf("got %d places taken, want 1", got)
	}
}

// TestSlowConsumer: a watch that fell behind ends with an error event
// that carries its token.
func TestSlowConsumer(t *testing.T) {
	hs := newHarness(t, Config{})
	c := hs.watch(t, q("region", "orders"))
	c.next(t)
	w := <-hs.src.watches
	w.send(ev(region.EventCreate, "a", `{}`, "", "0:4.1"))
	c.next(t)
	w.fail(fmt.Errorf("group 1: %w", region.ErrSlowConsumer))
	b := c.next(t)
	d := b.doc(t)
	if b.Type != "error" || b.ID != "0:4.1" || d["type"] != "error" || d["token"] != "0:4.1" || !strings.Contains(d["cause"].(string), "fell too far behind") {
		t.Fatalf("got %q id %q %s, want an error event with token 0:4.1", b.Type, b.ID, b.Data)
	}
	if rest := c.body(t); rest != "" {
		t.Errorf("got %q after the error event, want the end of the stream", rest)
	}
	waitfor.Cond(t, 5*time.Second, "the watch closed as slow", func() bool {
		open, _, reasons := hs.obs.counts()
		return open == 0 && reasons[ReasonSlow] == 1
	})
	select {
	case <-w.closed:
	case <-time.After(5 * time.Second):
		t.Fatal("the watch was not closed")
	}
}

// TestRegionDestroyed: end, then the stream closes.
func TestRegionDestroyed(t *testing.T) {
	hs := newHarness(t, Config{})
	c := hs.watch(t, q("region", "orders"))
	c.next(t)
	w := <-hs.src.watches
	w.fail(fmt.Errorf("watch orders: %w", region.ErrRegionNotFound))
	expect(t, c, "end", "", `{"type":"end","cause":"region \"orders\" was destroyed"}`)
	if rest := c.body(t); rest != "" {
		t.Errorf("got %q after the end event, want the end of the stream", rest)
	}
	waitfor.Cond(t, 5*time.Second, "the watch closed as region_destroyed", func() bool {
		_, _, reasons := hs.obs.counts()
		return reasons[ReasonRegionDestroyed] == 1
	})
}

// TestShutdown: every stream ends with an error event and its token; a
// watch still opening and new watches are refused (503).
func TestShutdown(t *testing.T) {
	hs := newHarness(t, Config{})
	type answer struct {
		status int
		body   string
		err    error
	}
	opening := make(chan answer, 1)
	go func() {
		resp, err := hs.srv.Client().Get(hs.srv.URL + "/kv/v1/watch?" + q("region", "opening"))
		if err != nil {
			opening <- answer{err: err}
			return
		}
		defer resp.Body.Close()
		body, err := io.ReadAll(resp.Body)
		opening <- answer{resp.StatusCode, string(body), err}
	}()
	waitfor.Cond(t, 5*time.Second, "the watch to be opening", func() bool {
		hs.src.mu.Lock()
		defer hs.src.mu.Unlock()
		return len(hs.src.asked) == 1
	})
	c := hs.watch(t, q("region", "orders"))
	c.next(t)
	w := <-hs.src.watches
	w.send(ev(region.EventCreate, "a", `{}`, "", "0:4.1"))
	c.next(t)
	hs.h.Shutdown()
	b := c.next(t)
	d := b.doc(t)
	if b.Type != "error" || d["token"] != "0:4.1" || !strings.Contains(d["cause"].(string), "shutting down") {
		t.Fatalf("got %q %s, want an error event saying the member shuts down, token 0:4.1", b.Type, b.Data)
	}
	waitfor.Cond(t, 5*time.Second, "the watch closed as shutdown", func() bool {
		open, _, reasons := hs.obs.counts()
		return open == 0 && reasons[ReasonShutdown] == 1
	})
	if o := <-opening; o.err != nil || o.status != 503 || !strings.Contains(o.body, "shutting down") {
		t.Errorf("a watch opening at Shutdown: got %d %s (%v), want 503 saying the member shuts down", o.status, o.body, o.err)
	}
	c = hs.watch(t, q("region", "orders"))
	if body := c.body(t); c.resp.StatusCode != 503 || !strings.Contains(body, "shutting down") {
		t.Errorf("a watch after Shutdown: got %d %s, want 503 saying the member shuts down", c.resp.StatusCode, body)
	}
}

// TestClientThatStopsReading: a client that never reads is disconnected
// once a write waits longer than WriteTimeout, and its place is freed.
func TestClientThatStopsReading(t *testing.T) {
	hs := newHarness(t, Config{WriteTimeout: 200 * time.Millisecond})
	conn, err := net.Dial("tcp", hs.srv.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if tc, ok := conn.(*net.TCPConn); ok {
		_ = tc.SetReadBuffer(4 << 10)
	}
	if _, err := fmt.Fprintf(conn, "GET /kv/v1/watch?region=orders HTTP/1.1\r\nHost: x\r\n\r\n"); err != nil {
		t.Fatal(err)
	}
	w := <-hs.src.watches
	value := json.RawMessage(`{"pad":"` + strings.Repeat("x", 64<<10) + `"}`)
	// An endless stream of 64 KiB events; the sockets' buffers hold a few
	// megabytes at most, so the writes block soon.
	go func() {
		for i := 0; i < 10_000; i++ {
			select {
			case w.batches <- batch{events: []region.Event{{Type: region.EventCreate, Key: "k", Value: value, Token: fmt.Sprint(i)}}}:
			case <-w.closed:
				return
			}
		}
	}()
	waitfor.Cond(t, 15*time.Second, "the client that does not read to be disconnected", func() bool {
		open, _, reasons := hs.obs.counts()
		return open == 0 && reasons[ReasonClient] == 1
	})
	<-w.closed
	if got := len(hs.h.slots); got != 0 {
		t.Errorf("got %d places taken after the disconnect, want 0", got)
	}
}

// TestOutlivesServerTimeouts: a stream outlives the server's ReadTimeout
// and WriteTimeout (net/http would cancel it when they pass).
func TestOutlivesServerTimeouts(t *testing.T) {
	hs := newHarness(t, Config{KeepAlive: 20 * time.Millisecond})
	hs.srv.Close()
	srv := httptest.NewUnstartedServer(http.HandlerFunc(hs.serve))
	srv.Config.ReadTimeout = 100 * time.Millisecond
	srv.Config.WriteTimeout = 100 * time.Millisecond
	srv.Start()
	t.Cleanup(srv.Close)
	hs.srv = srv
	c := hs.watch(t, q("region", "orders"))
	c.next(t)
	start := time.Now()
	for time.Since(start) < 500*time.Millisecond {
		if b := c.next(t); len(b.Comments) != 1 {
			t.Fatalf("got %+v, want keep-alives", b)
		}
	}
	w := <-hs.src.watches
	w.send(ev(region.EventCreate, "a", `{}`, "", "9"))
	for {
		if b := c.next(t); b.Type == "create" {
			break
		}
	}
}

// TestStoreShuttingDown: a watch the store ends because the member stops
// ends as a shutdown: an error event with the token.
func TestStoreShuttingDown(t *testing.T) {
	hs := newHarness(t, Config{})
	c := hs.watch(t, q("region", "orders"))
	c.next(t)
	w := <-hs.src.watches
	w.fail(fmt.Errorf("watch group 0: %w", region.ErrShuttingDown))
	b := c.next(t)
	if d := b.doc(t); b.Type != "error" || d["token"] != "t0" || !strings.Contains(d["cause"].(string), "shutting down") {
		t.Fatalf("got %q %s, want an error event saying the member shuts down, token t0", b.Type, b.Data)
	}
	waitfor.Cond(t, 5*time.Second, "the watch closed as shutdown", func() bool {
		_, _, reasons := hs.obs.counts()
		return reasons[ReasonShutdown] == 1
	})
}

// TestWatchFailureThatIsATimeout: a watch that fails with an error
// wrapping context.DeadlineExceeded of its own (a read of a group that
// timed out), before the keep-alive is due, ends the stream with an error
// event: it is not mistaken for the keep-alive's deadline, after which
// the stream would carry keep-alives for ever over a watch that delivers
// nothing any more.
func TestWatchFailureThatIsATimeout(t *testing.T) {
	hs := newHarness(t, Config{KeepAlive: time.Minute})
	c := hs.watch(t, q("region", "orders"))
	c.next(t)
	w := <-hs.src.watches
	w.fail(fmt.Errorf("read of group 1: %w", context.DeadlineExceeded))
	b := c.next(t)
	if b.Type != "error" {
		t.Fatalf("got event %q, comments %q; want an error event", b.Type, b.Comments)
	}
	if d := b.doc(t); d["token"] != "t0" {
		t.Errorf("got token %v, want t0", d["token"])
	}
	waitfor.Cond(t, 5*time.Second, "the watch closed as failed", func() bool {
		_, _, reasons := hs.obs.counts()
		return reasons[ReasonError] == 1
	})
}
