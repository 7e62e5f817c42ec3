package rest

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
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
