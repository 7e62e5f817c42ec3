package watchbench

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kvnode/kvnode/bench/kvbench"
)

// fakeMember serves what the watch workload uses of a member, as the
// watch contract describes it: GET /kv/v1/watch?region=orders as SSE (a
// comment, `ready`, then an `update` per write to every stream), PUT
// /kv/v1/orders/{key}, and /metrics whose go_goroutines is the number of
// open streams.
type fakeMember struct {
	mu     sync.Mutex
	subs   map[int]chan string // by connection number, from 0
	conns  int
	writes int            // writes taken, numbered from 1
	keys   map[string]int // writes per key
	// maxWatchers, when > 0, refuses more streams with 503.
	maxWatchers int
	// fault, when set, says what connection conn gets of write n: sent
	// once, twice ("dup"), not at all ("drop"), or an error event that
	// ends the stream ("error").
	fault func(conn, n int) string
}

func newFakeMember(t *testing.T) (*fakeMember, string) {
	m := &fakeMember{subs: map[int]chan string{}, keys: map[string]int{}}
	s := httptest.NewServer(m)
	t.Cleanup(s.Close)
	return m, s.URL
}

func (m *fakeMember) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	switch {
	case r.Method == "GET" && r.URL.Path == "/kv/v1/watch":
		m.watch(w, r)
	case r.Method == "PUT" && strings.HasPrefix(r.URL.Path, "/kv/v1/orders/"):
		m.put(w, r)
	case r.Method == "GET" && r.URL.Path == "/metrics":
		m.mu.Lock()
		n, cpu := len(m.subs), float64(m.writes)/100
		m.mu.Unlock()
		fmt.Fprintf(w, "# TYPE go_goroutines gauge\ngo_goroutines %d\ngo_memstats_heap_inuse_bytes %d\nprocess_resident_memory_bytes 2.097152e+07\nprocess_open_fds %d\nprocess_cpu_seconds_total %g\n", n, 1<<20+n*1024, n+10, cpu)
	default:
		w.WriteHeader(http.StatusNotFound)
		_, _ = io.WriteString(w, `{"cause":"not found"}`)
	}
}

func (m *fakeMember) watch(w http.ResponseWriter, r *http.Request) {
	if r.URL.Query().Get("region") != "orders" {
		w.WriteHeader(http.StatusNotFound)
		_, _ = io.WriteString(w, `{"cause":"region \"`+r.URL.Query().Get("region")+`\" not found"}`)
		return
	}
	m.mu.Lock()
	if m.maxWatchers > 0 && len(m.subs) >= m.maxWatchers {
		m.mu.Unlock()
		w.Header().Set("Retry-After", "1")
		w.WriteHeader(http.StatusServiceUnavailable)
		_, _ = io.WriteString(w, `{"cause":"this member already serves 5 watches"}`)
		return
	}
	conn, ch := m.conns, make(chan string, 100_000)
	m.conns++
	m.subs[conn] = ch
	m.mu.Unlock()
	defer func() {
		m.mu.Lock()
		delete(m.subs, conn)
		m.mu.Unlock()
	}()
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	_, _ = io.WriteString(w, ": watching orders\n\nevent: ready\nid: 0:1.0\ndata: {\"type\":\"ready\",\"region\":\"orders\",\"token\":\"0:1.0\"}\n\n")
	w.(http.Flusher).Flush()
	for {
		select {
		case block := <-ch:
			if _, err := io.WriteString(w, block); err != nil {
				return
			}
			w.(http.Flusher).Flush()
			if strings.HasPrefix(block, "event: error") {
				return
			}
		case <-r.Context().Done():
			return
		}
	}
}

func (m *fakeMember) put(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(r.Body)
	if err != nil || !json.Valid(body) {
		w.WriteHeader(http.StatusBadRequest)
		_, _ = io.WriteString(w, `{"cause":"not JSON"}`)
		return
	}
	key := strings.TrimPrefix(r.URL.Path, "/kv/v1/orders/")
	m.mu.Lock()
	defer m.mu.Unlock()
	m.writes++
	m.keys[key]++
	block := fmt.Sprintf("event: update\nid: 0:%d.0\ndata: {\"type\":\"update\",\"region\":\"orders\",\"key\":%q,\"value\":%s}\n\n", m.writes+1, key, body)
	for conn, ch := range m.subs {
		what := ""
		if m.fault != nil {
			what = m.fault(conn, m.writes)
		}
		switch what {
		case "drop":
		case "dup":
			ch <- block
			ch <- block
		case "error":
			ch <- "event: error\ndata: {\"type\":\"error\",\"cause\":\"slow consumer\",\"token\":\"0:1.0\"}\n\n"
		default:
			ch <- block
		}
	}
}

func testConfig(url string, watchers int) Config {
	c := Default()
	c.Endpoints = []string{url}
	c.Watchers, c.Rate, c.Duration, c.Keys, c.Concurrency = watchers, 200, 500*time.Millisecond, 10, []int{4}
	c.DrainTimeout, c.SampleEvery, c.ReadyTimeout = 5*time.Second, 50*time.Millisecond, 10*time.Second
	return c
}

// TestRun: every watcher is live before the first write and receives
// every write once; the counts, latencies and memory samples say so.
func TestRun(t *testing.T) {
	m, url := newFakeMember(t)
	var text, progress bytes.Buffer
	res, err := Run(context.Background(), testConfig(url, 20), kvbench.Output{Results: &text, Progress: &progress})
	if err != nil {
		t.Fatalf("Run: %v\n%s", err, progress.String())
	}
	got := [7]int64{res.Writes, res.WritesOK, res.Expected, res.Delivered, res.Missing, res.Duplicates, res.Unacknowledged}
	if want := [7]int64{100, 100, 2000, 2000, 0, 0, 0}; got != want {
		t.Errorf("writes, ok, expected, delivered, missing, duplicates, unacknowledged: got %v, want %v", got, want)
	}
	if l := res.Latency; l.P50 <= 0 || l.Max < l.P99 || l.P99 < l.P50 || l.Max > 5000 {
		t.Errorf("delivery latency: got %+v, want 0 < p50 ≤ p99 ≤ max < 5 s", l)
	}
	if res.EventsPerSec <= 0 || len(res.Ended) != 0 || res.MemoryError != "" {
		t.Errorf("events/s %v, ended %v, memory error %q; want > 0, none, none", res.EventsPerSec, res.Ended, res.MemoryError)
	}
	// The fake's CPU counter grows 0.01 s a write: 1 s over a window of
	// at least the writes' 0.5 s.
	if res.MemberCPU <= 0 || res.MemberCPU > 2.01 || res.ToolCPU <= 0 {
		t.Errorf("CPU per second: member %v, tool %v; want the member's in (0, 2] and the tool's > 0", res.MemberCPU, res.ToolCPU)
	}
	mem := res.Memory
	if g := [4]float64{mem.Before.Goroutines, mem.Live.Goroutines, mem.Peak.Goroutines, mem.After.Goroutines}; g != [4]float64{0, 20, 20, 0} {
		t.Errorf("the member's open streams before, live, peak, after: got %v, want [0 20 20 0]", g)
	}
	if mem.Live.HeapInuseBytes != 1<<20+20*1024 || mem.Live.ResidentBytes != 20<<20 {
		t.Errorf("live memory: got %+v, want heap %d and resident %d", mem.Live, 1<<20+20*1024, 20<<20)
	}
	m.mu.Lock()
	if len(m.keys) != 10 || m.keys["kvbench-3"] != 10 {
		t.Errorf("writes per key: got %v, want 10 keys kvbench-0..9 written 10 times each", m.keys)
	}
	m.mu.Unlock()
	for _, want := range []string{"20 watchers of " + url, "2,000 delivered of 2,000 expected", "missing 0 (0 watchers)", "watchers live", "delivery latency ms: p50"} {
		if !strings.Contains(text.String(), want) {
			t.Errorf("summary lacks %q:\n%s", want, text.String())
		}
	}
	if !strings.Contains(progress.String(), "20 watchers live") {
		t.Errorf("progress lacks the watchers' start:\n%s", progress.String())
	}
}

// TestRunMissing: a write a watcher never receives is missing (the run
// waits for it, up to the drain timeout), a second copy a duplicate, and
// a stream the member ends is reported with its cause.
func TestRunMissing(t *testing.T) {
	m, url := newFakeMember(t)
	m.fault = func(conn, n int) string {
		switch {
		case conn == 0 && n == 4:
			return "drop"
		case conn == 1 && n == 5:
			return "dup"
		case conn == 2 && n == 51:
			return "error"
		}
		return ""
	}
	cfg := testConfig(url, 5)
	cfg.DrainTimeout = time.Second
	var out bytes.Buffer
	cfg.Label = "faults"
	res, err := Run(context.Background(), cfg, kvbench.Output{Results: &out, JSON: true})
	if err != nil {
		t.Fatal(err)
	}
	// watcher 2 received writes 1..50 (seq 0..49), then the error.
	got := [5]int64{res.Expected, res.Delivered, res.Missing, int64(res.WatchersMissing), res.Duplicates}
	if want := [5]int64{500, 500 - 1 - 50, 1 + 50, 2, 1}; got != want {
		t.Errorf("expected, delivered, missing, watchers missing, duplicates: got %v, want %v", got, want)
	}
	if len(res.Ended) != 1 || res.Ended["stream ended: the member ended the stream: slow consumer"] != 1 {
		t.Errorf("ended: got %v, want one stream ended by its slow-consumer error", res.Ended)
	}
	var doc map[string]any
	if err := json.Unmarshal(out.Bytes(), &doc); err != nil || doc["missing"] != 51.0 || doc["label"] != "faults" || doc["workload"] != "watch" {
		t.Errorf("JSON result: %v, %v; want missing 51, label faults, workload watch", err, doc)
	}
}

// TestRunRefused: watchers the member refuses fail the run before any
// write, saying why.
func TestRunRefused(t *testing.T) {
	m, url := newFakeMember(t)
	m.maxWatchers = 5
	if _, err := Run(context.Background(), testConfig(url, 10), kvbench.Output{}); err == nil || !strings.Contains(err.Error(), "5 of 10 watchers did not start: watch: GET "+url+"/kv/v1/watch: 503") || !strings.Contains(err.Error(), "--max-watchers") {
		t.Errorf("10 watchers of a member serving 5: got %v, want 5 not started with the 503 and --max-watchers", err)
	}
	cfg := testConfig(url, 2)
	cfg.Region = "nope"
	if _, err := Run(context.Background(), cfg, kvbench.Output{}); err == nil || !strings.Contains(err.Error(), `did not start: watch: GET `+url+`/kv/v1/watch: 404: region "nope" not found`) {
		t.Errorf("a region that does not exist: got %v, want the 404 and its cause", err)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.writes != 0 {
		t.Errorf("writes after refused watchers: got %d, want 0", m.writes)
	}
}

func TestValidate(t *testing.T) {
	for _, c := range []struct {
		edit func(*Config)
		want string
	}{
		{func(c *Config) { c.Watchers = 0 }, "watchers must be in"},
		{func(c *Config) { c.Rate = 0 }, "fixed rate"},
		{func(c *Config) { c.Concurrency = []int{1, 2} }, "not a sweep"},
		{func(c *Config) { c.Workload = kvbench.Put }, "runs only"},
		{func(c *Config) { c.Rate, c.Duration, c.MaxOps = 1e6, time.Hour, kvbench.MaxOps }, "rate × duration"},
		{func(c *Config) { c.Endpoints = []string{"http://192.0.2.1:8080"} }, "loopback"},
	} {
		cfg := testConfig("http://127.0.0.1:1", 1)
		c.edit(&cfg)
		if err := cfg.Validate(); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("got %v, want an error with %q", err, c.want)
		}
	}
}
