package rest

import (
	"fmt"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"github.com/kvnode/kvnode/auth"
	"github.com/kvnode/kvnode/region"
)

// Coming from Geode (issue 20): /geode/v1 is /kv/v1, Geode's region types
// and index bodies are understood.

// TestGeodeAlias: every /kv/v1 request works under /geode/v1 with the
// same answer, and the URLs an answer names (Location, Content-Location)
// and the causes that quote the path use /geode/v1.
func TestGeodeAlias(t *testing.T) {
	ts := newTestServer(t)
	ts.mkRegion(t, "orders", region.Replicate, "1", `{"n":1}`)
	g := "/geode/v1"
	for _, tc := range []struct {
		name, method, path, ctype, body string
		want                            expect
	}{
		{"regions", "GET", g, "", "", ok(`{"regions":[{"name":"orders","type":"REPLICATE"}]}`, nil)},
		{"regions, slash", "GET", g + "/", "", "", ok(`{"regions":[{"name":"orders","type":"REPLICATE"}]}`, nil)},
		{"ping", "GET", g + "/ping", "", "", expect{status: 200, noBody: true}},
		{"put", "PUT", g + "/orders/2", ctJSON, `{"n":2}`, expect{status: 200}},
		{"put a/b", "PUT", g + "/orders/a%2Fb", ctJSON, `{"n":3}`, expect{status: 200}},
		{"get", "GET", g + "/orders/2", "", "", ok(`{"n":2}`, map[string]string{"Content-Location": "{base}/geode/v1/orders/2"})},
		{"get a/b", "GET", g + "/orders/a%2Fb", "", "", ok(`{"n":3}`, map[string]string{"Content-Location": "{base}/geode/v1/orders/a%2Fb"})},
		{"get several", "GET", g + "/orders/1,2", "", "", ok(`{"orders":[{"n":1},{"n":2}]}`, map[string]string{"Content-Location": "{base}/geode/v1/orders/1,2"})},
		{"list", "GET", g + "/orders?limit=ALL", "", "", ok(`{"orders":[{"n":1},{"n":2},{"n":3}]}`, map[string]string{"Content-Location": "{base}/geode/v1/orders/1,2,a%2Fb"})},
		{"keys", "GET", g + "/orders/keys", "", "", ok(`{"keys":["1","2","a/b"]}`, map[string]string{"Location": "{base}/geode/v1/orders/keys"})},
		{"count", "HEAD", g + "/orders", "", "", expect{status: 200, noBody: true, header: map[string]string{"Resource-Count": "3"}}},
		{"create", "POST", g + "/orders?key=4", ctJSON, `{"n":4}`, expect{status: 201, header: map[string]string{"Location": "{base}/geode/v1/orders/4"}}},
		{"create, exists", "POST", g + "/orders?key=4", ctJSON, `{"n":5}`, expect{status: 409, body: `{"n":4}`, header: map[string]string{"Location": "{base}/geode/v1/orders/4"}}},
		{"cas mismatch", "PUT", g + "/orders/4?op=CAS", ctJSON, `{"@old":{"n":0},"@new":{"n":6}}`, expect{status: 409, body: `{"n":4}`, header: map[string]string{"Location": "{base}/geode/v1/orders/4"}}},
		{"query", "POST", g + "/queries?id=big&q=" + url.QueryEscape("SELECT o.n FROM /orders o WHERE o.n > $1 ORDER BY o.n"), "", "",
			expect{status: 201, header: map[string]string{"Location": "{base}/geode/v1/queries/big"}}},
		{"queries", "GET", g + "/queries", "", "", ok(`{"queries":[{"id":"big","oql":"SELECT o.n FROM /orders o WHERE o.n > $1 ORDER BY o.n"}]}`, map[string]string{"Location": "{base}/geode/v1/queries"})},
		{"run query", "POST", g + "/queries/big", ctJSON, `[{"@type":"int","@value":1}]`, ok(`[2,3,4]`, nil)},
		{"adhoc", "GET", g + "/queries/adhoc?q=" + url.QueryEscape("SELECT COUNT(*) FROM /orders"), "", "", ok(`[4]`, nil)},
		{"servers", "GET", g + "/servers", "", "", ok(`["http://10.0.0.1:8080","http://10.0.0.2:8080"]`, map[string]string{"Location": "{base}/geode/v1/servers"})},
		{"the document", "GET", g + "/openapi.json", "", "", expect{status: 200, body: ts.do(t, "GET", "/kv/v1/openapi.json", "", "").body}},
		{"delete", "DELETE", g + "/orders/4", "", "", expect{status: 200}},
		{"no route", "GET", g + "/orders/", "", "", fails(404, "no resource at GET /geode/v1/orders/")},
		{"wrong method", "PUT", g + "/orders/keys", ctJSON, `{}`,
			expect{status: 405, cause: "method PUT is not allowed on /geode/v1/orders/keys", header: map[string]string{"Allow": "OPTIONS, GET"}}},
		{"unknown region", "DELETE", g + "/nope", "", "", fails(404, "region not found")},
		{"not the prefix", "GET", "/geode/v10/orders", "", "", fails(404, "/geode/v10/orders")},
		{"not the prefix either", "GET", "/geode/v1orders", "", "", fails(404, "/geode/v1orders")},
		// Geode's management API is /management/v1 too: not aliased.
		{"management keeps its path", "GET", "/geode/v1/management/v1/regions", "", "", fails(404, `region "management": region not found`)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.want.check(t, ts, ts.do(t, tc.method, tc.path, tc.ctype, tc.body))
		})
	}
	// The same data under /kv/v1, with /kv/v1 URLs.
	ok(`{"n":2}`, map[string]string{"Content-Location": "{base}/kv/v1/orders/2"}).check(t, ts, ts.do(t, "GET", "/kv/v1/orders/2", "", ""))
}

// TestGeodeAliasUnderSecurity: the alias has /kv/v1's permissions: the
// probe is open, the rest needs credentials and the permission.
func TestGeodeAliasUnderSecurity(t *testing.T) {
	st := newTestStore(t)
	ran := 0
	srv := httptest.NewServer(validated(t, New(Config{Auth: auth.New(securityFile(t)), Functions: fakeFunctions{ran: &ran}}, st, nil, nil).Handler()))
	t.Cleanup(srv.Close)
	anon := &testServer{base: srv.URL, store: st}
	reader := &testServer{base: srv.URL, store: st, user: "reader", password: "reader-pw"}
	admin := &testServer{base: srv.URL, store: st, user: "admin", password: "admin-pw"}
	admin.mkRegion(t, "orders", region.Replicate, "1", `{"n":1}`)

	expect{status: 200, noBody: true}.check(t, anon, anon.do(t, "GET", "/geode/v1/ping", "", ""))
	fails(401, "credentials").check(t, anon, anon.do(t, "GET", "/geode/v1/orders/1", "", ""))
	ok(`{"n":1}`, nil).check(t, reader, reader.do(t, "GET", "/geode/v1/orders/1", "", ""))
	fails(403, "DATA:WRITE:orders:1").check(t, reader, reader.do(t, "PUT", "/geode/v1/orders/1", ctJSON, `{"n":9}`))
	expect{status: 200}.check(t, admin, admin.do(t, "PUT", "/geode/v1/orders/1", ctJSON, `{"n":2}`))
	fails(403, "DATA:WRITE").check(t, reader, reader.do(t, "POST", "/geode/v1/functions/Touch", "", ""))
	ok(`["ok"]`, map[string]string{"Location": "{base}/geode/v1/functions/Touch"}).check(t, admin, admin.do(t, "POST", "/geode/v1/functions/Touch", "", ""))
	ok(`{"functions":["Touch"]}`, map[string]string{"Location": "{base}/geode/v1/functions"}).check(t, reader, reader.do(t, "GET", "/geode/v1/functions", "", ""))
	if ran != 1 {
		t.Errorf("the function ran %d times, want once", ran)
	}
}

// TestGeodeRegionTypes: Geode's region shortcuts that mean REPLICATE or
// PARTITION create that kind of region; those kvnode cannot honour are a
// 400 saying why, and create nothing.
func TestGeodeRegionTypes(t *testing.T) {
	ts := newTestServer(t)
	for _, tc := range []struct{ typ, kind string }{
		{"REPLICATE_PERSISTENT", "REPLICATE"},
		{"replicate_overflow", "REPLICATE"},
		{"PARTITION_REDUNDANT", "PARTITION"},
		{"PARTITION_PERSISTENT", "PARTITION"},
		{"PARTITION_REDUNDANT_PERSISTENT_OVERFLOW", "PARTITION"},
	} {
		name := strings.ToLower(strings.ReplaceAll(tc.typ, "_", "-"))
		expect{status: 201, body: `{"statusCode":"OK","statusMessage":"region ` + name + ` created"}`,
			header: map[string]string{"Location": "{base}/management/v1/regions/" + name}}.
			check(t, ts, ts.do(t, "POST", "/management/v1/regions", ctJSON, `{"name":"`+name+`","type":"`+tc.typ+`"}`))
		ok(`{"statusCode":"OK","result":{"name":"`+name+`","type":"`+tc.kind+`"}}`, nil).
			check(t, ts, ts.do(t, "GET", "/management/v1/regions/"+name, "", ""))
	}
	before := ts.do(t, "GET", "/kv/v1", "", "").body
	for typ, why := range map[string]string{
		"PROXY":              `region type "PROXY" is Geode's proxy region, which holds no data on the member that defines it`,
		"PARTITION_PROXY":    `region type "PARTITION_PROXY" is Geode's proxy region`,
		"LOCAL":              `region type "LOCAL" is Geode's local region, which lives on one member and is not replicated`,
		"LOCAL_PERSISTENT":   "kvnode replicates every region through Raft",
		"PARTITION_HEAP_LRU": "kvnode never evicts entries",
		"CACHING_PROXY":      "kvnode has no client caches",
	} {
		fails(400, why).check(t, ts, ts.do(t, "POST", "/management/v1/regions", ctJSON, `{"name":"x","type":"`+typ+`"}`))
	}
	if after := ts.do(t, "GET", "/kv/v1", "", "").body; after != before {
		t.Errorf("refused region types created something: %s, was %s", after, before)
	}
}

// TestGeodeIndexBody: Geode's index body (regionPath, indexType) creates
// the same index as kvnode's: listed in kvnode's shape, used by queries.
func TestGeodeIndexBody(t *testing.T) {
	ts := newTestServer(t)
	var kv []string
	for i := range 100 {
		kv = append(kv, fmt.Sprintf("k%03d", i), fmt.Sprintf(`{"cust":%d,"id":%d}`, i%10, i))
	}
	ts.mkRegion(t, "orders", region.Partition, kv...)
	ts.mkRegion(t, "other", region.Replicate)
	q := adhoc("SELECT o.id FROM /orders o WHERE o.cust = 3 ORDER BY o.id")
	without := ts.do(t, "GET", q, "", "")
	if without.status != 200 || without.body == "[]" {
		t.Fatalf("query without the index = %d %s", without.status, without.body)
	}
	base := "/management/v1/regions/orders/indexes"
	for _, tc := range []struct {
		name, body string
		want       expect
	}{
		{"geode RANGE", `{"name":"byCust","expression":"cust","regionPath":"/orders","indexType":"RANGE"}`,
			expect{status: 201, body: `{"statusCode":"OK","statusMessage":"index byCust created on region orders"}`, header: map[string]string{"Location": "{base}" + base + "/byCust"}}},
		{"geode HASH, no slash", `{"name":"byId","expression":"id","regionPath":"orders","indexType":"hash"}`, expect{status: 201, body: `{"statusCode":"OK","statusMessage":"index byId created on region orders"}`,
			header: map[string]string{"Location": "{base}" + base + "/byId"}}},
		{"geode KEY with an alias", `{"name":"byKeyField","expression":"o.id","regionPath":"/orders o","indexType":"KEY"}`, expect{status: 201, body: `{"statusCode":"OK","statusMessage":"index byKeyField created on region orders"}`,
			header: map[string]string{"Location": "{base}" + base + "/byKeyField"}}},
		{"geode, exists", `{"name":"byCust","expression":"id","regionPath":"/orders","indexType":"RANGE"}`,
			expect{status: 409, body: `{"name":"byCust","expression":"cust","from":"/orders","region":"orders","path":["cust"]}`}},
		{"another region's path", `{"name":"x","expression":"id","regionPath":"/other","indexType":"RANGE"}`, fails(400, "names /other, but it is created on region orders")},
		{"unknown type", `{"name":"x","expression":"id","regionPath":"/orders","indexType":"BTREE"}`, fails(400, `indexType "BTREE" is not RANGE, HASH or KEY`)},
		{"both shapes", `{"name":"x","expression":"id","regionPath":"/orders","from":"/orders o"}`, fails(400, `"from" (kvnode's shape) or "regionPath"`)},
		{"no regionPath", `{"name":"x","expression":"id","indexType":"RANGE"}`, fails(400, `needs "regionPath"`)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.want.check(t, ts, ts.do(t, "POST", base, ctJSON, tc.body))
		})
	}
	ok(`{"statusCode":"OK","result":[`+
		`{"name":"byCust","expression":"cust","from":"/orders","region":"orders","path":["cust"]},`+
		`{"name":"byId","expression":"id","from":"/orders","region":"orders","path":["id"]},`+
		`{"name":"byKeyField","expression":"o.id","from":"/orders o","region":"orders","path":["id"]}]}`, nil).
		check(t, ts, ts.do(t, "GET", base, "", ""))
	if with := ts.do(t, "GET", q, "", ""); with.status != 200 || with.body != without.body {
		t.Errorf("with the index: %d %s, without: %s", with.status, with.body, without.body)
	}
}
