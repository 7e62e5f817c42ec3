package rest

import (
	"testing"

	"github.com/kvnode/kvnode/region"
)

func TestManagementRegions(t *testing.T) {
	ts := newTestServer(t)
	ok(`{"statusCode":"OK","result":[]}`, nil).check(t, ts, ts.do(t, "GET", "/management/v1/regions", "", ""))

	for _, tc := range []struct {
		name, method, path, ctype, body string
		want                            expect
	}{
		{"create", "POST", "/management/v1/regions", ctJSON, `{"name":"orders","type":"REPLICATE"}`,
			expect{status: 201, body: `{"statusCode":"OK","statusMessage":"region orders created"}`,
				header: map[string]string{"Location": "{base}/management/v1/regions/orders"}}},
		{"create, type in any case", "POST", "/management/v1/regions", ctJSON, `{"type":"partition","name":"customers"}`,
			expect{status: 201, body: `{"statusCode":"OK","statusMessage":"region customers created"}`,
				header: map[string]string{"Location": "{base}/management/v1/regions/customers"}}},
		{"exists", "POST", "/management/v1/regions", ctJSON, `{"name":"orders","type":"PARTITION"}`, fails(409, "region already exists")},
		// PARTITION_REDUNDANT was the refused type here until issue 20 made
		// Geode's shortcuts with a meaning here valid (TestGeodeRegionTypes).
		{"bad type", "POST", "/management/v1/regions", ctJSON, `{"name":"x","type":"PARTITION_HASHED"}`, fails(400, "PARTITION_HASHED")},
		{"no type", "POST", "/management/v1/regions", ctJSON, `{"name":"x"}`, fails(400, "region type")},
		{"bad name", "POST", "/management/v1/regions", ctJSON, `{"name":"a b","type":"REPLICATE"}`, fails(400, "region name")},
		{"reserved name", "POST", "/management/v1/regions", ctJSON, `{"name":"queries","type":"REPLICATE"}`, fails(400, "reserved")},
		{"reserved name watch", "POST", "/management/v1/regions", ctJSON, `{"name":"watch","type":"REPLICATE"}`, fails(400, "reserved")},
		{"no name", "POST", "/management/v1/regions", ctJSON, `{"type":"REPLICATE"}`, fails(400, "empty")},
		{"unknown field", "POST", "/management/v1/regions", ctJSON, `{"name":"x","type":"REPLICATE","redundancy":1}`, fails(400, "redundancy")},
		{"malformed", "POST", "/management/v1/regions", ctJSON, `{"name":"x",`, fails(400, "invalid request")},
		{"not an object", "POST", "/management/v1/regions", ctJSON, `["x"]`, fails(400, "invalid request")},
		{"trailing data", "POST", "/management/v1/regions", ctJSON, `{"name":"x","type":"REPLICATE"}{}`, fails(400, "after")},
		{"text/plain", "POST", "/management/v1/regions", "text/plain", `{"name":"x","type":"REPLICATE"}`, fails(415, "text/plain")},
		{"list", "GET", "/management/v1/regions", "", "",
			ok(`{"statusCode":"OK","result":[{"name":"customers","type":"PARTITION"},{"name":"orders","type":"REPLICATE"}]}`, nil)},
		{"list stale", "GET", "/management/v1/regions?consistency=stale", "", "",
			ok(`{"statusCode":"OK","result":[{"name":"customers","type":"PARTITION"},{"name":"orders","type":"REPLICATE"}]}`, nil)},
		{"list, bad consistency", "GET", "/management/v1/regions?consistency=x", "", "", fails(400, "consistency")},
		{"get", "GET", "/management/v1/regions/orders", "", "", ok(`{"statusCode":"OK","result":{"name":"orders","type":"REPLICATE"}}`, nil)},
		{"get unknown", "GET", "/management/v1/regions/nope", "", "", fails(404, "region not found")},
		{"the new region serves entries", "PUT", "/kv/v1/orders/1", ctJSON, va, expect{status: 200}},
		{"delete", "DELETE", "/management/v1/regions/orders", "", "", ok(`{"statusCode":"OK","statusMessage":"region orders deleted"}`, nil)},
		{"deleted", "GET", "/management/v1/regions/orders", "", "", fails(404, "region not found")},
		{"its entries are gone", "GET", "/kv/v1/orders/1", "", "", fails(404, "region not found")},
		{"delete unknown", "DELETE", "/management/v1/regions/orders", "", "", fails(404, "region not found")},
		{"wrong method", "PUT", "/management/v1/regions/orders", ctJSON, `{}`,
			expect{status: 405, cause: "PUT", header: map[string]string{"Allow": "OPTIONS, DELETE, GET, PATCH"}}},
		{"after", "GET", "/kv/v1", "", "", ok(`{"regions":[{"name":"customers","type":"PARTITION"}]}`, nil)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.want.check(t, ts, ts.do(t, tc.method, tc.path, tc.ctype, tc.body))
		})
	}
}

// TestManagementSeesStoreRegions: regions created elsewhere (another node,
// --regions) are listed.
func TestManagementSeesStoreRegions(t *testing.T) {
	ts := newTestServer(t)
	ts.mkRegion(t, "a", region.Partition)
	ok(`{"statusCode":"OK","result":{"name":"a","type":"PARTITION"}}`, nil).
		check(t, ts, ts.do(t, "GET", "/management/v1/regions/a", "", ""))
}
