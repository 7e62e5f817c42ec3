package rest

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kvnode/kvnode/region"
)

// Query benchmarks through REST (a real HTTP server on loopback, a real
// single-node store) over 100,000 orders of about 330 bytes, as issue 4
// asks: a point query on an indexed member, the range query Geode's own
// benchmarks run (SELECT * FROM /r o WHERE o.id >= $1 AND o.id < $2 over
// 100 ids) with and without an index, and a full scan with a predicate.
// Each reports the median and 99th-percentile latency of its requests.
//
//	go test -run '^$' -bench Query100k -benchtime 200x ./rest
//
// 2-core AMD EPYC VM, 24 GiB, Go 1.26 (p50 / p99):
//
//	point query on an indexed member          0.06 ms / 0.35 ms
//	point query without an index             38 ms   / 98 ms
//	range of 100 ids, two binds, indexed      0.33 ms / 0.73 ms
//	range of 100 ids, two binds, no index    39 ms   / 55 ms
//	full scan with a predicate               55 ms   / 71 ms

var (
	query100kOnce sync.Once
	query100kSrv  *httptest.Server
	query100kErr  error
)

// query100k serves one store, loaded once, to every benchmark; orders has
// indexes on customerId and id, plain has none.
func query100k(b *testing.B) string {
	query100kOnce.Do(func() {
		st := newTestStore(&testing.T{})
		ctx := context.Background()
		for _, name := range []string{"orders", "plain"} {
			if query100kErr = st.CreateRegion(ctx, region.Info{Name: name, Kind: region.Replicate}); query100kErr != nil {
				return
			}
			for start := 0; start < 100_000; start += 2000 {
				var entries []region.Entry
				for i := start; i < start+2000; i++ {
					entries = append(entries, region.Entry{Key: fmt.Sprintf("%06d", i), Value: []byte(fmt.Sprintf(
						`{"@type":"org.example.Order","id":%d,"purchaseOrderNo":%d,"customerId":%d,"description":"Order %d","orderDate":"01/%02d/2024","contact":"Contact %d","email":"c%d@example.org","totalPrice":%d.%02d,"items":[{"itemId":%d,"quantity":%d,"unitPrice":%d.5}]}`,
						i, 1000+i, i%20000, i, 1+i%28, i, i, i%20000, i%100, i%500, 1+i%9, i%100))})
				}
				if query100kErr = st.Put(ctx, name, entries, region.TTL{}); query100kErr != nil {
					return
				}
			}
		}
		for _, def := range []region.IndexInfo{
			{Name: "byCustomer", Expression: "o.customerId", From: "/orders o"},
			{Name: "byId", Expression: "o.id", From: "/orders o"},
		} {
			if query100kErr = st.CreateIndex(ctx, "orders", def); query100kErr != nil {
				return
			}
		}
		query100kSrv = httptest.NewServer(New(Config{}, st, nil, nil).Handler())
	})
	if query100kErr != nil {
		b.Fatal(query100kErr)
	}
	return query100kSrv.URL
}

// benchRequests sends the request b.N times and reports latency quantiles.
func benchRequests(b *testing.B, method, u, body string, wantRows int) {
	client := &http.Client{}
	lat := make([]time.Duration, 0, b.N)
	// One request first: it opens the connection. (The indexes are built:
	// CreateIndex returned once this node had built them.)
	warm, _ := http.NewRequest(method, u, strings.NewReader(body))
	warm.Header.Set("Content-Type", "application/json")
	if resp, err := client.Do(warm); err == nil {
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
	b.ResetTimer()
	for b.Loop() {
		start := time.Now()
		req, _ := http.NewRequest(method, u, strings.NewReader(body))
		if body != "" {
			req.Header.Set("Content-Type", "application/json")
		}
		resp, err := client.Do(req)
		if err != nil {
			b.Fatal(err)
		}
		data, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		lat = append(lat, time.Since(start))
		if err != nil || resp.StatusCode != 200 {
			b.Fatalf("%s = %d %s", u, resp.StatusCode, data)
		}
		if wantRows > 0 && string(data) == "[]" {
			b.Fatalf("%s returned no rows", u)
		}
	}
	b.StopTimer()
	slices.Sort(lat)
	b.ReportMetric(float64(lat[len(lat)/2].Microseconds())/1000, "p50-ms")
	b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds())/1000, "p99-ms")
}

func BenchmarkQuery100k(b *testing.B) {
	base := query100k(b)
	adhocURL := func(q string) string { return base + "/kv/v1/queries/adhoc?q=" + url.QueryEscape(q) }
	b.Run("point query on an indexed member", func(b *testing.B) {
		benchRequests(b, "GET", adhocURL("SELECT * FROM /orders o WHERE o.customerId = 17"), "", 1)
	})
	b.Run("point query without an index", func(b *testing.B) {
		benchRequests(b, "GET", adhocURL("SELECT * FROM /plain o WHERE o.customerId = 17"), "", 1)
	})
	for _, r := range []string{"orders", "plain"} {
		id := "range-" + r
		resp, err := http.Post(base+"/kv/v1/queries?id="+id+"&q="+url.QueryEscape("SELECT * FROM /"+r+" o WHERE o.id >= $1 AND o.id < $2"), "", nil)
		if err != nil {
			b.Fatal(err)
		}
		resp.Body.Close()
		name := "range of 100 ids, two binds, indexed"
		if r == "plain" {
			name = "range of 100 ids, two binds, no index"
		}
		b.Run(name, func(b *testing.B) {
			benchRequests(b, "POST", base+"/kv/v1/queries/"+id, `[{"@type":"int","@value":50000},{"@type":"int","@value":50100}]`, 100)
		})
	}
	b.Run("full scan with a predicate", func(b *testing.B) {
		benchRequests(b, "GET", adhocURL("SELECT o.id FROM /plain o WHERE o.totalPrice > 19990"), "", 1)
	})
}
