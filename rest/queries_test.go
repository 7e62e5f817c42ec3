package rest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/kvnode/kvnode/oql"
	"github.com/kvnode/kvnode/region"
)

// queryOrders are the entries every query test region holds: order objects
// with a missing member, a null and an empty list among them.
var queryOrders = []string{
	"1001", `{"@type":"org.example.Order","purchaseOrderNo":1001,"customerId":2001,"contact":"Ann Lee","totalPrice":4131.0,"items":[{"itemId":1,"price":10}]}`,
	"1002", `{"@type":"org.example.Order","purchaseOrderNo":1002,"customerId":2002,"contact":"bob","totalPrice":250.5,"items":[]}`,
	"1003", `{"@type":"org.example.Order","purchaseOrderNo":1003,"customerId":2001,"contact":null,"totalPrice":99,"email":"c@x.org"}`,
	"1004", `{"purchaseOrderNo":1004,"customerId":2003,"totalPrice":10.25,"items":[{"itemId":2,"price":5},{"itemId":3,"price":7}]}`,
}

// adhoc is the path of an ad-hoc query, q encoded once as a client does.
func adhoc(q string) string { return "/kv/v1/queries/adhoc?q=" + url.QueryEscape(q) }

// queryCase is one request of the query table.
type queryCase struct {
	name                      string
	method, path, ctype, body string
	want                      expect
	// unordered: compare the result array as a multiset (no ORDER BY).
	unordered bool
}

// TestQueryEndpoints covers every row of rest-details.md's Queries table,
// on a replicated and on a partitioned region: {r} stands for the region,
// {q} for a per-run prefix of query ids.
func TestQueryEndpoints(t *testing.T) {
	ts := newTestServer(t)
	for _, kind := range []region.Kind{region.Replicate, region.Partition} {
		r := "orders" + strings.ToLower(string(kind))
		ts.mkRegion(t, r, kind, queryOrders...)
		pfx := strings.ToLower(string(kind))[:4]
		sub := func(s string) string {
			return strings.NewReplacer("{r}", r, "{q}", pfx, "%7Br%7D", r).Replace(s)
		}
		// Named queries used by the rows below.
		for id, text := range map[string]string{
			"byCustomer": "SELECT o.purchaseOrderNo FROM /{r} o WHERE o.customerId = $1 ORDER BY o.purchaseOrderNo",
			"range":      "SELECT * FROM /{r} o WHERE o.purchaseOrderNo >= $1 AND o.purchaseOrderNo < $2 ORDER BY o.purchaseOrderNo",
			"all":        "SELECT o.purchaseOrderNo FROM /{r} o ORDER BY o.purchaseOrderNo",
			"toUpdate":   "SELECT o.purchaseOrderNo FROM /{r} o WHERE o.purchaseOrderNo = 1001",
			"toDelete":   "SELECT * FROM /{r}",
			"nope":       "SELECT * FROM /doesNotExist",
			"unresolved": "SELECT * FROM /{r} o, /{r} p WHERE totalPrice > 0",
			"evalError":  "SELECT o.purchaseOrderNo FROM /{r} o WHERE o.contact < 5",
		} {
			if err := ts.store.CreateQuery(context.Background(), sub("{q}-"+id), sub(text)); err != nil {
				t.Fatalf("create query %s: %v", id, err)
			}
		}
		json := "application/json"
		for _, tc := range []queryCase{
			// GET /queries/adhoc
			{name: "adhoc select star carries type-class", method: "GET",
				path: adhoc("SELECT * FROM /{r} o WHERE o.purchaseOrderNo <= 1002 ORDER BY o.purchaseOrderNo"),
				want: ok(`[{"@type":"org.example.Order","purchaseOrderNo":1001,"customerId":2001,"contact":"Ann Lee","totalPrice":4131.0,"items":[{"itemId":1,"price":10}],"type-class":"org.example.Order"},`+
					`{"@type":"org.example.Order","purchaseOrderNo":1002,"customerId":2002,"contact":"bob","totalPrice":250.5,"items":[],"type-class":"org.example.Order"}]`, nil)},
			{name: "adhoc object without @type has no type-class", method: "GET",
				path: adhoc("SELECT * FROM /{r} o WHERE o.purchaseOrderNo = 1004"),
				want: ok(`[{"purchaseOrderNo":1004,"customerId":2003,"totalPrice":10.25,"items":[{"itemId":2,"price":5},{"itemId":3,"price":7}]}]`, nil)},
			{name: "adhoc projection struct", method: "GET",
				path: adhoc("SELECT o.purchaseOrderNo AS id, o.totalPrice FROM /{r} o WHERE o.totalPrice > 100 ORDER BY id DESC"),
				want: ok(`[{"id":1002,"totalPrice":250.5},{"id":1001,"totalPrice":4131.0}]`, nil)},
			{name: "adhoc LIKE with % decoded once", method: "GET",
				path: adhoc("SELECT o.contact FROM /{r} o WHERE o.contact LIKE 'A%'"),
				want: ok(`["Ann Lee"]`, nil)},
			{name: "adhoc modulo with % decoded once", method: "GET",
				path: adhoc("SELECT o.purchaseOrderNo FROM /{r} o WHERE o.purchaseOrderNo % 2 = 0 ORDER BY o.purchaseOrderNo"),
				want: ok(`[1002,1004]`, nil)},
			{name: "adhoc count", method: "GET", path: adhoc("SELECT COUNT(*) FROM /{r}"), want: ok(`[4]`, nil)},
			{name: "adhoc group by", method: "GET",
				path: adhoc("SELECT o.customerId AS cid, COUNT(*) AS n FROM /{r} o GROUP BY o.customerId ORDER BY n DESC, cid"),
				want: ok(`[{"cid":2001,"n":2},{"cid":2002,"n":1},{"cid":2003,"n":1}]`, nil)},
			{name: "adhoc join with member collection", method: "GET", unordered: true,
				path: adhoc("SELECT i.itemId FROM /{r} o, o.items i"),
				want: ok(`[1,2,3]`, nil)},
			{name: "adhoc keys", method: "GET", path: adhoc("SELECT k FROM /{r}.keySet k ORDER BY k"),
				want: ok(`["1001","1002","1003","1004"]`, nil)},
			{name: "adhoc stale read", method: "GET", path: adhoc("SELECT COUNT(*) FROM /{r}") + "&consistency=stale", want: ok(`[4]`, nil)},
			{name: "adhoc missing q", method: "GET", path: "/kv/v1/queries/adhoc", want: fails(400, "q")},
			{name: "adhoc empty q", method: "GET", path: "/kv/v1/queries/adhoc?q=", want: fails(400, "q")},
			{name: "adhoc syntax error", method: "GET", path: adhoc("SELECT * FROM"), want: fails(500, "syntax error")},
			{name: "adhoc unknown region", method: "GET", path: adhoc("SELECT * FROM /nope"), want: fails(500, "/nope")},
			{name: "adhoc region without slash", method: "GET", path: adhoc("SELECT * FROM {r}"), want: fails(500, "cannot be resolved")},
			{name: "adhoc type error", method: "GET", path: adhoc("SELECT * FROM /{r} o WHERE o.contact < 5"), want: fails(500, "compare")},
			{name: "adhoc with a placeholder", method: "GET", path: adhoc("SELECT * FROM /{r} o WHERE o.customerId = $1"), want: fails(500, "$1")},
			{name: "adhoc non-collection result", method: "GET", path: adhoc("/{r}.size"), want: fails(500, "not a collection")},
			{name: "adhoc POST is not allowed", method: "POST", path: "/kv/v1/queries/adhoc", want: expect{status: 405, cause: "POST", header: map[string]string{"Allow": "OPTIONS, GET"}}},

			// POST /queries?id=&q=
			{name: "create", method: "POST", path: "/kv/v1/queries?id={q}-new&q=" + url.QueryEscape("SELECT * FROM /{r}"),
				want: expect{status: 201, header: map[string]string{"Location": "{base}/kv/v1/queries/{q}-new"}}},
			{name: "create duplicate id", method: "POST", path: "/kv/v1/queries?id={q}-all&q=" + url.QueryEscape("SELECT 1 FROM /{r}"),
				want: expect{status: 409, body: `{"id":"{q}-all","oql":"SELECT o.purchaseOrderNo FROM /{r} o ORDER BY o.purchaseOrderNo"}`}},
			{name: "create without id", method: "POST", path: "/kv/v1/queries?q=" + url.QueryEscape("SELECT * FROM /{r}"), want: fails(400, "id")},
			{name: "create without q", method: "POST", path: "/kv/v1/queries?id={q}-x", want: fails(400, "q")},
			{name: "create with the text in the body", method: "POST", path: "/kv/v1/queries?id={q}-x", ctype: "text/plain",
				body: "SELECT * FROM /{r}", want: fails(400, "not in the request body")},
			{name: "create with a syntax error", method: "POST", path: "/kv/v1/queries?id={q}-x&q=" + url.QueryEscape("SELECT * FROM /{r} WHERE"),
				want: fails(400, "syntax error at line 1")},

			// POST /queries/{id}
			{name: "run with int binds", method: "POST", path: "/kv/v1/queries/{q}-byCustomer", ctype: json,
				body: `[{"@type":"int","@value":2001}]`, want: ok(`[1001,1003]`, nil)},
			{name: "run with text binds", method: "POST", path: "/kv/v1/queries/{q}-range", ctype: json,
				body: `[{"@type":"int","@value":"1003"},{"@type":"java.lang.Integer","@value":1005}]`,
				want: fails(500, "unknown @type")},
			{name: "run range of two binds", method: "POST", path: "/kv/v1/queries/{q}-range", ctype: json,
				body: `[{"@type":"long","@value":"1003"},{"@type":"INT","@value":1005}]`,
				want: ok(`[{"@type":"org.example.Order","purchaseOrderNo":1003,"customerId":2001,"contact":null,"totalPrice":99,"email":"c@x.org","type-class":"org.example.Order"},`+
					`{"purchaseOrderNo":1004,"customerId":2003,"totalPrice":10.25,"items":[{"itemId":2,"price":5},{"itemId":3,"price":7}]}]`, nil)},
			{name: "run single object as one argument", method: "POST", path: "/kv/v1/queries/{q}-byCustomer", ctype: json,
				body: `{"@type":"int","@value":2003}`, want: ok(`[1004]`, nil)},
			{name: "run a string bind never matches an int", method: "POST", path: "/kv/v1/queries/{q}-byCustomer", ctype: json,
				body: `[{"@type":"String","@value":"2001"}]`, want: ok(`[]`, nil)},
			{name: "run without parameters and no body", method: "POST", path: "/kv/v1/queries/{q}-all", want: ok(`[1001,1002,1003,1004]`, nil)},
			{name: "run unknown id", method: "POST", path: "/kv/v1/queries/{q}-missing", ctype: json, body: `[]`, want: fails(404, "{q}-missing")},
			{name: "run too few binds", method: "POST", path: "/kv/v1/queries/{q}-range", ctype: json,
				body: `[{"@type":"int","@value":1}]`, want: fails(500, "2 parameter(s) (up to $2), 1 bind value(s)")},
			{name: "run too many binds", method: "POST", path: "/kv/v1/queries/{q}-byCustomer", ctype: json,
				body: `[{"@type":"int","@value":1},{"@type":"int","@value":2}]`, want: fails(500, "1 parameter(s) (up to $1), 2 bind value(s)")},
			{name: "run unparsable value", method: "POST", path: "/kv/v1/queries/{q}-byCustomer", ctype: json,
				body: `[{"@type":"int","@value":"two"}]`, want: fails(500, "not a int")},
			{name: "run type name with a space", method: "POST", path: "/kv/v1/queries/{q}-byCustomer", ctype: json,
				body: `[{"@type":"int ","@value":1}]`, want: fails(500, "unknown @type")},
			{name: "run object as @value", method: "POST", path: "/kv/v1/queries/{q}-byCustomer", ctype: json,
				body: `[{"@type":"int","@value":{"a":1}}]`, want: fails(400, "scalar")},
			{name: "run array element not an object", method: "POST", path: "/kv/v1/queries/{q}-byCustomer", ctype: json,
				body: `[5]`, want: fails(400, "not a JSON object")},
			{name: "run body without @type", method: "POST", path: "/kv/v1/queries/{q}-byCustomer", ctype: json,
				body: `[{"@value":5}]`, want: fails(400, "@type")},
			{name: "run body not JSON", method: "POST", path: "/kv/v1/queries/{q}-byCustomer", ctype: json,
				body: `[{"@type":`, want: fails(400, "not a JSON array")},
			{name: "run unknown region", method: "POST", path: "/kv/v1/queries/{q}-nope", want: fails(500, "/doesNotExist")},
			{name: "run unresolvable name", method: "POST", path: "/kv/v1/queries/{q}-unresolved", want: fails(500, "cannot be resolved")},
			{name: "run evaluation error", method: "POST", path: "/kv/v1/queries/{q}-evalError", want: fails(500, "compare")},

			// PUT /queries/{id}?q=
			{name: "update", method: "PUT", path: "/kv/v1/queries/{q}-toUpdate?q=" + url.QueryEscape("SELECT o.purchaseOrderNo FROM /{r} o WHERE o.purchaseOrderNo = 1004"),
				want: expect{status: 200}},
			{name: "updated text runs", method: "POST", path: "/kv/v1/queries/{q}-toUpdate", want: ok(`[1004]`, nil)},
			{name: "update is idempotent", method: "PUT", path: "/kv/v1/queries/{q}-toUpdate?q=" + url.QueryEscape("SELECT o.purchaseOrderNo FROM /{r} o WHERE o.purchaseOrderNo = 1004"),
				want: expect{status: 200}},
			{name: "update unknown id", method: "PUT", path: "/kv/v1/queries/{q}-missing?q=" + url.QueryEscape("SELECT * FROM /{r}"), want: fails(404, "{q}-missing")},
			{name: "update with the text in the body", method: "PUT", path: "/kv/v1/queries/{q}-toUpdate", ctype: "text/plain",
				body: "SELECT * FROM /{r}", want: fails(400, "not in the request body")},
			{name: "update with a syntax error", method: "PUT", path: "/kv/v1/queries/{q}-toUpdate?q=" + url.QueryEscape("SELECT FROM"), want: fails(400, "syntax error")},
			{name: "failed update left the text", method: "POST", path: "/kv/v1/queries/{q}-toUpdate", want: ok(`[1004]`, nil)},

			// DELETE /queries/{id}
			{name: "delete", method: "DELETE", path: "/kv/v1/queries/{q}-toDelete", want: expect{status: 200}},
			{name: "deleted query is gone", method: "POST", path: "/kv/v1/queries/{q}-toDelete", want: fails(404, "{q}-toDelete")},
			{name: "delete unknown id", method: "DELETE", path: "/kv/v1/queries/{q}-toDelete", want: fails(404, "{q}-toDelete")},
		} {
			t.Run(string(kind)+"/"+tc.name, func(t *testing.T) {
				want := tc.want
				want.body, want.cause = sub(want.body), sub(want.cause)
				hdr := map[string]string{}
				for k, v := range want.header {
					hdr[k] = sub(v)
				}
				want.header = hdr
				got := ts.do(t, tc.method, sub(tc.path), tc.ctype, sub(tc.body))
				if tc.unordered && got.status == 200 {
					got.body, want.body = sortedArray(t, got.body), sortedArray(t, want.body)
				}
				want.check(t, ts, got)
			})
		}
	}

	// GET /queries lists every named query of both runs, with Location.
	r := ts.do(t, "GET", "/kv/v1/queries", "", "")
	if r.status != 200 || r.header.Get("Location") != ts.base+"/kv/v1/queries" {
		t.Fatalf("GET /queries = %d, Location %q", r.status, r.header.Get("Location"))
	}
	var doc struct {
		Queries []region.NamedQuery `json:"queries"`
	}
	if err := json.Unmarshal([]byte(r.body), &doc); err != nil {
		t.Fatalf("GET /queries body %s: %v", r.body, err)
	}
	var ids []string
	for _, q := range doc.Queries {
		ids = append(ids, q.ID)
	}
	for _, want := range []string{"repl-all", "repl-new", "repl-toUpdate", "part-range", "part-new"} {
		if !slices.Contains(ids, want) {
			t.Errorf("GET /queries ids = %v, want %s among them", ids, want)
		}
	}
	if slices.Contains(ids, "repl-toDelete") {
		t.Errorf("GET /queries ids = %v still lists a deleted query", ids)
	}
}

// sortedArray re-encodes a JSON array with its elements in a fixed order.
func sortedArray(t *testing.T, body string) string {
	t.Helper()
	var els []json.RawMessage
	if err := json.Unmarshal([]byte(body), &els); err != nil {
		t.Fatalf("result %s is not a JSON array: %v", body, err)
	}
	strs := make([]string, len(els))
	for i, e := range els {
		strs[i] = string(e)
	}
	slices.Sort(strs)
	return "[" + strings.Join(strs, ",") + "]"
}

// TestQueryLimits: past --max-query-time a query is cancelled with a 500,
// and a result larger than the row cap is a 500 that says so.
func TestQueryLimits(t *testing.T) {
	st := newTestStore(t)
	ts := serve(t, Config{MaxQueryTime: 50 * time.Millisecond, MaxQueryRows: 100}, st, nil)
	var kv []string
	for i := range 300 {
		kv = append(kv, fmt.Sprintf("k%03d", i), fmt.Sprintf(`{"i":%d}`, i))
	}
	ts.mkRegion(t, "big", region.Replicate, kv...)

	r := ts.do(t, "GET", adhoc("SELECT * FROM /big b WHERE b.i < 100"), "", "")
	if r.status != 200 {
		t.Fatalf("100 rows = %d %s, want 200", r.status, r.body)
	}
	fails(500, "more than 100 rows").check(t, ts, ts.do(t, "GET", adhoc("SELECT * FROM /big"), "", ""))

	// A cross product of 300^3 rows cannot finish in 50ms.
	start := time.Now()
	fails(500, "maximum query time").check(t, ts, ts.do(t, "GET", adhoc("SELECT COUNT(*) FROM /big a, /big b, /big c WHERE a.i + b.i + c.i = -1"), "", ""))
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("the cancelled query took %v, want it stopped soon after 50ms", d)
	}
}

// watchedStore tells when a query's execution in the store ends, and how.
type watchedStore struct {
	Store
	ended chan error
}

func (w watchedStore) Query(ctx context.Context, c region.Consistency, q *oql.Query, params []any, opt oql.Options) (*oql.Result, error) {
	res, err := w.Store.Query(ctx, c, q, params, opt)
	w.ended <- err
	return res, err
}

// TestQueryStopsWhenTheClientGoesAway: a client that disconnects stops its
// query on the server long before --max-query-time.
func TestQueryStopsWhenTheClientGoesAway(t *testing.T) {
	w := watchedStore{Store: newTestStore(t), ended: make(chan error, 1)}
	ts := serve(t, Config{MaxQueryTime: time.Minute}, w, nil)
	var kv []string
	for i := range 300 {
		kv = append(kv, fmt.Sprintf("k%03d", i), fmt.Sprintf(`{"i":%d}`, i))
	}
	ts.mkRegion(t, "big", region.Replicate, kv...)

	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, "GET", ts.base+adhoc("SELECT COUNT(*) FROM /big a, /big b, /big c WHERE a.i + b.i + c.i = -1"), nil)
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	if resp, err := http.DefaultClient.Do(req); err == nil {
		resp.Body.Close()
		t.Fatalf("the 27-million-row query answered %d within 200ms; want the client to give up first", resp.StatusCode)
	}
	select {
	case err := <-w.ended:
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("the query ended with %v, want context.Canceled", err)
		}
		t.Logf("query stopped %v after the request started", time.Since(start).Round(time.Millisecond))
	case <-time.After(10 * time.Second):
		t.Fatal("the query still runs 10s after its client went away")
	}
}
