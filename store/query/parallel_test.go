package query

import (
	"context"
	"fmt"
	"runtime"
	"slices"
	"testing"

	"github.com/kvnode/kvnode/oql"
	"github.com/kvnode/kvnode/region"
)

// TestParallelScanAnswersAsOneScan: over a replicated region large enough
// to be split, every query the engine splits answers exactly what one scan
// answers (aggregates, doubles summed, ORDER BY with LIMIT, DISTINCT with
// ORDER BY, a join with another region, bind values), the queries it must
// not split are left whole, and an error in a partial ends the query.
func TestParallelScanAnswersAsOneScan(t *testing.T) {
	if runtime.GOMAXPROCS(0) < 2 {
		t.Fatalf("GOMAXPROCS=%d: the split needs at least 2", runtime.GOMAXPROCS(0))
	}
	fx := newFixture(t, 2)
	ctx := context.Background()
	if err := fx.api.CreateRegion(ctx, region.Info{Name: "big", Kind: region.Replicate}); err != nil {
		t.Fatal(err)
	}
	n := parallelMinEntries + 5000
	for lo := 0; lo < n; lo += 5000 {
		var batch []region.Entry
		for i := lo; i < min(lo+5000, n); i++ {
			batch = append(batch, region.Entry{Key: fmt.Sprintf("k%07d", i), Value: []byte(fmt.Sprintf(`{"id":%d,"cust":%d,"price":%d.%02d,"tag":"t%d"}`, i, i%4, i%1000, i%97, i%7))})
		}
		if err := fx.api.Put(ctx, "big", batch, region.TTL{}); err != nil {
			t.Fatal(err)
		}
	}
	split := []string{
		"SELECT COUNT(*) FROM /big b WHERE b.price > 500",
		"SELECT SUM(b.price), AVG(b.price), MIN(b.id), MAX(b.id) FROM /big b WHERE b.cust = 2",
		"SELECT b.id, b.price FROM /big b WHERE b.price > 998 ORDER BY b.price DESC, b.id LIMIT 7",
		"SELECT DISTINCT b.tag FROM /big b ORDER BY b.tag",
		"SELECT COUNT(*) FROM /big b WHERE b.cust IN (SELECT c.cust FROM /cust c WHERE c.vip = true)",
		"SELECT COUNT(*) FROM /big b WHERE b.id >= $1 AND b.id < $2",
	}
	whole := []string{
		"SELECT b.id FROM /big b WHERE b.price > 998",                                        // order of the scan
		"SELECT b.cust, COUNT(*) FROM /big b GROUP BY b.cust",                                // groups in scan order
		"SELECT COUNT(*) FROM /big",                                                          // the region's size
		"SELECT COUNT(*) FROM /big b WHERE b.id IN (SELECT x.id FROM /big x WHERE x.id < 3)", // named twice
	}
	for _, text := range append(split, whole...) {
		q, err := fx.engine.CompileQuery(text)
		if err != nil {
			t.Fatalf("%q: %v", text, err)
		}
		f0, _ := fx.groups.Control(ctx, region.Linearizable)
		qs, err := fx.engine.newSource(ctx, region.Linearizable, f0, q)
		if err != nil {
			t.Fatal(err)
		}
		ref := qs.refs["/big"]
		wantSplit := slices.Contains(split, text)
		if got := qs.parallelizable(q, ref, 2); got != wantSplit {
			t.Errorf("%q: parallelizable = %v, want %v", text, got, wantSplit)
		}
		params := []any{}
		if q.Params() == 2 {
			params = []any{int64(1000), int64(60000)}
		}
		one, err := q.Execute(ctx, qs, params, oql.Options{MaxRows: 100000})
		if err != nil {
			t.Fatalf("%q whole: %v", text, err)
		}
		many, err := fx.engine.Query(ctx, region.Linearizable, q, params, oql.Options{MaxRows: 100000})
		if err != nil {
			t.Fatalf("%q through the engine: %v", text, err)
		}
		a, _ := one.MarshalJSON()
		b, _ := many.MarshalJSON()
		if string(a) != string(b) {
			t.Errorf("%q: split %s, one scan %s", text, trim(b), trim(a))
		}
	}

	// A partial that fails (too many rows) fails the query, and the
	// dealer does not hang on the workers that stopped.
	q, _ := fx.engine.CompileQuery("SELECT b.id FROM /big b ORDER BY b.id")
	if _, err := fx.engine.Query(ctx, region.Linearizable, q, nil, oql.Options{MaxRows: 10}); err == nil {
		t.Error("a split query past MaxRows answered")
	}
}

func trim(b []byte) string {
	if len(b) > 200 {
		return string(b[:200]) + "..."
	}
	return string(b)
}
