package watchbench

import (
	"bytes"
	"context"
	"encoding/base64"
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

// fakeEtcd serves what the watch workload uses of an etcd 3.4 member's
// JSON gateway, in the gateway's format: POST /v3/watch streams one JSON
// object a line (the created response, then a response per write with
// its event, keys and values in base64), POST /v3/kv/put, and /metrics
// (the process and Go collectors' names, as etcd exposes them).
type fakeEtcd struct {
	mu      sync.Mutex
	subs    map[int]chan string // by connection number, from 0
	conns   int
	writes  int            // writes taken, numbered from 1
	keys    map[string]int // writes per key, decoded
	watched []string       // each watch's key and range_end, decoded
	// fault, when set, says what connection conn gets of write n: sent
	// once, twice ("dup"), not at all ("drop"), or an error object that
	// ends the stream ("error").
	fault func(conn, n int) string
}

func newFakeEtcd(t *testing.T) (*fakeEtcd, string) {
	e := &fakeEtcd{subs: map[int]chan string{}, keys: map[string]int{}}
	s := httptest.NewServer(e)
	t.Cleanup(s.Close)
	return e, s.URL
}

func (e *fakeEtcd) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	switch {
	case r.Method == "POST" && r.URL.Path == "/v3/watch":
		e.watch(w, r)
	case r.Method == "POST" && r.URL.Path == "/v3/kv/put":
		e.put(w, r)
	case r.Method == "GET" && r.URL.Path == "/metrics":
		e.mu.Lock()
		n, cpu := len(e.subs), float64(e.writes)/100
		e.mu.Unlock()
		fmt.Fprintf(w, "# TYPE go_goroutines gauge\ngo_goroutines %d\ngo_memstats_heap_inuse_bytes %d\nprocess_resident_memory_bytes 3.145728e+07\nprocess_open_fds %d\nprocess_cpu_seconds_total %g\n", 2*n, 1<<20+n*2048, n+10, cpu)
	default:
		w.WriteHeader(http.StatusNotFound)
		_, _ = io.WriteString(w, "Not Found\n")
	}
}

func (e *fakeEtcd) watch(w http.ResponseWriter, r *http.Request) {
	var req struct {
		Create struct {
			Key      []byte `json:"key"` // base64 in JSON
			RangeEnd []byte `json:"range_end"`
		} `json:"create_request"`
	}
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil || len(req.Create.Key) == 0 {
		w.WriteHeader(http.StatusBadRequest)
		_, _ = io.WriteString(w, `{"error":"bad request","code":3,"message":"bad request"}`)
		return
	}
	e.mu.Lock()
	conn, ch := e.conns, make(chan string, 100_000)
	e.conns++
	e.subs[conn] = ch
	e.watched = append(e.watched, string(req.Create.Key)+" "+string(req.Create.RangeEnd))
	e.mu.Unlock()
	defer func() {
		e.mu.Lock()
		delete(e.subs, conn)
		e.mu.Unlock()
	}()
	w.Header().Set("Content-Type", "application/json")
	_, _ = io.WriteString(w, `{"result":{"header":{"cluster_id":"1","member_id":"2","revision":"1","raft_term":"2"},"created":true}}`+"\n")
	w.(http.Flusher).Flush()
	for {
		select {
		case line := <-ch:
			if _, err := io.WriteString(w, line); err != nil {
				return
			}
			w.(http.Flusher).Flush()
			if strings.HasPrefix(line, `{"error"`) {
				return
			}
		case <-r.Context().Done():
			return
		}
	}
}

func (e *fakeEtcd) put(w http.ResponseWriter, r *http.Request) {
	var req struct {
		Key   []byte `json:"key"`
		Value []byte `json:"value"`
	}
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil || !json.Valid(req.Value) {
		w.WriteHeader(http.StatusBadRequest)
		_, _ = io.WriteString(w, `{"error":"bad value","code":3,"message":"bad value"}`)
		return
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	e.writes++
	e.keys[string(req.Key)]++
	rev := e.writes + 1
	_, _ = fmt.Fprintf(w, `{"header":{"cluster_id":"1","member_id":"2","revision":"%d","raft_term":"2"}}`, rev)
	line := fmt.Sprintf(`{"result":{"header":{"cluster_id":"1","member_id":"2","revision":"%d","raft_term":"2"},"events":[{"kv":{"key":"%s","create_revision":"2","mod_revision":"%d","version":"1","value":"%s"}}]}}`+"\n",
		rev, base64.StdEncoding.EncodeToString(req.Key), rev, base64.StdEncoding.EncodeToString(req.Value))
	for conn, ch := range e.subs {
		what := ""
		if e.fault != nil {
			what = e.fault(conn, e.writes)
		}
		switch what {
		case "drop":
		case "dup":
			ch <- line
			ch <- line
		case "error":
			ch <- `{"error":{"grpc_code":8,"http_code":429,"message":"etcdserver: too many requests","http_status":"Too Many Requests"}}` + "\n"
		default:
			ch <- line
		}
	}
}

func etcdConfig(url string, watchers int) Config {
	c := testConfig(url, watchers)
	c.Target = TargetEtcd
	return c
}

// TestRunEtcd: against etcd's gateway, every watcher watches the
// region's prefix, is live (created) before the first write and receives
// every write once; counts, latencies and memory read as for kvnode.
func TestRunEtcd(t *testing.T) {
	e, url := newFakeEtcd(t)
	var text bytes.Buffer
	res, err := Run(context.Background(), etcdConfig(url, 20), kvbench.Output{Results: &text})
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	got := [7]int64{res.Writes, res.WritesOK, res.Expected, res.Delivered, res.Missing, res.Duplicates, res.Unacknowledged}
	if want := [7]int64{100, 100, 2000, 2000, 0, 0, 0}; got != want {
		t.Errorf("writes, ok, expected, delivered, missing, duplicates, unacknowledged: got %v, want %v", got, want)
	}
	if l := res.Latency; l.P50 <= 0 || l.Max < l.P99 || l.P99 < l.P50 || l.Max > 5000 {
		t.Errorf("delivery latency: got %+v, want 0 < p50 ≤ p99 ≤ max < 5 s", l)
	}
	if res.Target != TargetEtcd || res.MemberCPU <= 0 || res.Memory.Live.Goroutines != 40 || res.Memory.Live.ResidentBytes != 30<<20 {
		t.Errorf("target %q, member CPU %v, live memory %+v; want etcd, > 0, 40 goroutines and 30 MiB resident", res.Target, res.MemberCPU, res.Memory.Live)
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if len(e.watched) != 20 || e.watched[0] != "orders/ orders0" {
		t.Errorf("watches: got %d, the first %q; want 20 of key orders/ to range_end orders0", len(e.watched), e.watched[0])
	}
	if len(e.keys) != 10 || e.keys["orders/kvbench-3"] != 10 {
		t.Errorf("writes per key: got %v, want 10 keys orders/kvbench-0..9 written 10 times each", e.keys)
	}
	if !strings.Contains(text.String(), "watch (etcd) on orders: 20 watchers") || !strings.Contains(text.String(), "2,000 delivered of 2,000 expected") {
		t.Errorf("summary:\n%s\nwant the etcd target, 20 watchers and 2,000 of 2,000 delivered", text.String())
	}
}

// TestRunEtcdMissing: the same accounting as for kvnode: a dropped event
// is missing, a second copy a duplicate, and a stream the gateway ends
// with an error object is reported with its message.
func TestRunEtcdMissing(t *testing.T) {
	e, url := newFakeEtcd(t)
	e.fault = func(conn, n int) string {
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
	cfg := etcdConfig(url, 5)
	cfg.DrainTimeout = time.Second
	res, err := Run(context.Background(), cfg, kvbench.Output{})
	if err != nil {
		t.Fatal(err)
	}
	got := [5]int64{res.Expected, res.Delivered, res.Missing, int64(res.WatchersMissing), res.Duplicates}
	if want := [5]int64{500, 500 - 1 - 50, 1 + 50, 2, 1}; got != want {
		t.Errorf("expected, delivered, missing, watchers missing, duplicates: got %v, want %v", got, want)
	}
	if len(res.Ended) != 1 || res.Ended["stream ended: error: etcdserver: too many requests"] != 1 {
		t.Errorf("ended: got %v, want one stream ended by the gateway's error", res.Ended)
	}
}

// TestEachValue: a response with several events yields each value,
// decoded; one without an end is an error.
func TestEachValue(t *testing.T) {
	line := []byte(`{"result":{"header":{"revision":"9"},"events":[{"kv":{"key":"b3JkZXJzL2E=","value":"eyJhIjoxfQ=="}},{"type":"DELETE","kv":{"key":"b3JkZXJzL2E="}},{"kv":{"key":"b3JkZXJzL2I=","value":"eyJiIjoyfQ=="}}]}}`)
	var got []string
	if _, err := eachValue(line, nil, func(v []byte) { got = append(got, string(v)) }); err != nil || strings.Join(got, " ") != `{"a":1} {"b":2}` {
		t.Errorf("got %q, %v; want [{\"a\":1} {\"b\":2}], nil", got, err)
	}
	if _, err := eachValue([]byte(`{"events":[{"kv":{"value":"eyJhIjox`), nil, func([]byte) {}); err == nil {
		t.Errorf("a value cut short: got nil, want an error")
	}
}

// TestRunEtcdRefusesCreateRegion: etcd has no regions.
func TestRunEtcdRefusesCreateRegion(t *testing.T) {
	cfg := etcdConfig("http://127.0.0.1:1", 1)
	cfg.CreateRegion = "REPLICATE"
	if err := cfg.Validate(); err == nil || !strings.Contains(err.Error(), "no regions") {
		t.Errorf("etcd with --create-region: got %v, want refused", err)
	}
	cfg = etcdConfig("http://127.0.0.1:1", 1)
	cfg.Target = "consul"
	if err := cfg.Validate(); err == nil || !strings.Contains(err.Error(), `target "consul"`) {
		t.Errorf("an unknown target: got %v, want refused", err)
	}
}
