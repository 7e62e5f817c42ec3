package rest

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/kvnode/kvnode/region"
)

// The benchmarks measure the REST layer's own cost per request (routing,
// parsing, writing) over the in-memory store, without a network.
//
// go test -run '^$' -bench . -benchmem -count 3 ./rest, 2 vCPU Intel Xeon VM,
// Go 1.26.8, nothing else running, 2026-11-29 at f9ce58a (a ~250-byte order
// value; the times of this VM move by a third from hour to hour):
//
//	BenchmarkGetEntry        19.8–21.9 µs/op  8417 B/op  57 allocs/op
//	BenchmarkGetEntryStale   13.9–15.5 µs/op  8297 B/op  52 allocs/op
//	BenchmarkGetTwoEntries   22.6–24.2 µs/op  9490 B/op  62 allocs/op
//	BenchmarkPutEntry         158–183 µs/op  17.7 KB/op 105 allocs/op
//
// (At an earlier commit, on a 2 vCPU AMD EPYC VM: GetEntry 4.4–5.3 µs and 36
// allocations.) About 15 of the allocations are httptest's request and
// recorder; Echo re-applies its middleware for every request, a closure
// each (see docs/performance.md, "The HTTP path: a change tried").
//
// So the REST layer costs a read 14-22 µs of CPU here; a Raft commit
// (milliseconds) dominates every write.

const benchValue = `{"@type":"Order","purchaseOrderNo":1112,"customerId":101,"description":"Purchase order for company - B","orderDate":"02/10/2014","totalPrice":225.0,"items":[{"itemNo":1,"description":"Product-AAAA","quantity":10,"unitPrice":20.0,"totalPrice":200.0}]}`

func benchHandler(b *testing.B) http.Handler {
	b.Helper()
	st := newTestStore(b)
	ctx := context.Background()
	if err := st.CreateRegion(ctx, region.Info{Name: "orders", Kind: region.Replicate}); err != nil {
		b.Fatal(err)
	}
	if err := st.Put(ctx, "orders", []region.Entry{{Key: "k1", Value: []byte(benchValue)}, {Key: "k2", Value: []byte(benchValue)}}, region.TTL{}); err != nil {
		b.Fatal(err)
	}
	return New(Config{}, st, nil, nil).Handler()
}

// benchGet GETs target through the handler, expecting 200.
func benchGet(b *testing.B, target string) {
	h := benchHandler(b)
	b.ReportAllocs()
	for b.Loop() {
		w := httptest.NewRecorder()
		h.ServeHTTP(w, httptest.NewRequest("GET", target, nil))
		if w.Code != 200 {
			b.Fatalf("GET %s: status = %d, want 200", target, w.Code)
		}
	}
}

func BenchmarkGetEntry(b *testing.B) { benchGet(b, "/kv/v1/orders/k1") }

// BenchmarkGetEntryStale is the cheapest request there is: a read served
// from this member's memory, no Raft round (issue 30's HTTP path).
func BenchmarkGetEntryStale(b *testing.B) { benchGet(b, "/kv/v1/orders/k1?consistency=stale") }

func BenchmarkGetTwoEntries(b *testing.B) { benchGet(b, "/kv/v1/orders/k1,k2") }

func BenchmarkPutEntry(b *testing.B) {
	h := benchHandler(b)
	b.ReportAllocs()
	for b.Loop() {
		w := httptest.NewRecorder()
		r := httptest.NewRequest("PUT", "/kv/v1/orders/k1", strings.NewReader(benchValue))
		r.Header.Set("Content-Type", "application/json")
		h.ServeHTTP(w, r)
		if w.Code != 200 {
			b.Fatalf("status = %d, want 200", w.Code)
		}
	}
}
