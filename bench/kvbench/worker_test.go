package kvbench

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
)

// fakeMember serves the entry endpoints over a shared map, just enough of
// the API to follow what a worker sends, and can be told to answer a
// status instead.
type fakeMember struct {
	mu      sync.Mutex
	entries map[string][]byte
	log     []string // "<member> <method> <path>"
	force   int      // when set, every answer
}

func (f *fakeMember) serve(name string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		f.mu.Lock()
		defer f.mu.Unlock()
		f.log = append(f.log, name+" "+r.Method+" "+r.URL.RequestURI())
		if f.force != 0 {
			w.WriteHeader(f.force)
			return
		}
		key := strings.TrimPrefix(r.URL.Path, "/kv/v1/orders/")
		switch {
		case strings.HasPrefix(r.URL.Path, "/kv/v1/queries/"):
			_, _ = w.Write([]byte("[]"))
		case r.Method == "POST":
			f.entries[r.URL.Query().Get("key")] = body
			w.WriteHeader(201)
		case r.Method == "GET" && f.entries[key] != nil:
			_, _ = w.Write(f.entries[key])
		case r.Method == "GET":
			w.WriteHeader(404)
		case r.Method == "PUT" && r.URL.Query().Get("op") == "CAS":
			var pair struct{ Old, New json.RawMessage }
			_ = json.Unmarshal([]byte(strings.NewReplacer(`"@old"`, `"Old"`, `"@new"`, `"New"`).Replace(string(body))), &pair)
			if string(pair.Old) != string(f.entries[key]) {
				w.WriteHeader(409)
				_, _ = w.Write(f.entries[key])
				return
			}
			f.entries[key] = pair.New
		case r.Method == "PUT":
			f.entries[key] = body
		}
	}
}

// fakeCluster is two members over one map.
func fakeCluster(t *testing.T) (*fakeMember, []string) {
	f := &fakeMember{entries: map[string][]byte{}}
	var urls []string
	for _, name := range []string{"m1", "m2"} {
		s := httptest.NewServer(f.serve(name))
		t.Cleanup(s.Close)
		urls = append(urls, s.URL)
	}
	return f, urls
}

func testWorker(t *testing.T, cfg *Config) *worker {
	t.Helper()
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	tx, err := newTransport(cfg, 1)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(tx.close)
	return newWorker(0, 0, cfg, tx, newQueryPlan(cfg), "run")
}

// TestCASWorker: a CAS reads the current value, then swaps it for the
// next revision with the value read as @old; a lost race is a conflict;
// the requests go to the endpoints in turn.
func TestCASWorker(t *testing.T) {
	f, urls := fakeCluster(t)
	cfg := Default()
	cfg.Endpoints, cfg.Workload, cfg.Keys = urls, CAS, 1
	w := testWorker(t, &cfg)
	key := w.names.name(0)
	f.entries[key] = value(0, 5, cfg.ValueSize)

	if o := w.op(context.Background()); o.class != done || o.kind != opCAS {
		t.Fatalf("cas: %+v", o)
	}
	if rev, _ := revision(f.entries[key]); rev != 6 {
		t.Errorf("after one CAS the stored revision is %d, want 6", rev)
	}
	want := []string{"m1 GET /kv/v1/orders/" + key, "m2 PUT /kv/v1/orders/" + key + "?op=CAS"}
	if strings.Join(f.log, "\n") != strings.Join(want, "\n") {
		t.Errorf("requests:\n%s\nwant:\n%s", strings.Join(f.log, "\n"), strings.Join(want, "\n"))
	}

	// Another client swaps between our read and our CAS: 409, a conflict.
	f.log = nil
	read := getRequest(cfg.Region, key, false)
	read.keep = true
	a, _ := w.exchange(context.Background(), opCAS, read, 200, false)
	f.entries[key] = value(0, 99, cfg.ValueSize)
	if _, o := w.exchange(context.Background(), opCAS, casRequest(cfg.Region, key, a.body, value(0, 7, cfg.ValueSize)), 200, true); o.class != conflict {
		t.Errorf("a stale @old: %+v, want a conflict", o)
	}

	// A missing key fails the read, named so; an unavailable member is
	// an error of its status.
	delete(f.entries, key)
	if o := w.op(context.Background()); o.class != failed || o.errKind != "read 404" {
		t.Errorf("a missing key: %+v, want failed, read 404", o)
	}
	f.force = 503
	if o := w.op(context.Background()); o.class != failed || o.errKind != "read 503" {
		t.Errorf("503: %+v", o)
	}
}

// TestWorkers: each workload's operation sends its requests and counts
// its entries.
func TestWorkers(t *testing.T) {
	cases := []struct {
		workload Workload
		prefix   string // of every request the operation sends
		entries  int
	}{
		{Put, "PUT /kv/v1/orders/k", 1},
		{Get, "GET /kv/v1/orders/k", 1},
		{PutIfAbsent, "POST /kv/v1/orders?key=knew-run-0-", 1},
		{MultiPut, "PUT /kv/v1/orders/k", 5},
		{Query, "GET /kv/v1/queries/adhoc?q=SELECT", 1},
	}
	for _, c := range cases {
		f, urls := fakeCluster(t)
		cfg := Default()
		cfg.Endpoints, cfg.Workload, cfg.Keys, cfg.KeyPrefix, cfg.Batch = urls, c.workload, 10, "k", 5
		w := testWorker(t, &cfg)
		for i := range cfg.Keys {
			f.entries[w.names.name(i)] = value(i, 0, 0)
		}
		for range 4 {
			if o := w.op(context.Background()); o.class != done || o.entries != c.entries {
				t.Errorf("%s: %+v, want done with %d entries", c.workload, o, c.entries)
			}
		}
		if len(f.log) != 4 {
			t.Errorf("%s: %d requests for 4 operations", c.workload, len(f.log))
		}
		for i, l := range f.log {
			member := []string{"m1", "m2"}[i%2]
			if !strings.HasPrefix(l, member+" "+c.prefix) {
				t.Errorf("%s: request %d is %q, want %s %s...", c.workload, i, l, member, c.prefix)
			}
		}
	}
}

// TestLoadWritesEveryKeyOnce: the load workload's clients take the key
// space in batches from one cursor: every key once, none twice, the last
// batch short.
func TestLoadWritesEveryKeyOnce(t *testing.T) {
	var mu sync.Mutex
	seen := map[string]int{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodGet {
			_, _ = w.Write([]byte(`{"regions":[{"name":"orders","type":"REPLICATE"}]}`))
			return
		}
		path := strings.TrimPrefix(r.URL.Path, "/kv/v1/orders/")
		mu.Lock()
		for _, k := range strings.Split(path, ",") {
			seen[k]++
		}
		mu.Unlock()
		w.WriteHeader(200)
	}))
	defer srv.Close()
	cfg := Default()
	cfg.Workload, cfg.Keys, cfg.Batch, cfg.KeyPrefix, cfg.ValueSize = Load, 1003, 10, "k-", 50
	cfg.Endpoints, cfg.Concurrency, cfg.Duration = []string{srv.URL}, []int{4}, 10*time.Second
	res, err := Run(context.Background(), cfg, Output{})
	if err != nil {
		t.Fatal(err)
	}
	if len(seen) != 1003 {
		t.Errorf("%d distinct keys written, want 1003", len(seen))
	}
	for k, n := range seen {
		if n != 1 {
			t.Errorf("key %s written %d times", k, n)
		}
	}
	if len(res) != 1 || res[0].OK != 101 || res[0].Errors != 0 {
		t.Errorf("results %+v; want 101 requests (100 of 10 keys and one of 3), no error", res)
	}
}
