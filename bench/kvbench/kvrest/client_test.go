package kvrest

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kvnode/kvnode/bench/kvbench"
)

// fakeMember serves the entry endpoints over a shared map, just enough of
// the API to follow what a client sends, and can be told to answer a
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
			_, _ = w.Write([]byte(`{"cause":"forced"}`))
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

// testClient is client 0 of a target dialed for cfg.
func testClient(t *testing.T, cfg *kvbench.Config) *client {
	t.Helper()
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	tg, err := Dial(cfg, 1)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = tg.Close() })
	return tg.Client(0).(*client)
}

// TestClientCAS: a CAS reads the current value, then swaps it with the
// value read as @old; a lost race is a conflict; the requests go to the
// endpoints in turn.
func TestClientCAS(t *testing.T) {
	f, urls := fakeCluster(t)
	cfg := kvbench.Default()
	cfg.Endpoints, cfg.Workload = urls, kvbench.CAS
	c := testClient(t, &cfg)
	ctx := context.Background()
	f.entries["k"] = []byte(`{"rev":5}`)

	old, err := c.Read(ctx, "k")
	if err != nil || string(old) != `{"rev":5}` {
		t.Fatalf("read: %s, %v", old, err)
	}
	if err := c.CAS(ctx, "k", old, []byte(`{"rev":6}`)); err != nil {
		t.Fatalf("cas: %v", err)
	}
	want := []string{"m1 GET /kv/v1/orders/k", "m2 PUT /kv/v1/orders/k?op=CAS"}
	if strings.Join(f.log, "\n") != strings.Join(want, "\n") {
		t.Errorf("requests:\n%s\nwant:\n%s", strings.Join(f.log, "\n"), strings.Join(want, "\n"))
	}
	// Another client swapped between our read and our CAS: a conflict.
	if err := c.CAS(ctx, "k", old, []byte(`{"rev":7}`)); !errors.Is(err, kvbench.ErrConflict) {
		t.Errorf("a stale @old: %v, want ErrConflict", err)
	}
	// A missing key is a 404; an unavailable member a 503 worth retrying,
	// with the cause the member gave.
	var oe *kvbench.OpError
	if _, err := c.Read(ctx, "gone"); !errors.As(err, &oe) || oe.Kind != "404" || oe.Retry {
		t.Errorf("a missing key: %v", err)
	}
	f.force = 503
	if _, err := c.Read(ctx, "k"); !errors.As(err, &oe) || oe.Kind != "503" || !oe.Retry || !strings.Contains(err.Error(), "forced") {
		t.Errorf("503: %v", err)
	}
}

// TestClientOperations: each operation sends its request, to the
// endpoints in turn.
func TestClientOperations(t *testing.T) {
	f, urls := fakeCluster(t)
	cfg := kvbench.Default()
	cfg.Endpoints, cfg.Workload, cfg.Stale = urls, kvbench.Query, true
	c := testClient(t, &cfg)
	ctx := context.Background()
	v := []byte(`{"a":1}`)
	ops := []struct {
		name, want string
		do         func() error
	}{
		{"put", "PUT /kv/v1/orders/k1", func() error { return c.Put(ctx, "k1", v) }},
		{"stale get", "GET /kv/v1/orders/k1?consistency=stale", func() error { return c.Get(ctx, "k1") }},
		{"create", "POST /kv/v1/orders?key=k2", func() error { return c.Create(ctx, "k2", v) }},
		{"put many", "PUT /kv/v1/orders/k3,k4", func() error { return c.PutMany(ctx, []string{"k3", "k4"}, [][]byte{v, v}) }},
		{"put many of one key", "PUT /kv/v1/orders/k5", func() error { return c.PutMany(ctx, []string{"k5"}, [][]byte{v}) }},
		{"query", "GET /kv/v1/queries/adhoc?q=SELECT", func() error { return c.Query(ctx, rand.New(rand.NewPCG(1, 2))) }},
	}
	for i, op := range ops {
		if err := op.do(); err != nil {
			t.Errorf("%s: %v", op.name, err)
		}
		member := []string{"m1", "m2"}[i%2]
		if got := f.log[len(f.log)-1]; !strings.HasPrefix(got, member+" "+op.want) {
			t.Errorf("%s sent %q, want %s %s...", op.name, got, member, op.want)
		}
	}
	if got := string(f.entries["k3,k4"]); got != `[{"a":1},{"a":1}]` {
		t.Errorf("the multi-key put's body: %s", got)
	}
	// Creating a key that exists is an error of its status.
	f.force = 409
	var oe *kvbench.OpError
	if err := c.Create(ctx, "k2", v); !errors.As(err, &oe) || oe.Kind != "409" {
		t.Errorf("create of an existing key: %v", err)
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
	cfg := kvbench.Default()
	cfg.Workload, cfg.Keys, cfg.Batch, cfg.KeyPrefix, cfg.ValueSize = kvbench.Load, 1003, 10, "k-", 50
	cfg.Endpoints, cfg.Concurrency, cfg.Duration = []string{srv.URL}, []int{4}, 10*time.Second
	res, err := kvbench.Run(context.Background(), cfg, Dial, kvbench.Output{})
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
	if len(res) != 1 || res[0].OK != 101 || res[0].Errors != 0 || res[0].Target != "kvnode" || res[0].RegionType != "REPLICATE" {
		t.Errorf("results %+v; want 101 requests (100 of 10 keys and one of 3), no error", res)
	}
}
