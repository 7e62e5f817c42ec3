package kvrest

import (
	"encoding/json"
	"math/rand/v2"
	"net/url"
	"strings"
	"testing"

	"github.com/kvnode/kvnode/bench/kvbench"
)

// TestRequests pins every request a workload sends: method, path and
// query (escaped as the API decodes them: once), body.
func TestRequests(t *testing.T) {
	v := []byte(`{"a":1}`)
	w := []byte(`{"a":2}`)
	cases := []struct {
		name string
		got  request
		want request
	}{
		{"put is an upsert, no op", putRequest("orders", "k1", v),
			request{method: "PUT", path: "/kv/v1/orders/k1", body: v, key: "k1"}},
		{"put escapes the key", putRequest("orders", "a b/é%", v),
			request{method: "PUT", path: "/kv/v1/orders/a%20b%2F%C3%A9%25", body: v, key: "a b/é%"}},
		{"linearizable get", getRequest("orders", "k1", false),
			request{method: "GET", path: "/kv/v1/orders/k1", key: "k1"}},
		{"stale get", getRequest("orders", "k1", true),
			request{method: "GET", path: "/kv/v1/orders/k1?consistency=stale", key: "k1"}},
		{"put-if-absent", createRequest("orders", "new 1&x", v),
			request{method: "POST", path: "/kv/v1/orders?key=new+1%26x", body: v, key: "new 1&x"}},
		{"cas", casRequest("orders", "k1", v, w),
			request{method: "PUT", path: "/kv/v1/orders/k1?op=CAS", body: []byte(`{"@old":{"a":1},"@new":{"a":2}}`), key: "k1"}},
		{"multi-key put", multiPutRequest("orders", []string{"k1", "k 2", "k3"}, [][]byte{v, w, v}),
			request{method: "PUT", path: "/kv/v1/orders/k1,k%202,k3", body: []byte(`[{"a":1},{"a":2},{"a":1}]`), key: "k1"}},
		{"ad-hoc query", adhocQueryRequest("SELECT * FROM /orders o WHERE o.d LIKE '%x'", false),
			request{method: "GET", path: "/kv/v1/queries/adhoc?q=SELECT+%2A+FROM+%2Forders+o+WHERE+o.d+LIKE+%27%25x%27"}},
		{"stale ad-hoc query", adhocQueryRequest("SELECT 1", true),
			request{method: "GET", path: "/kv/v1/queries/adhoc?q=SELECT+1&consistency=stale"}},
		{"named query run", namedQueryRequest("q 1", []int{3, 14}, false),
			request{method: "POST", path: "/kv/v1/queries/q%201", body: []byte(`[{"@type":"int","@value":3},{"@type":"int","@value":14}]`)}},
		{"named query run without binds", namedQueryRequest("q", nil, true),
			request{method: "POST", path: "/kv/v1/queries/q?consistency=stale", body: []byte(`[]`)}},
		{"store a named query", createQueryRequest("q", "SELECT * FROM /orders"),
			request{method: "POST", path: "/kv/v1/queries?id=q&q=SELECT+%2A+FROM+%2Forders", keep: true}},
		{"update a named query", updateQueryRequest("q", "SELECT 1"),
			request{method: "PUT", path: "/kv/v1/queries/q?q=SELECT+1"}},
		{"create a region", createRegionRequest("events", "PARTITION"),
			request{method: "POST", path: "/management/v1/regions", body: []byte(`{"name":"events","type":"PARTITION"}`), keep: true}},
	}
	for _, c := range cases {
		g, w := c.got, c.want
		if g.method != w.method || g.path != w.path || string(g.body) != string(w.body) || g.key != w.key || g.keep != w.keep {
			t.Errorf("%s:\n got %s %s %s key=%q keep=%v\nwant %s %s %s key=%q keep=%v", c.name,
				g.method, g.path, g.body, g.key, g.keep, w.method, w.path, w.body, w.key, w.keep)
		}
		if g.body != nil && !json.Valid(g.body) {
			t.Errorf("%s: body %s is not JSON", c.name, g.body)
		}
		if _, err := url.ParseRequestURI("http://h" + g.path); err != nil {
			t.Errorf("%s: path %s: %v", c.name, g.path, err)
		}
	}
}

// TestQueryPlan: {region} is the region; $n is the same customer id
// wherever it appears, written into an ad-hoc text or bound in a named
// run.
func TestQueryPlan(t *testing.T) {
	cfg := kvbench.Default()
	cfg.Region = "events"
	cfg.Query = "SELECT * FROM /{region} o WHERE o.customerId = $2 OR o.customerId > $1 OR o.purchaseOrderNo = $2"
	q := newQueryPlan(&cfg)
	if q.params != 2 || q.text != "SELECT * FROM /events o WHERE o.customerId = $2 OR o.customerId > $1 OR o.purchaseOrderNo = $2" {
		t.Fatalf("plan: %d params, text %q", q.params, q.text)
	}
	r := q.request([]int{7, 42})
	text, _ := url.ParseQuery(strings.TrimPrefix(r.path, "/kv/v1/queries/adhoc?"))
	if want := "SELECT * FROM /events o WHERE o.customerId = 42 OR o.customerId > 7 OR o.purchaseOrderNo = 42"; text.Get("q") != want || r.method != "GET" {
		t.Errorf("ad-hoc: %s %s, q=%q, want %q", r.method, r.path, text.Get("q"), want)
	}

	cfg.NamedQuery, cfg.QueryID, cfg.Stale = true, "byCustomer", true
	q = newQueryPlan(&cfg)
	r = q.request([]int{7, 42})
	if r.method != "POST" || r.path != "/kv/v1/queries/byCustomer?consistency=stale" || string(r.body) != `[{"@type":"int","@value":7},{"@type":"int","@value":42}]` {
		t.Errorf("named: %s %s %s", r.method, r.path, r.body)
	}

	rng := rand.New(rand.NewPCG(1, 1))
	seen := map[int]bool{}
	for range 1000 {
		b := q.binds(rng)
		if len(b) != 2 || b[0] < 0 || b[0] >= kvbench.Customers {
			t.Fatalf("binds %v", b)
		}
		seen[b[0]] = true
	}
	if len(seen) < kvbench.Customers/2 {
		t.Errorf("binds drew %d different customers in 1000 draws", len(seen))
	}

	cfg.Query, cfg.NamedQuery, cfg.Stale = "SELECT COUNT(*) FROM /{region}", false, false
	if q = newQueryPlan(&cfg); q.params != 0 || !strings.HasSuffix(q.request(q.binds(rng)).path, "q=SELECT+COUNT%28%2A%29+FROM+%2Fevents") {
		t.Errorf("no placeholders: %d params, %s", q.params, q.request(nil).path)
	}
}
