package client_test

import (
	"cmp"
	"context"
	"encoding/json"
	"io"
	"maps"
	"net/http"
	"net/http/httptest"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kvnode/kvnode/client"
	"github.com/kvnode/kvnode/rest/openapi"
)

// sent is one request the client sent to the stub.
type sent struct {
	method string
	path   string // escaped
	query  []string
}

// apiCalls exercises every exported method of *Client and *Region that
// talks to the cluster, once, against any server. TestClientMatchesOpenAPI
// fails when a method is missing here, so that a new call cannot escape
// the check.
func apiCalls() map[string]func(ctx context.Context, c *client.Client) {
	r := func(c *client.Client) *client.Region { return c.Region("orders") }
	v := map[string]int{"n": 1}
	return map[string]func(ctx context.Context, c *client.Client){
		"Client.Regions":    func(ctx context.Context, c *client.Client) { _, _ = c.Regions(ctx) },
		"Client.RegionInfo": func(ctx context.Context, c *client.Client) { _, _ = c.RegionInfo(ctx, "orders") },
		"Client.CreateRegion": func(ctx context.Context, c *client.Client) {
			_ = c.CreateRegion(ctx, client.RegionInfo{Name: "o", Type: client.Partition})
		},
		"Client.AlterRegion":   func(ctx context.Context, c *client.Client) { _, _ = c.AlterRegion(ctx, "orders", 30) },
		"Client.DestroyRegion": func(ctx context.Context, c *client.Client) { _ = c.DestroyRegion(ctx, "orders") },
		"Client.Routing":       func(ctx context.Context, c *client.Client) { _, _ = c.Routing(ctx) },
		"Client.Watch": func(ctx context.Context, c *client.Client) {
			for range c.Watch(ctx, client.WatchOptions{Region: "orders", Keys: []string{"a", "b"}, Initial: true}) {
				break
			}
			for range c.Watch(ctx, client.WatchOptions{Prefix: "a", Query: "SELECT * FROM /orders o WHERE o.n > $1", Binds: []any{1}, From: "1@0:2.0"}) {
				break
			}
			for range c.Watch(ctx, client.WatchOptions{NamedQuery: "q1"}) {
				break
			}
		},
		"Client.Query": func(ctx context.Context, c *client.Client) {
			_, _ = c.Query(ctx, "SELECT * FROM /orders o WHERE o.n = $1", 1)
		},
		"Client.Ping":    func(ctx context.Context, c *client.Client) { _ = c.Ping(ctx) },
		"Client.Servers": func(ctx context.Context, c *client.Client) { _, _ = c.Servers(ctx) },
		"Queries.List":   func(ctx context.Context, c *client.Client) { _, _ = c.Queries().List(ctx) },
		"Queries.Create": func(ctx context.Context, c *client.Client) { _ = c.Queries().Create(ctx, "q", "SELECT * FROM /o") },
		"Queries.Update": func(ctx context.Context, c *client.Client) { _ = c.Queries().Update(ctx, "q", "SELECT * FROM /o") },
		"Queries.Delete": func(ctx context.Context, c *client.Client) { _ = c.Queries().Delete(ctx, "q") },
		"Queries.Run":    func(ctx context.Context, c *client.Client) { _, _ = c.Queries().Run(ctx, "q", 1, "a") },
		"Queries.RunWith": func(ctx context.Context, c *client.Client) {
			_, _ = c.Queries().RunWith(ctx, "q", []any{1}, client.Stale())
		},
		"Client.QueryWith": func(ctx context.Context, c *client.Client) {
			_, _ = c.QueryWith(ctx, "SELECT * FROM /orders o WHERE o.n = $1", []any{1}, client.Stale())
		},
		"Functions.List": func(ctx context.Context, c *client.Client) { _, _ = c.Functions().List(ctx) },
		"Functions.Run": func(ctx context.Context, c *client.Client) {
			_, _ = c.Functions().Run(ctx, "f", client.Target{Region: "orders", Filter: []string{"a", "b"}}, 1)
			_, _ = c.Functions().Run(ctx, "f", client.Target{Members: []string{"m1"}})
			_, _ = c.Functions().Run(ctx, "f", client.Target{Groups: []string{"east"}})
		},
		"Functions.Deploy": func(ctx context.Context, c *client.Client) {
			_, _ = c.Functions().Deploy(ctx, client.Function{ID: "f", Source: "function execute() {}"})
		},
		"Functions.Remove":       func(ctx context.Context, c *client.Client) { _ = c.Functions().Remove(ctx, "f") },
		"Functions.Deployed":     func(ctx context.Context, c *client.Client) { _, _ = c.Functions().Deployed(ctx, "f") },
		"Functions.ListDeployed": func(ctx context.Context, c *client.Client) { _, _ = c.Functions().ListDeployed(ctx) },
		"Indexes.List":           func(ctx context.Context, c *client.Client) { _, _ = c.Indexes("orders").List(ctx) },
		"Indexes.Get":            func(ctx context.Context, c *client.Client) { _, _ = c.Indexes("orders").Get(ctx, "i") },
		"Indexes.Delete":         func(ctx context.Context, c *client.Client) { _ = c.Indexes("orders").Delete(ctx, "i") },
		"Indexes.Create": func(ctx context.Context, c *client.Client) {
			_ = c.Indexes("orders").Create(ctx, client.Index{Name: "i", Expression: "o.n", From: "/orders o"})
		},
		"Cluster.Status":         func(ctx context.Context, c *client.Client) { _, _ = c.Cluster().Status(ctx) },
		"Cluster.Partitions":     func(ctx context.Context, c *client.Client) { _, _ = c.Cluster().Partitions(ctx) },
		"Cluster.RemoveMember":   func(ctx context.Context, c *client.Client) { _ = c.Cluster().RemoveMember(ctx, "m3") },
		"Cluster.Rebalance":      func(ctx context.Context, c *client.Client) { _, _ = c.Cluster().Rebalance(ctx) },
		"Cluster.GrowPartitions": func(ctx context.Context, c *client.Client) { _, _ = c.Cluster().GrowPartitions(ctx, 8) },
		"Cluster.Operation":      func(ctx context.Context, c *client.Client) { _, _ = c.Cluster().Operation(ctx, "1") },
		"Cluster.Operations":     func(ctx context.Context, c *client.Client) { _, _ = c.Cluster().Operations(ctx) },
		"Cluster.Wait": func(ctx context.Context, c *client.Client) {
			// The stub's record has no status: the wait ends with ctx.
			short, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
			defer cancel()
			_, _ = c.Cluster().Wait(short, "1")
		},
		"Cluster.Backup": func(ctx context.Context, c *client.Client) {
			if rc, err := c.Cluster().Backup(ctx); err == nil {
				_ = rc.Close()
			}
		},
		"Cluster.BackupTo": func(ctx context.Context, c *client.Client) { _, _ = c.Cluster().BackupTo(ctx, io.Discard) },
		"Region.Get":       func(ctx context.Context, c *client.Client) { _, _ = r(c).Get(ctx, "a", client.Stale()) },
		"Region.GetMany":   func(ctx context.Context, c *client.Client) { _, _ = r(c).GetMany(ctx, []string{"a", "b"}) },
		"Region.Put":       func(ctx context.Context, c *client.Client) { _ = r(c).Put(ctx, "a", v, client.WithTTL(time.Minute)) },
		"Region.PutAll": func(ctx context.Context, c *client.Client) {
			_ = r(c).PutAll(ctx, []client.Entry{{Key: "a", Value: v}, {Key: "b", Value: v}})
		},
		"Region.Create": func(ctx context.Context, c *client.Client) {
			_, _ = r(c).Create(ctx, "a", v, client.WithTTL(time.Second))
		},
		"Region.ReplaceAll": func(ctx context.Context, c *client.Client) {
			_ = r(c).ReplaceAll(ctx, []client.Entry{{Key: "a", Value: v}, {Key: "b", Value: v}}, client.AtMostOnce())
		},
		"Region.CompareAndSetAll": func(ctx context.Context, c *client.Client) {
			_ = r(c).CompareAndSetAll(ctx, []client.Swap{{Key: "a", Old: v, New: v}, {Key: "b", Old: v, New: v}})
		},
		"Region.Replace":       func(ctx context.Context, c *client.Client) { _ = r(c).Replace(ctx, "a", v) },
		"Region.CompareAndSet": func(ctx context.Context, c *client.Client) { _ = r(c).CompareAndSet(ctx, "a", v, v) },
		"Region.Delete":        func(ctx context.Context, c *client.Client) { _ = r(c).Delete(ctx, "a", "b") },
		"Region.Clear":         func(ctx context.Context, c *client.Client) { _ = r(c).Clear(ctx) },
		"Region.Count":         func(ctx context.Context, c *client.Client) { _, _ = r(c).Count(ctx, client.Stale()) },
		"Region.Keys": func(ctx context.Context, c *client.Client) {
			for range r(c).Keys(ctx) {
			}
		},
		"Region.Values": func(ctx context.Context, c *client.Client) {
			for range r(c).Values(ctx, 10) {
			}
			for range r(c).Values(ctx, 0) {
			}
		},
	}
}

// notCalls are exported methods that send nothing.
var notCalls = []string{"Client.Close", "Client.Region", "Client.Stats", "Region.Name",
	"Client.Queries", "Client.Functions", "Client.Indexes", "Client.Cluster"}

// TestClientMatchesOpenAPI: every request the client makes is a route of
// the API's OpenAPI document (rest/openapi), with a method it documents
// and only query parameters it declares, so that the two cannot drift.
func TestClientMatchesOpenAPI(t *testing.T) {
	var mu sync.Mutex
	var log []sent
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		var keys []string
		for k := range r.URL.Query() {
			keys = append(keys, k)
		}
		log = append(log, sent{r.Method, r.URL.EscapedPath(), keys})
		mu.Unlock()
		if strings.HasSuffix(r.URL.Path, "/watch") {
			w.Header().Set("Content-Type", "text/event-stream")
			_, _ = w.Write([]byte("event: end\ndata: {\"type\":\"end\",\"cause\":\"stub\"}\n\n"))
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Resource-Count", "0")
		w.Header().Set("Location", "http://stub/kv/v1/orders/a")
		_, _ = w.Write([]byte(`{}`))
	}))
	defer srv.Close()
	c, err := client.New(client.Config{Endpoints: []string{srv.URL}, RetryFor: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	calls := apiCalls()
	for _, typ := range []any{c, c.Region("x"), c.Queries(), c.Functions(), c.Indexes("x"), c.Cluster()} {
		rt := reflect.TypeOf(typ)
		for i := range rt.NumMethod() {
			name := rt.Elem().Name() + "." + rt.Method(i).Name
			if _, ok := calls[name]; !ok && !slices.Contains(notCalls, name) {
				t.Errorf("%s is not exercised by apiCalls: add it", name)
			}
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for name, call := range calls {
		mu.Lock()
		before := len(log)
		mu.Unlock()
		call(ctx, c)
		mu.Lock()
		if len(log) == before {
			t.Errorf("%s sent no request", name)
		}
		mu.Unlock()
	}
	time.Sleep(100 * time.Millisecond) // a routing read started in the background
	doc := loadOpenAPI(t)
	mu.Lock()
	defer mu.Unlock()
	for _, s := range log {
		doc.check(t, s)
	}
}

// apiDoc is the part of the OpenAPI document the check reads.
type apiDoc struct {
	Paths      map[string]map[string]json.RawMessage `json:"paths"`
	Components struct {
		Parameters map[string]param `json:"parameters"`
	} `json:"components"`
}

type param struct {
	Ref  string `json:"$ref"`
	Name string `json:"name"`
	In   string `json:"in"`
}

func loadOpenAPI(t *testing.T) *apiDoc {
	var d apiDoc
	if err := json.Unmarshal(openapi.Document(), &d); err != nil {
		t.Fatalf("the OpenAPI document: %v", err)
	}
	return &d
}

// resolve follows a parameter's $ref.
func (d *apiDoc) resolve(p param) param {
	if name, ok := strings.CutPrefix(p.Ref, "#/components/parameters/"); ok {
		return d.Components.Parameters[name]
	}
	return p
}

// check finds s's route and checks its method and query parameters.
func (d *apiDoc) check(t *testing.T, s sent) {
	t.Helper()
	// A fixed segment wins over a parameter, as in the server's router:
	// /kv/v1/queries is not the region "queries". Map order must not pick.
	tmpls := slices.Collect(maps.Keys(d.Paths))
	slices.SortFunc(tmpls, func(a, b string) int {
		return cmp.Or(cmp.Compare(strings.Count(a, "{"), strings.Count(b, "{")), strings.Compare(a, b))
	})
	for _, tmpl := range tmpls {
		item := d.Paths[tmpl]
		if !matches(tmpl, s.path) {
			continue
		}
		raw, ok := item[strings.ToLower(s.method)]
		if !ok {
			continue // another template may match with this method
		}
		var op struct {
			Parameters []param `json:"parameters"`
		}
		if err := json.Unmarshal(raw, &op); err != nil {
			t.Fatalf("%s %s: %v", s.method, tmpl, err)
		}
		var shared []param
		_ = json.Unmarshal(item["parameters"], &shared)
		declared := map[string]bool{}
		for _, p := range append(shared, op.Parameters...) {
			if p = d.resolve(p); p.In == "query" {
				declared[p.Name] = true
			}
		}
		for _, q := range s.query {
			if !declared[q] {
				t.Errorf("%s %s sends ?%s=, which the document does not declare for %s %s", s.method, s.path, q, s.method, tmpl)
			}
		}
		return
	}
	t.Errorf("%s %s: no route of the OpenAPI document has it", s.method, s.path)
}

// matches reports whether an escaped path fits a template's segments; a
// {param} takes one non-empty segment. A fixed segment wins over a
// parameter as the server's router has it, so /kv/v1/{region}/keys is
// only the listing.
func matches(tmpl, path string) bool {
	ts, ps := strings.Split(tmpl, "/"), strings.Split(path, "/")
	if len(ts) != len(ps) {
		return false
	}
	for i, seg := range ts {
		if strings.HasPrefix(seg, "{") {
			if ps[i] == "" || (seg == "{keys}" && ps[i] == "keys") {
				return false
			}
			continue
		}
		if seg != ps[i] {
			return false
		}
	}
	return true
}
