package etcdjson

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kvnode/kvnode/bench/kvbench"
)

// fakeGateway is as much of etcd's JSON gateway as the target uses, over
// a map: requests decoded as the gateway decodes them (bytes in base64),
// answers in its shape (a false "succeeded" left out, as protojson does).
type fakeGateway struct {
	mu     sync.Mutex
	kv     map[string]string
	log    []string // "<member> <path> <key>[ serializable]"
	refuse int      // when set, every answer: this status and etcd's error body
}

type putRequest struct {
	Key, Value []byte
}

func (g *fakeGateway) serve(member string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		g.mu.Lock()
		defer g.mu.Unlock()
		if r.Method != "POST" || r.Header.Get("Content-Type") != "application/json" {
			http.Error(w, "want a JSON POST", 400)
			return
		}
		if g.refuse != 0 {
			w.WriteHeader(g.refuse)
			_, _ = w.Write([]byte(`{"error":"etcdserver: no leader","code":14,"message":"etcdserver: no leader"}`))
			return
		}
		dec := json.NewDecoder(r.Body)
		dec.DisallowUnknownFields()
		switch r.URL.Path {
		case "/v3/kv/put":
			var p putRequest
			if err := dec.Decode(&p); err != nil {
				http.Error(w, err.Error(), 400)
				return
			}
			g.log = append(g.log, member+" put "+string(p.Key))
			g.kv[string(p.Key)] = string(p.Value)
			_, _ = w.Write([]byte(`{"header":{"revision":"2"}}`))
		case "/v3/kv/range":
			var q struct {
				Key          []byte
				Serializable bool
			}
			if err := dec.Decode(&q); err != nil {
				http.Error(w, err.Error(), 400)
				return
			}
			g.log = append(g.log, strings.TrimSpace(member+" range "+string(q.Key)+" "+map[bool]string{true: "serializable"}[q.Serializable]))
			if v, ok := g.kv[string(q.Key)]; ok {
				kvs, _ := json.Marshal([]putRequest{{[]byte(q.Key), []byte(v)}})
				_, _ = w.Write([]byte(`{"header":{},"kvs":` + string(kvs) + `,"count":"1"}`))
				return
			}
			_, _ = w.Write([]byte(`{"header":{}}`))
		case "/v3/kv/txn":
			var txn struct {
				Compare []struct {
					Key            []byte
					Result, Target string
					CreateRevision string `json:"create_revision"`
				}
				Success []struct {
					RequestPut putRequest `json:"request_put"`
				}
			}
			if err := dec.Decode(&txn); err != nil {
				http.Error(w, err.Error(), 400)
				return
			}
			for _, c := range txn.Compare {
				if c.Result != "EQUAL" || c.Target != "CREATE" || c.CreateRevision != "0" {
					http.Error(w, "unexpected compare", 400)
					return
				}
				if _, ok := g.kv[string(c.Key)]; ok {
					g.log = append(g.log, member+" txn refused")
					_, _ = w.Write([]byte(`{"header":{}}`))
					return
				}
			}
			keys := []string{}
			for _, op := range txn.Success {
				g.kv[string(op.RequestPut.Key)] = string(op.RequestPut.Value)
				keys = append(keys, string(op.RequestPut.Key))
			}
			g.log = append(g.log, member+" txn "+strings.Join(keys, ","))
			_, _ = w.Write([]byte(`{"header":{},"succeeded":true,"responses":[]}`))
		default:
			http.NotFound(w, r)
		}
	}
}

func newGateway(t *testing.T) (*fakeGateway, []string) {
	g := &fakeGateway{kv: map[string]string{}}
	var urls []string
	for _, m := range []string{"e1", "e2"} {
		s := httptest.NewServer(g.serve(m))
		t.Cleanup(s.Close)
		urls = append(urls, s.URL)
	}
	return g, urls
}

func dialClient(t *testing.T, cfg *kvbench.Config) kvbench.Client {
	t.Helper()
	tg, err := Dial(cfg, 1)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = tg.Close() })
	return tg.Client(0)
}

// TestOperations: each operation is the gateway request etcd takes, on
// the key "region/key", to the endpoints in turn; a get of a missing key,
// a put-if-absent of an existing one and an error answer fail with their
// kinds.
func TestOperations(t *testing.T) {
	g, urls := newGateway(t)
	cfg := kvbench.Default()
	cfg.Target, cfg.Endpoints, cfg.Region = "etcd", urls, "bench"
	c := dialClient(t, &cfg)
	ctx := context.Background()
	v := []byte(`{"a":"é"}`)
	for _, step := range []struct {
		do   func() error
		log  string
		kind string // of the error, "" for none
	}{
		{func() error { return c.Put(ctx, "k1", v) }, "e1 put bench/k1", ""},
		{func() error { return c.Get(ctx, "k1") }, "e2 range bench/k1", ""},
		{func() error { return c.Get(ctx, "k9") }, "e1 range bench/k9", KindNotFound},
		{func() error { return c.Create(ctx, "k2", v) }, "e2 txn bench/k2", ""},
		{func() error { return c.Create(ctx, "k2", v) }, "e1 txn refused", KindExists},
		{func() error { return c.PutMany(ctx, []string{"k3", "k4"}, [][]byte{v, []byte("{}")}) }, "e2 txn bench/k3,bench/k4", ""},
	} {
		err := step.do()
		var oe *kvbench.OpError
		switch {
		case step.kind == "" && err != nil:
			t.Errorf("%s: %v", step.log, err)
		case step.kind != "" && (!errors.As(err, &oe) || oe.Kind != step.kind):
			t.Errorf("%s: %v, want %s", step.log, err, step.kind)
		}
		if got := g.log[len(g.log)-1]; got != step.log {
			t.Errorf("sent %q, want %q", got, step.log)
		}
	}
	if g.kv["bench/k1"] != string(v) || g.kv["bench/k4"] != "{}" {
		t.Errorf("stored %q", g.kv)
	}

	cfg.Stale = true
	if err := dialClient(t, &cfg).Get(ctx, "k1"); err != nil || g.log[len(g.log)-1] != "e1 range bench/k1 serializable" {
		t.Errorf("a stale get: %v, sent %q", err, g.log[len(g.log)-1])
	}

	g.refuse = 503
	var oe *kvbench.OpError
	if err := c.Put(ctx, "k1", v); !errors.As(err, &oe) || oe.Kind != "503" || !oe.Retry || !strings.Contains(err.Error(), "no leader") {
		t.Errorf("a 503: %v", err)
	}
}

// TestRun: kvbench's workloads over the gateway, preload included (in
// transactions of 100 puts).
func TestRun(t *testing.T) {
	g, urls := newGateway(t)
	for _, w := range []kvbench.Workload{kvbench.Get, kvbench.PutIfAbsent, kvbench.Load} {
		cfg := kvbench.Default()
		cfg.Target, cfg.Endpoints, cfg.Workload, cfg.Keys, cfg.Batch = "etcd", urls, w, 250, 128
		cfg.Concurrency, cfg.MaxOps, cfg.Duration, cfg.Stale = []int{4}, 40, time.Minute, true
		res, err := kvbench.Run(context.Background(), cfg, Dial, kvbench.Output{})
		want := int64(40)
		if w == kvbench.Load {
			want = 2
		}
		if err != nil || len(res) != 1 || res[0].OK != want || res[0].Errors != 0 || res[0].Target != "etcd" {
			t.Errorf("%s: %+v, %v", w, res, err)
		}
	}
	if _, ok := g.kv["orders/kvbench-00000249"]; !ok || len(g.kv) != 250+40 {
		t.Errorf("%d keys stored", len(g.kv))
	}
}

// TestCheck: what no etcd target does is refused before a run.
func TestCheck(t *testing.T) {
	for _, c := range []struct {
		set  func(*kvbench.Config)
		want string
	}{
		{func(c *kvbench.Config) { c.CreateRegion = "PARTITION" }, "no regions"},
		{func(c *kvbench.Config) { c.Route = kvbench.Leader }, "route leader"},
		{func(c *kvbench.Config) { c.User, c.Password = "u", "p" }, "credentials"},
		{func(c *kvbench.Config) { c.Workload, c.Batch = kvbench.Load, 129 }, "at most 128 operations"},
		{func(c *kvbench.Config) { c.Workload, c.Batch = kvbench.MultiPut, 129 }, "at most 128 operations"},
	} {
		cfg := kvbench.Default()
		c.set(&cfg)
		if err := Check(&cfg); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v, want %q", err, c.want)
		}
	}
	cfg := kvbench.Default()
	cfg.Workload, cfg.Batch = kvbench.Load, 128
	if err := Check(&cfg); err != nil {
		t.Errorf("a load in batches of 128: %v", err)
	}
}
