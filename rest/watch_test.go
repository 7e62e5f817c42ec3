package rest

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/kvnode/kvnode/auth"
	"github.com/kvnode/kvnode/region"
	"github.com/kvnode/kvnode/rest/watch"
)

// watchStore serves watches that stay silent until their context ends,
// over the regions "orders" and "other"; every other Store method is
// the embedded nil interface's (not called here).
type watchStore struct {
	Store
}

func (watchStore) Watch(ctx context.Context, name string, opts region.WatchOptions) (region.Watch, error) {
	if name != "orders" && name != "other" {
		return nil, region.ErrRegionNotFound
	}
	return silentWatch{}, nil
}

type silentWatch struct{}

func (silentWatch) Next(ctx context.Context) ([]region.Event, error) {
	<-ctx.Done()
	return nil, ctx.Err()
}
func (silentWatch) Token() string { return "0:1.1" }
func (silentWatch) Close()        {}

// fromRegion is a continuous-query compiler for these tests: the region
// after "FROM /", every entry matching.
func fromRegion(text string, _ []any) (string, watch.Matcher, error) {
	_, after, ok := strings.Cut(text, "FROM /")
	if !ok {
		return "", nil, errors.Join(region.ErrInvalid, errors.New("no FROM"))
	}
	name, _, _ := strings.Cut(after, " ")
	return name, nil, nil
}

// openWatch sends GET path as user and returns the answer, its body left
// open for a stream.
func openWatch(t *testing.T, base, method, path, user, password string) *http.Response {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	t.Cleanup(cancel)
	req, err := http.NewRequestWithContext(ctx, method, base+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	if user != "" {
		req.SetBasicAuth(user, password)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	return resp
}

// readBlock reads one SSE block (up to its empty line).
func readBlock(t *testing.T, r *bufio.Reader) string {
	t.Helper()
	var b strings.Builder
	for {
		line, err := r.ReadString('\n')
		if err != nil {
			t.Fatalf("read the stream: %v (got %q)", err, b.String())
		}
		if line == "\n" {
			return b.String()
		}
		b.WriteString(line)
	}
}

// TestWatchRoute: GET /kv/v1/watch through the whole server: permissions
// on the watched region (the query's for q), 503 with Retry-After past
// --max-watchers, no request deadline, the /geode/v1 alias, other methods
// and paths under watch, and CloseWatches.
func TestWatchRoute(t *testing.T) {
	a := auth.New(securityFile(t))
	a.SetFailureLimit(10_000, time.Minute)
	cfg := Config{Auth: a, RequestTimeout: 50 * time.Millisecond,
		Watch: watch.Config{KeepAlive: 10 * time.Millisecond, Compile: fromRegion}}
	srv := httptest.NewServer(validated(t, New(cfg, watchStore{}, nil, nil).Handler()))
	t.Cleanup(srv.Close)
	sel := func(r string) string { return url.QueryEscape("SELECT * FROM /" + r + " o") }

	for _, tc := range []struct {
		name, method, path, user, password string
		status                             int
	}{
		{"no credentials", "GET", "/kv/v1/watch?region=orders", "", "", 401},
		{"wrong password", "GET", "/kv/v1/watch?region=orders", "reader", "nope", 401},
		{"another region", "GET", "/kv/v1/watch?region=other", "ordersOnly", "o-pw", 403},
		{"another region's query", "GET", "/kv/v1/watch?q=" + sel("other"), "ordersOnly", "o-pw", 403},
		{"its region", "GET", "/kv/v1/watch?region=orders", "ordersOnly", "o-pw", 200},
		{"its region's query", "GET", "/kv/v1/watch?q=" + sel("orders"), "ordersOnly", "o-pw", 200},
		{"reader", "GET", "/kv/v1/watch?region=other&prefix=a", "reader", "reader-pw", 200},
		{"Geode's prefix", "GET", "/geode/v1/watch?region=orders", "reader", "reader-pw", 200},
		{"no region", "GET", "/kv/v1/watch?region=nope", "reader", "reader-pw", 404},
		{"bad parameter", "GET", "/kv/v1/watch?region=orders&keys=a&prefix=b", "reader", "reader-pw", 400},
		{"POST", "POST", "/kv/v1/watch?region=orders", "admin", "admin-pw", 405},
		{"under watch", "GET", "/kv/v1/watch/k1", "admin", "admin-pw", 404},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp := openWatch(t, srv.URL, tc.method, tc.path, tc.user, tc.password)
			if resp.StatusCode != tc.status {
				body, _ := io.ReadAll(resp.Body)
				t.Fatalf("got %d %s, want %d", resp.StatusCode, body, tc.status)
			}
			if tc.status != 200 {
				var doc struct{ Cause string }
				if err := json.NewDecoder(resp.Body).Decode(&doc); err != nil || doc.Cause == "" {
					t.Errorf("body is not {\"cause\"}: %v", err)
				}
				if tc.status == 405 && resp.Header.Get("Allow") != "OPTIONS, GET" {
					t.Errorf("Allow: got %q, want OPTIONS, GET", resp.Header.Get("Allow"))
				}
				return
			}
			if ct := resp.Header.Get("Content-Type"); ct != "text/event-stream" {
				t.Errorf("Content-Type: got %q, want text/event-stream", ct)
			}
			if got := readBlock(t, bufio.NewReader(resp.Body)); !strings.HasPrefix(got, "event: ready\nid: 0:1.1\n") {
				t.Errorf("first block: got %q, want ready", got)
			}
		})
	}

	// A server of two watches at most: the third is refused, to be
	// retried later.
	cfg.Watch.MaxWatchers = 2
	s := New(cfg, watchStore{}, nil, nil)
	srv = httptest.NewServer(validated(t, s.Handler()))
	t.Cleanup(srv.Close)
	r1 := openWatch(t, srv.URL, "GET", "/kv/v1/watch?region=orders", "reader", "reader-pw")
	r2 := openWatch(t, srv.URL, "GET", "/kv/v1/watch?region=orders", "reader", "reader-pw")
	b1, b2 := bufio.NewReader(r1.Body), bufio.NewReader(r2.Body)
	readBlock(t, b1)
	readBlock(t, b2)
	r3 := openWatch(t, srv.URL, "GET", "/kv/v1/watch?region=orders", "reader", "reader-pw")
	body, _ := io.ReadAll(r3.Body)
	if r3.StatusCode != 503 || r3.Header.Get("Retry-After") != "1" || !strings.Contains(string(body), "--max-watchers") {
		t.Errorf("third watch: got %d Retry-After %q %s, want 503, Retry-After 1, naming --max-watchers", r3.StatusCode, r3.Header.Get("Retry-After"), body)
	}

	// The request deadline (50 ms) does not end a stream: keep-alives
	// still come well after it.
	start := time.Now()
	for time.Since(start) < 300*time.Millisecond {
		if got := readBlock(t, b1); !strings.HasPrefix(got, ": keep-alive\n") {
			t.Fatalf("got %q, want keep-alives", got)
		}
	}

	// At shutdown every stream ends with an error event.
	s.CloseWatches()
	for _, b := range []*bufio.Reader{b1, b2} {
		got := readBlock(t, b)
		for strings.HasPrefix(got, ": keep-alive") {
			got = readBlock(t, b)
		}
		if !strings.HasPrefix(got, "event: error\nid: 0:1.1\ndata: {\"type\":\"error\",\"cause\":\"the member is shutting down") {
			t.Errorf("got %q, want an error event saying the member is shutting down", got)
		}
	}
}

// sseEvent is one block of a stream, read by the field rules of the HTML
// standard (enough for these tests: LF line ends, one data line).
type sseEvent struct {
	event, id string
	data      map[string]any
	comment   bool
}

func nextEvent(t *testing.T, r *bufio.Reader) sseEvent {
	t.Helper()
	var e sseEvent
	for _, line := range strings.Split(strings.TrimSuffix(readBlock(t, r), "\n"), "\n") {
		field, value, _ := strings.Cut(line, ":")
		value = strings.TrimPrefix(value, " ")
		switch field {
		case "":
			e.comment = true
		case "event":
			e.event = value
		case "id":
			e.id = value
		case "data":
			if err := json.Unmarshal([]byte(value), &e.data); err != nil {
				t.Fatalf("data is not JSON: %v: %s", err, value)
			}
		}
	}
	return e
}

// nextChange skips keep-alives.
func nextChange(t *testing.T, r *bufio.Reader) sseEvent {
	t.Helper()
	for {
		if e := nextEvent(t, r); !e.comment {
			return e
		}
	}
}

// summary is an event as "type key value".
func (e sseEvent) summary() string {
	s := e.event + " " + fmt.Sprint(e.data["key"])
	if v, ok := e.data["value"]; ok {
		b, _ := json.Marshal(v)
		s += " " + string(b)
	}
	return s
}

// TestWatchEndToEnd: over the real store, a continuous query with a bind
// value (initial entries, then create, update and destroy as entries enter,
// change inside and leave its result), a resumption exactly after a token,
// queries a watch cannot evaluate (400), and the end when the region is
// destroyed.
func TestWatchEndToEnd(t *testing.T) {
	ts := newTestServer(t)
	ts.mkRegion(t, "orders", region.Replicate, "k1", `{"total":5}`, "k2", `{"total":500}`)
	cq := "/kv/v1/watch?" + url.Values{"q": {"SELECT * FROM /orders o WHERE o.total > $1"}, "binds": {"[100]"}}.Encode()

	resp := openWatch(t, ts.base, "GET", cq+"&initial=true", "", "")
	if resp.StatusCode != 200 {
		body, _ := io.ReadAll(resp.Body)
		t.Fatalf("got %d %s, want 200", resp.StatusCode, body)
	}
	r := bufio.NewReader(resp.Body)
	if e := nextChange(t, r); e.summary() != `initial k2 {"total":500}` || e.id != "" {
		t.Fatalf("got %s (id %q), want the initial k2 without an id", e.summary(), e.id)
	}
	if e := nextChange(t, r); e.event != "ready" || e.data["token"] != e.id || e.id == "" {
		t.Fatalf("got %s %v, want ready with its token as id", e.event, e.data)
	}
	put := func(key, value string) {
		t.Helper()
		if got := ts.do(t, "PUT", "/kv/v1/orders/"+key, "application/json", value); got.status != 200 {
			t.Fatalf("PUT %s: %d %s", key, got.status, got.body)
		}
	}
	put("k1", `{"total":200}`)
	put("k1", `{"total":300}`)
	put("k3", `{"total":7}`)
	put("k2", `{"total":1}`)
	if got := ts.do(t, "DELETE", "/kv/v1/orders/k1", "", ""); got.status != 200 {
		t.Fatalf("DELETE k1: %d %s", got.status, got.body)
	}
	var tokens []string
	for _, want := range []string{`create k1 {"total":200}`, `update k1 {"total":300}`, `destroy k2`, `destroy k1`} {
		e := nextChange(t, r)
		if e.summary() != want {
			t.Fatalf("got %s, want %s", e.summary(), want)
		}
		tokens = append(tokens, e.id)
	}

	// Resumed after the create, the watch sends what followed, once.
	resp = openWatch(t, ts.base, "GET", cq+"&from="+url.QueryEscape(tokens[0]), "", "")
	r = bufio.NewReader(resp.Body)
	if e := nextChange(t, r); e.event != "ready" {
		t.Fatalf("got %s, want ready", e.event)
	}
	for i, want := range []string{`update k1 {"total":300}`, `destroy k2`, `destroy k1`} {
		if e := nextChange(t, r); e.summary() != want || e.id != tokens[i+1] {
			t.Fatalf("resumed: got %s (id %s), want %s (id %s)", e.summary(), e.id, want, tokens[i+1])
		}
	}

	for _, tc := range []struct{ q, cause string }{
		{"SELECT count(*) FROM /orders", "not a continuous query"},
		{"SELECT * FROM /orders o ORDER BY o.total", "not a continuous query"},
		{"SELECT * FROM /orders o WHERE o.total >", "syntax error"},
		{"SELECT * FROM /orders o WHERE o.total > $1", "bind"},
	} {
		got := ts.do(t, "GET", "/kv/v1/watch?q="+url.QueryEscape(tc.q), "", "")
		expect{status: 400, cause: tc.cause}.check(t, ts, got)
	}

	// A region watch ends when the region is destroyed.
	resp = openWatch(t, ts.base, "GET", "/kv/v1/watch?region=orders", "", "")
	r = bufio.NewReader(resp.Body)
	nextChange(t, r)
	if got := ts.do(t, "DELETE", "/management/v1/regions/orders", "", ""); got.status != 200 {
		t.Fatalf("destroy orders: %d %s", got.status, got.body)
	}
	if e := nextChange(t, r); e.event != "end" || e.data["cause"] != `region "orders" was destroyed` {
		t.Fatalf("got %s %v, want end: region \"orders\" was destroyed", e.event, e.data)
	}
}
