package rest

import (
	"fmt"
	"strings"
	"testing"

	"github.com/kvnode/kvnode/region"
)

// TestIndexEndpoints: the index management rows, and the same query
// answers with and without an index, on both region kinds.
func TestIndexEndpoints(t *testing.T) {
	ts := newTestServer(t)
	for _, kind := range []region.Kind{region.Replicate, region.Partition} {
		r := "ix" + strings.ToLower(string(kind))
		var kv []string
		for i := range 200 {
			kv = append(kv, fmt.Sprintf("k%03d", i), fmt.Sprintf(`{"id":%d,"cust":%d,"name":"n%02d"}`, i, i%10, i%37))
		}
		ts.mkRegion(t, r, kind, kv...)
		base := "/management/v1/regions/" + r + "/indexes"
		queries := []string{
			"SELECT o.id FROM /" + r + " o WHERE o.cust = 3 ORDER BY o.id",
			"SELECT COUNT(*) FROM /" + r + " o WHERE o.id >= 50 AND o.id < 150",
			"SELECT o.id FROM /" + r + " o WHERE o.cust IN SET(1, 2) AND o.id < 40 ORDER BY o.id",
			"SELECT o.id FROM /" + r + " o WHERE o.name LIKE 'n1%' AND o.id < 60 ORDER BY o.id",
			"SELECT o.id FROM /" + r + " o WHERE o.cust > 7 AND o.id > 180 ORDER BY o.id",
		}
		before := make([]string, len(queries))
		for i, q := range queries {
			res := ts.do(t, "GET", adhoc(q), "", "")
			if res.status != 200 {
				t.Fatalf("%s = %d %s", q, res.status, res.body)
			}
			before[i] = res.body
		}
		json := "application/json"
		for _, tc := range []queryCase{
			{name: "create", method: "POST", path: base, ctype: json, body: `{"name":"byCust","expression":"o.cust","from":"/` + r + ` o"}`,
				want: expect{status: 201, body: `{"statusCode":"OK","statusMessage":"index byCust created on region ` + r + `"}`,
					header: map[string]string{"Location": "{base}" + base + "/byCust"}}},
			{name: "create implicit attribute", method: "POST", path: base, ctype: json, body: `{"name":"byName","expression":"name","from":"/` + r + `"}`,
				want: expect{status: 201, body: `{"statusCode":"OK","statusMessage":"index byName created on region ` + r + `"}`,
					header: map[string]string{"Location": "{base}" + base + "/byName"}}},
			{name: "create on id", method: "POST", path: base, ctype: json, body: `{"name":"byId","expression":"o.id","from":"/` + r + ` o"}`,
				want: expect{status: 201, body: `{"statusCode":"OK","statusMessage":"index byId created on region ` + r + `"}`,
					header: map[string]string{"Location": "{base}" + base + "/byId"}}},
			{name: "duplicate name", method: "POST", path: base, ctype: json, body: `{"name":"byCust","expression":"o.id","from":"/` + r + ` o"}`,
				want: expect{status: 409, body: `{"name":"byCust","expression":"o.cust","from":"/` + r + ` o","region":"` + r + `","path":["cust"]}`}},
			{name: "expression not a member path", method: "POST", path: base, ctype: json, body: `{"name":"x","expression":"o.cust + 1","from":"/` + r + ` o"}`,
				want: fails(400, "member path")},
			{name: "from names another region", method: "POST", path: base, ctype: json, body: `{"name":"x","expression":"o.cust","from":"/other o"}`,
				want: fails(400, "/other")},
			{name: "expression does not parse", method: "POST", path: base, ctype: json, body: `{"name":"x","expression":"o.","from":"/` + r + ` o"}`,
				want: fails(400, "syntax error")},
			{name: "missing from", method: "POST", path: base, ctype: json, body: `{"name":"x","expression":"o.cust"}`,
				want: fails(400, "from")},
			{name: "unknown member", method: "POST", path: base, ctype: json, body: `{"name":"x","expression":"o.cust","from":"/` + r + ` o","type":"RANGE"}`,
				want: fails(400, "type")},
			{name: "unknown region", method: "POST", path: "/management/v1/regions/nope/indexes", ctype: json, body: `{"name":"x","expression":"o.cust","from":"/nope o"}`,
				want: fails(404, "nope")},
			{name: "get one", method: "GET", path: base + "/byCust",
				want: ok(`{"statusCode":"OK","result":{"name":"byCust","expression":"o.cust","from":"/`+r+` o","region":"`+r+`","path":["cust"]}}`, nil)},
			{name: "get unknown", method: "GET", path: base + "/nope", want: fails(404, "nope")},
			{name: "list", method: "GET", path: base,
				want: ok(`{"statusCode":"OK","result":[{"name":"byCust","expression":"o.cust","from":"/`+r+` o","region":"`+r+`","path":["cust"]},`+
					`{"name":"byId","expression":"o.id","from":"/`+r+` o","region":"`+r+`","path":["id"]},`+
					`{"name":"byName","expression":"name","from":"/`+r+`","region":"`+r+`","path":["name"]}]}`, nil)},
		} {
			t.Run(string(kind)+"/"+tc.name, func(t *testing.T) {
				tc.want.check(t, ts, ts.do(t, tc.method, tc.path, tc.ctype, tc.body))
			})
		}
		// Same answers with the indexes, also after writes that move
		// entries between index keys.
		for i, q := range queries {
			if res := ts.do(t, "GET", adhoc(q), "", ""); res.status != 200 || res.body != before[i] {
				t.Errorf("%s with indexes = %d %s, without %s", q, res.status, res.body, before[i])
			}
		}
		ts.do(t, "PUT", "/kv/v1/"+r+"/k003", "application/json", `{"id":3,"cust":4,"name":"n03"}`)
		res := ts.do(t, "GET", adhoc("SELECT o.id FROM /"+r+" o WHERE o.cust = 4 AND o.id < 20 ORDER BY o.id"), "", "")
		if res.body != "[3,4,14]" {
			t.Errorf("after moving k003 to cust 4: %s, want [3,4,14]", res.body)
		}
		res = ts.do(t, "GET", adhoc("SELECT o.id FROM /"+r+" o WHERE o.cust = 3 AND o.id < 20 ORDER BY o.id"), "", "")
		if res.body != "[13]" {
			t.Errorf("after moving k003 away from cust 3: %s, want [13]", res.body)
		}

		ok(`{"statusCode":"OK","statusMessage":"index byCust deleted from region `+r+`"}`, nil).check(t, ts, ts.do(t, "DELETE", base+"/byCust", "", ""))
		fails(404, "byCust").check(t, ts, ts.do(t, "DELETE", base+"/byCust", "", ""))
		// Destroying the region drops its indexes; a new region of the
		// same name starts without them.
		if res := ts.do(t, "DELETE", "/management/v1/regions/"+r, "", ""); res.status != 200 {
			t.Fatalf("destroy region = %d %s", res.status, res.body)
		}
		ts.mkRegion(t, r, kind)
		ok(`{"statusCode":"OK","result":[]}`, nil).check(t, ts, ts.do(t, "GET", base, "", ""))
	}
}
