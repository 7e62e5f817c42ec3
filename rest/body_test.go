package rest

import (
	"strings"
	"testing"

	"github.com/kvnode/kvnode/region"
)

// TestBodyTooLarge: a body over MaxBodyBytes is 413 and stores nothing; one
// at the limit is fine.
func TestBodyTooLarge(t *testing.T) {
	const limit = 64
	ts := serve(t, Config{MaxBodyBytes: limit}, newTestStore(t), nil)
	ts.mkRegion(t, "r", region.Replicate, "a", va)
	before := ts.contents(t, "r")

	atLimit := `{"s":"` + strings.Repeat("x", limit-8) + `"}`
	if len(atLimit) != limit {
		t.Fatalf("test value is %d bytes, want %d", len(atLimit), limit)
	}
	over := `{"s":"` + strings.Repeat("x", limit-7) + `"}`
	for _, tc := range []struct{ name, method, path, body string }{
		{"POST", "POST", "/kv/v1/r?key=big", over},
		{"PUT", "PUT", "/kv/v1/r/big", over},
		{"PUT multi-key", "PUT", "/kv/v1/r/big,big2", "[" + over + "," + over + "]"},
		{"CAS", "PUT", "/kv/v1/r/a?op=CAS", `{"@old":` + va + `,"@new":` + over + `}`},
		{"management", "POST", "/management/v1/regions", `{"name":"` + strings.Repeat("n", limit) + `","type":"REPLICATE"}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fails(413, "larger than 64 bytes").check(t, ts, ts.do(t, tc.method, tc.path, ctJSON, tc.body))
			if after := ts.contents(t, "r"); after != before {
				t.Errorf("region after a refused write = %s, want %s", after, before)
			}
		})
	}
	expect{status: 200}.check(t, ts, ts.do(t, "PUT", "/kv/v1/r/big", ctJSON, atLimit))
	ok(atLimit, nil).check(t, ts, ts.do(t, "GET", "/kv/v1/r/big", "", ""))
}
