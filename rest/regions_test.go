package rest

import (
	"testing"

	"github.com/kvnode/kvnode/region"
)

func TestListRegions(t *testing.T) {
	ts := newTestServer(t)
	ok(`{"regions":[]}`, nil).check(t, ts, ts.do(t, "GET", "/kv/v1", "", ""))

	ts.mkRegion(t, "orders", region.Replicate)
	ts.mkRegion(t, "customers", region.Partition)
	want := ok(`{"regions":[{"name":"customers","type":"PARTITION"},{"name":"orders","type":"REPLICATE"}]}`, nil)
	for _, path := range []string{"/kv/v1", "/kv/v1/", "/kv/v1?consistency=stale"} {
		t.Run(path, func(t *testing.T) {
			want.check(t, ts, ts.do(t, "GET", path, "", ""))
		})
	}
	fails(400, "consistency").check(t, ts, ts.do(t, "GET", "/kv/v1/?consistency=sometimes", "", ""))
	expect{status: 405, cause: "POST", header: map[string]string{"Allow": "OPTIONS, GET"}}.check(t, ts, ts.do(t, "POST", "/kv/v1/", ctJSON, "{}"))
}
