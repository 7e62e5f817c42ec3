package rest

import (
	"net/url"
	"strings"
	"testing"

	"github.com/kvnode/kvnode/oql"
	"github.com/kvnode/kvnode/region"
)

// TestHostileInputLimits: over-long URLs, over-deep values and over-long
// queries get a clear 4xx with a JSON cause and change nothing.
func TestHostileInputLimits(t *testing.T) {
	ts := newTestServer(t)
	ts.mkRegion(t, "r", region.Replicate, "k", `{"a":1}`)
	before := ts.contents(t, "r")

	fails(414, "URL").check(t, ts, ts.do(t, "GET", "/kv/v1/r/"+strings.Repeat("k", MaxURLBytes), "", ""))

	deep := `{"a":` + strings.Repeat("[", region.MaxValueDepth) + strings.Repeat("]", region.MaxValueDepth) + `}`
	fails(400, "nests").check(t, ts, ts.do(t, "PUT", "/kv/v1/r/k", "application/json", deep))
	ok := `{"a":` + strings.Repeat("[", region.MaxValueDepth-1) + strings.Repeat("]", region.MaxValueDepth-1) + `}`
	if r := ts.do(t, "PUT", "/kv/v1/r/k2", "application/json", ok); r.status != 200 {
		t.Fatalf("a value exactly at the depth limit = %d %s", r.status, r.body)
	}
	ts.do(t, "DELETE", "/kv/v1/r/k2", "", "")

	long := "SELECT * FROM /r WHERE " + strings.Repeat("a = 1 OR ", oql.MaxQueryLength/9) + "a = 1"
	fails(400, "at most").check(t, ts, ts.do(t, "POST", "/kv/v1/queries?id=long&q="+url.QueryEscape(long), "", ""))
	if after := ts.contents(t, "r"); after != before {
		t.Errorf("refused requests changed the region: %s → %s", before, after)
	}
}
