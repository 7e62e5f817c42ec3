package oql

import (
	"context"
	"fmt"
	"slices"
	"testing"

	"github.com/kvnode/kvnode/region"
)

// sliceSource is one region held as sorted entries, so that benchmarks
// measure the engine rather than the test source (the store scans a B-tree
// the same way, without copying).
type sliceSource struct {
	path   string
	keys   []string
	values [][]byte
}

func (s *sliceSource) Scan(_ context.Context, r string, fn func(string, []byte) bool) error {
	if r != s.path {
		return region.ErrRegionNotFound
	}
	for i, k := range s.keys {
		if !fn(k, s.values[i]) {
			break
		}
	}
	return nil
}

func (s *sliceSource) Get(_ context.Context, r, k string) ([]byte, bool, error) {
	i, ok := slices.BinarySearch(s.keys, k)
	if !ok {
		return nil, false, nil
	}
	return s.values[i], true, nil
}

func (s *sliceSource) Size(context.Context, string) (int, error) { return len(s.keys), nil }

// benchOrders is a region of n order objects shaped like the REST
// examples (about 300 bytes each).
func benchOrders(n int) *sliceSource {
	m := map[string]string{}
	for i := range n {
		m[fmt.Sprintf("%07d", i)] = fmt.Sprintf(`{"@type":"org.example.Order","id":%d,"purchaseOrderNo":%d,"customerId":%d,"description":"Order %d for customer %d","orderDate":"01/%02d/2024","deliveryDate":"02/%02d/2024","contact":"Contact %d","email":"c%d@example.org","phone":"555-%04d","totalPrice":%d.%02d,"items":[{"itemId":%d,"description":"item","quantity":%d,"unitPrice":%d.5,"totalPrice":%d.5}]}`,
			i, 1000+i, i%1000, i, i%1000, 1+i%28, 1+i%28, i, i, i%10000, i%20000, i%100, i%500, 1+i%9, i%100, i%300)
	}
	src := &sliceSource{path: "/orders"}
	for k := range m {
		src.keys = append(src.keys, k)
	}
	slices.Sort(src.keys)
	for _, k := range src.keys {
		src.values = append(src.values, []byte(m[k]))
	}
	return src
}

func benchQuery(b *testing.B, src Source, text string, params ...any) {
	q, err := Parse(text)
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		if _, err := q.Execute(ctx, src, params, Options{}); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkScan100k(b *testing.B) {
	src := benchOrders(100_000)
	b.Run("full scan with a predicate", func(b *testing.B) {
		benchQuery(b, src, "SELECT o.id FROM /orders o WHERE o.totalPrice > 19990")
	})
	b.Run("range of 100 ids, two binds", func(b *testing.B) {
		benchQuery(b, src, "SELECT * FROM /orders o WHERE o.id >= $1 AND o.id < $2", int64(5000), int64(5100))
	})
	b.Run("point query", func(b *testing.B) {
		benchQuery(b, src, "SELECT * FROM /orders o WHERE o.customerId = $1", int64(17))
	})
	b.Run("count star", func(b *testing.B) {
		benchQuery(b, src, "SELECT COUNT(*) FROM /orders")
	})
}

// immutableSource is sliceSource promising that its values never change
// (oql.ImmutableSource), as the store's sources do.
type immutableSource struct{ *sliceSource }

func (immutableSource) ValuesImmutable() {}

func BenchmarkScan100kInPlace(b *testing.B) {
	src := immutableSource{benchOrders(100_000)}
	b.Run("full scan with a predicate", func(b *testing.B) {
		benchQuery(b, src, "SELECT o.id FROM /orders o WHERE o.totalPrice > 19990")
	})
	b.Run("count with a predicate", func(b *testing.B) {
		benchQuery(b, src, "SELECT COUNT(*) FROM /orders o WHERE o.totalPrice > 500")
	})
}
