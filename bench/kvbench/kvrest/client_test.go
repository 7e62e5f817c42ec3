package kvrest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kvnode/kvnode/bench/kvbench"
	"github.com/kvnode/kvnode/client"
)

// fakeMember serves the entry endpoints over a shared map, just enough of
// the API to follow what a client sends, and can be told to answer a
// status instead.
type fakeMember struct {
	mu      sync.Mutex
	entries map[string][]byte
	log     []string // "<member> <method> <path>"
	force   int      // when set, every answer
	outcome string   // the Kvnode-Outcome of a forced answer
	delay   time.Duration
	body    string // the last request's
}

// set changes the member's behaviour under its lock: a handler of an
// earlier request may still be reading it.
func (f *fakeMember) set(change func()) {
	f.mu.Lock()
	defer f.mu.Unlock()
	change()
}

func (f *fakeMember) serve(name string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		f.mu.Lock()
		defer f.mu.Unlock()
		f.log = append(f.log, name+" "+r.Method+" "+r.URL.RequestURI())
		f.body = string(body)
		if f.delay > 0 {
			time.Sleep(f.delay)
		}
		if f.outcome != "" {
			w.Header().Set("Kvnode-Outcome", f.outcome)
		}
		if f.force != 0 {
			w.WriteHeader(f.force)
			_, _ = w.Write([]byte(`{"cause":"forced"}`))
			return
		}
		key := strings.TrimPrefix(r.URL.Path, "/kv/v1/orders/")
		switch {
		case r.URL.Path == "/kv/v1":
			_, _ = w.Write([]byte(`{"regions":[{"name":"orders","type":"REPLICATE"},{"name":"events","type":"PARTITION"}]}`))
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
func testClient(t *testing.T, cfg *kvbench.Config) *kvClient {
	t.Helper()
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	tg, err := Dial(cfg, 1)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = tg.Close() })
	return tg.Client(0).(*kvClient)
}

// alternate checks that the requests logged went to the endpoints in
// turn, and returns their "<method> <path>" without the member.
func (f *fakeMember) alternate(t *testing.T) []string {
	t.Helper()
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []string
	for i, l := range f.log {
		member, req, _ := strings.Cut(l, " ")
		if i > 0 && strings.HasPrefix(f.log[i-1], member+" ") {
			t.Errorf("requests %d and %d both went to %s: %q", i-1, i, member, f.log[i-1:i+1])
		}
		out = append(out, req)
	}
	f.log = nil
	return out
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
	want := []string{"GET /kv/v1/orders/k", "PUT /kv/v1/orders/k?op=CAS"}
	if got := f.alternate(t); strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("requests:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if got := string(f.entries["k"]); got != `{"rev":6}` {
		t.Errorf("after the CAS: %s", got)
	}
	// Another client swapped between our read and our CAS: a conflict.
	if err := c.CAS(ctx, "k", old, []byte(`{"rev":7}`)); !errors.Is(err, kvbench.ErrConflict) {
		t.Errorf("a stale @old: %v, want ErrConflict", err)
	}
	// A missing key is a 404; an unavailable member a 503 worth retrying,
	// with the cause the member gave, sent once (kvbench counts it).
	var oe *kvbench.OpError
	if _, err := c.Read(ctx, "gone"); !errors.As(err, &oe) || oe.Kind != "404" || oe.Retry {
		t.Errorf("a missing key: %v", err)
	}
	f.alternate(t)
	f.set(func() { f.force = 503 })
	if _, err := c.Read(ctx, "k"); !errors.As(err, &oe) || oe.Kind != "503" || !oe.Retry || !strings.Contains(err.Error(), "forced") {
		t.Errorf("503: %v", err)
	}
	if n := len(f.alternate(t)); n != 1 {
		t.Errorf("a 503 was sent %d times, want once", n)
	}
}

// TestClientOperations: each operation sends its request, to the
// endpoints in turn.
func TestClientOperations(t *testing.T) {
	f, urls := fakeCluster(t)
	cfg := kvbench.Default()
	cfg.Endpoints, cfg.Workload, cfg.Stale = urls, kvbench.Put, true
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
	}
	for _, op := range ops {
		if err := op.do(); err != nil {
			t.Errorf("%s: %v", op.name, err)
		}
	}
	got := f.alternate(t)
	for i, op := range ops {
		if i >= len(got) || got[i] != op.want {
			t.Errorf("%s sent %q, want %q", op.name, got, op.want)
		}
	}
	if got := string(f.entries["k3,k4"]); got != `[{"a":1},{"a":1}]` {
		t.Errorf("the multi-key put's body: %s", got)
	}
	if got := string(f.entries["k5"]); got != `{"a":1}` {
		t.Errorf("the one-key put-many's body: %s", got)
	}
	// Creating a key that exists is an error of its status.
	f.set(func() { f.force = 409 })
	var oe *kvbench.OpError
	if err := c.Create(ctx, "k2", v); !errors.As(err, &oe) || oe.Kind != "409" {
		t.Errorf("create of an existing key: %v", err)
	}
}

// TestQuery: the query workload's runs, ad hoc (the customer id written
// into the text by the client) and named (bound as an int; the query
// stored first), stale when asked.
func TestQuery(t *testing.T) {
	f, urls := fakeCluster(t)
	cfg := kvbench.Default()
	cfg.Endpoints, cfg.Workload, cfg.Stale = urls, kvbench.Query, true
	cfg.Region, cfg.Query = "events", "SELECT * FROM /{region} o WHERE o.customerId = $2 OR o.customerId > $1 OR o.n = $2"
	c := testClient(t, &cfg)
	if q := c.t.query; q.params != 2 || q.text != "SELECT * FROM /events o WHERE o.customerId = $2 OR o.customerId > $1 OR o.n = $2" {
		t.Fatalf("plan: %d params, text %q", q.params, q.text)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	if err := c.Query(context.Background(), rng); err != nil {
		t.Fatal(err)
	}
	got := f.alternate(t)
	u, err := url.Parse(got[0][len("GET "):])
	if err != nil || u.Path != "/kv/v1/queries/adhoc" || u.Query().Get("consistency") != "stale" ||
		!regexp.MustCompile(`^SELECT \* FROM /events o WHERE o.customerId = (\d+) OR o.customerId > \d+ OR o.n = (\d+)$`).MatchString(u.Query().Get("q")) {
		t.Errorf("ad hoc: %q", got)
	}

	cfg.NamedQuery, cfg.QueryID = true, "byCustomer"
	tg, err := Dial(&cfg, 1)
	if err != nil {
		t.Fatal(err)
	}
	defer tg.Close()
	if _, err := tg.Prepare(context.Background(), t.Logf); err != nil {
		t.Fatal(err)
	}
	if err := tg.Client(0).(*kvClient).Query(context.Background(), rng); err != nil {
		t.Fatal(err)
	}
	got = f.alternate(t)
	if len(got) != 3 || got[0] != "GET /kv/v1" ||
		!strings.HasPrefix(got[1], "POST /kv/v1/queries?") || got[2] != "POST /kv/v1/queries/byCustomer?consistency=stale" ||
		!regexp.MustCompile(`^\[\{"@type":"int","@value":"?\d+"?\},\{"@type":"int","@value":"?\d+"?\}\]$`).MatchString(f.body) {
		t.Errorf("named: %q, body %s", got, f.body)
	}
}

// TestErrorKinds: how kvbench counts the client's errors. A 503 to a
// put-if-absent that does not certify that nothing was written is an
// unknown outcome, not retried; one that does is a 503 worth retrying; no
// answer is a transport error, a slow one a timeout.
func TestErrorKinds(t *testing.T) {
	f, urls := fakeCluster(t)
	cfg := kvbench.Default()
	cfg.Endpoints, cfg.Timeout = urls, 300*time.Millisecond
	c := testClient(t, &cfg)
	ctx := context.Background()
	v := []byte(`{"a":1}`)
	kind := func(err error) (string, bool) {
		var oe *kvbench.OpError
		if !errors.As(err, &oe) {
			return fmt.Sprintf("not an OpError: %v", err), false
		}
		return oe.Kind, oe.Retry
	}
	f.set(func() { f.force = 503 })
	if k, retry := kind(c.Create(ctx, "k", v)); k != OutcomeUnknown || retry {
		t.Errorf("a 503 to a create: %s (retry %v), want %s", k, retry, OutcomeUnknown)
	}
	f.set(func() { f.outcome = "not-applied" })
	if k, retry := kind(c.Create(ctx, "k", v)); k != "503" || !retry {
		t.Errorf("a 503 not applied: %s (retry %v), want 503", k, retry)
	}
	f.set(func() { f.force, f.outcome, f.delay = 0, "", time.Second })
	if k, retry := kind(c.Put(ctx, "k", v)); k != "timeout" || !retry {
		t.Errorf("a slow member: %s (retry %v), want timeout", k, retry)
	}
	f.set(func() { f.delay = 0 })                  // after the slow request's handler is done
	cfg.Endpoints = []string{"http://127.0.0.1:1"} // nothing listens there
	c = testClient(t, &cfg)
	if k, retry := kind(c.Put(ctx, "k", v)); k != "transport" || !retry {
		t.Errorf("no member: %s (retry %v), want transport", k, retry)
	}
}

// TestLeaderless: the groups of a routing document without a leader are
// counted, and a leader off this machine is refused unless non-loopback
// endpoints are allowed.
func TestLeaderless(t *testing.T) {
	cfg := kvbench.Default()
	rt := &client.Routing{Groups: []client.RoutingGroup{
		{Group: 0, Leader: "m1", URL: "http://127.0.0.1:8081"},
		{Group: 1, Leader: "", URL: ""},
		{Group: 2, Leader: "m2", URL: "http://127.0.0.1:8082/"},
	}}
	if n, err := leaderless(&cfg, rt); n != 1 || err != nil {
		t.Errorf("leaderless = %d, %v; want 1", n, err)
	}
	if n, err := leaderless(&cfg, &client.Routing{}); n != 1 || err != nil {
		t.Errorf("no table yet: %d, %v; want 1", n, err)
	}
	rt.Groups[2].URL = "http://10.1.2.3:8082"
	if _, err := leaderless(&cfg, rt); err == nil || !strings.Contains(err.Error(), "allow-nonloopback") {
		t.Errorf("a non-loopback leader: %v", err)
	}
	cfg.AllowNonLoopback = true
	if n, err := leaderless(&cfg, rt); n != 1 || err != nil {
		t.Errorf("allowed: %d, %v", n, err)
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
