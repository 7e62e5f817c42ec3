package oql

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/kvnode/kvnode/index"
)

// indexedSource adds secondary indexes to a mapSource, and counts the
// index scans so a test knows the planner used them.
type indexedSource struct {
	mapSource
	defs    map[string][]index.Def
	indexes map[string]map[string]*index.Index
	scans   int
}

func newIndexedSource(m mapSource, defs map[string][]index.Def) *indexedSource {
	s := &indexedSource{mapSource: m, defs: defs, indexes: map[string]map[string]*index.Index{}}
	for region, ds := range defs {
		s.indexes[region] = map[string]*index.Index{}
		for _, d := range ds {
			x := index.New(d)
			for k, v := range m[region] {
				x.Add(k, []byte(v))
			}
			s.indexes[region][d.Name] = x
		}
	}
	return s
}

func (s *indexedSource) Indexes(region string) []index.Def { return s.defs[region] }

func (s *indexedSource) ScanIndex(_ context.Context, region, name string, ranges []index.Range, fn func(string, []byte) bool) (bool, error) {
	x, ok := s.indexes[region][name]
	if !ok {
		return false, nil
	}
	s.scans++
	return x.Scan(ranges, func(key string) bool { return fn(key, []byte(s.mapSource[region][key])) }), nil
}

// randomPredicate builds a WHERE conjunct over the indexed members with
// an operator the index serves, its operand a literal or $1.
func randomPredicate(rng *rand.Rand, params *[]any) string {
	fields := []string{"o.cust", "o.total", "o.name", "cust", "o.id"}
	f := fields[rng.IntN(len(fields))]
	operand := func() string {
		var lit string
		var v any
		switch {
		case strings.HasSuffix(f, "name"):
			v = []string{"A", "Ax", "b", "C", "Cxx", "d"}[rng.IntN(6)]
			lit = "'" + v.(string) + "'"
		case strings.HasSuffix(f, "total"):
			if rng.IntN(2) == 0 {
				v = int64(rng.IntN(500))
				lit = fmt.Sprint(v)
			} else {
				v = float64(rng.IntN(50000)) / 100
				lit = fmt.Sprintf("%vd", v)
			}
		default:
			v = int64(rng.IntN(300))
			if f != "o.id" {
				v = int64(rng.IntN(8))
			}
			lit = fmt.Sprint(v)
		}
		if rng.IntN(3) == 0 {
			*params = append(*params, v)
			return fmt.Sprintf("$%d", len(*params))
		}
		return lit
	}
	switch rng.IntN(7) {
	case 0:
		return f + " = " + operand()
	case 1:
		return f + " < " + operand()
	case 2:
		if rng.IntN(2) == 0 {
			return f + " <= " + operand()
		}
		return operand() + " <= " + f
	case 3:
		return f + " > " + operand()
	case 4:
		return f + " >= " + operand()
	case 5:
		return f + " IN SET(" + operand() + ", " + operand() + ")"
	}
	if strings.HasSuffix(f, "name") {
		return f + " LIKE '" + []string{"A%", "C%", "b%", "Cx%x", "_x%"}[rng.IntN(5)] + "'"
	}
	return f + " = " + operand()
}

// TestIndexedPlansGiveTheSameRows: for random queries, a source with
// indexes on the members the WHERE clauses test and one without give the
// same multiset of rows, and the indexes are in fact used.
func TestIndexedPlansGiveTheSameRows(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	ctx := context.Background()
	defs := map[string][]index.Def{"/o": {
		{Name: "cust", Path: []string{"cust"}},
		{Name: "total", Path: []string{"total"}},
		{Name: "name", Path: []string{"name"}},
		{Name: "id", Path: []string{"id"}},
	}}
	used := 0
	for round := range 300 {
		data := mapSource{"/o": randomOrders(rng, 200)}
		plain := data
		indexed := newIndexedSource(data, defs)
		var params []any
		var conj []string
		for range 1 + rng.IntN(3) {
			conj = append(conj, randomPredicate(rng, &params))
		}
		where := strings.Join(conj, " AND ")
		if rng.IntN(4) == 0 {
			where += " OR o.id = 7"
		}
		proj := []string{"*", "o.id", "o.id, o.name", "COUNT(*)", "DISTINCT o.cust"}[rng.IntN(5)]
		from := "/o o"
		if strings.Contains(where, "cust") && !strings.Contains(where, "o.cust") && rng.IntN(2) == 0 {
			from = "/o" // implicit attributes need a lone anonymous iterator
			where = strings.ReplaceAll(strings.ReplaceAll(where, "o.", ""), "o.id", "id")
			if strings.Contains(proj, "o.") {
				proj = "*"
			}
		}
		text := fmt.Sprintf("SELECT %s FROM %s WHERE %s", proj, from, where)
		q, err := Parse(text)
		if err != nil {
			t.Fatalf("%s: %v", text, err)
		}
		want, werr := q.Execute(ctx, plain, params, Options{})
		before := indexed.scans
		got, gerr := q.Execute(ctx, indexed, params, Options{})
		if indexed.scans > before {
			used++
		}
		if (werr == nil) != (gerr == nil) {
			t.Fatalf("round %d: %s %v: without index err %v, with index err %v", round, text, params, werr, gerr)
		}
		if werr != nil {
			continue
		}
		w, _ := want.MarshalJSON()
		g, _ := got.MarshalJSON()
		if ws, gs := sortJSONArray(t, w), sortJSONArray(t, g); ws != gs {
			t.Fatalf("round %d: %s %v\n without index %s\n with index    %s", round, text, params, ws, gs)
		}
	}
	if used < 150 {
		t.Fatalf("the planner used an index in %d of 300 queries, want most of them", used)
	}
	t.Logf("index used in %d of 300 random queries", used)
}

func TestPrefixRange(t *testing.T) {
	for _, tc := range []struct {
		p, lo, hi string
		ok        bool
	}{
		{"abc%", "abc", "abd", true},
		{"abc%x_", "abc", "abd", true},
		{"%abc", "", "", false},
		{"_bc%", "", "", false},
		{"ab\\%c%", "", "", false},
		{"abc", "", "", false},
		{"UND%", "", "", false}, // a missing member matches as "UNDEFINED"
		{"é%", "é", "ê", true},
	} {
		lo, hi, ok := prefixRange(tc.p)
		if lo != tc.lo || hi != tc.hi || ok != tc.ok {
			t.Errorf("prefixRange(%q) = %q, %q, %v; want %q, %q, %v", tc.p, lo, hi, ok, tc.lo, tc.hi, tc.ok)
		}
	}
}
