package oql

import (
	"context"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/kvnode/kvnode/region"
)

// mapSource is a Source over region path → key → JSON.
type mapSource map[string]map[string]string

func (m mapSource) Scan(_ context.Context, r string, fn func(string, []byte) bool) error {
	entries, ok := m[r]
	if !ok {
		return fmt.Errorf("%s: %w", r, region.ErrRegionNotFound)
	}
	keys := make([]string, 0, len(entries))
	for k := range entries {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		if !fn(k, []byte(entries[k])) {
			return nil
		}
	}
	return nil
}

func (m mapSource) Get(_ context.Context, r, k string) ([]byte, bool, error) {
	entries, ok := m[r]
	if !ok {
		return nil, false, fmt.Errorf("%s: %w", r, region.ErrRegionNotFound)
	}
	v, ok := entries[k]
	return []byte(v), ok, nil
}

func (m mapSource) Size(_ context.Context, r string) (int, error) {
	entries, ok := m[r]
	if !ok {
		return 0, fmt.Errorf("%s: %w", r, region.ErrRegionNotFound)
	}
	return len(entries), nil
}

// shards splits region r of m by key hash into n sources holding only
// their share of r (every other region whole).
func shards(m mapSource, r string, n int) []mapSource {
	out := make([]mapSource, n)
	for i := range out {
		out[i] = mapSource{}
		for name, entries := range m {
			if name != r {
				out[i][name] = entries
			} else {
				out[i][name] = map[string]string{}
			}
		}
	}
	for k, v := range m[r] {
		h := fnv.New32a()
		h.Write([]byte(k))
		out[h.Sum32()%uint32(n)][r][k] = v
	}
	return out
}

// randomOrders builds orders with missing members, nulls, mixed number
// kinds and empty, null and missing item lists.
func randomOrders(rng *rand.Rand, n int) map[string]string {
	out := map[string]string{}
	for i := range n {
		var members []string
		members = append(members, fmt.Sprintf(`"id":%d`, i))
		if rng.IntN(10) > 0 {
			members = append(members, fmt.Sprintf(`"cust":%d`, rng.IntN(7)))
		}
		switch rng.IntN(4) {
		case 0:
			members = append(members, fmt.Sprintf(`"total":%d`, rng.IntN(500)))
		case 1:
			members = append(members, `"total":null`)
		default:
			members = append(members, fmt.Sprintf(`"total":%d.%d`, rng.IntN(500), rng.IntN(100)))
		}
		switch rng.IntN(4) {
		case 0:
			members = append(members, `"name":null`)
		case 1:
		default:
			members = append(members, fmt.Sprintf(`"name":"%c%s"`, "AbCd"[rng.IntN(4)], strings.Repeat("x", rng.IntN(3))))
		}
		switch rng.IntN(4) {
		case 0:
			members = append(members, `"items":[]`)
		case 1:
			members = append(members, `"items":null`)
		case 2:
		default:
			var items []string
			for j := range 1 + rng.IntN(3) {
				items = append(items, fmt.Sprintf(`{"p":%d,"q":%d}`, rng.IntN(50), j))
			}
			members = append(members, `"items":[`+strings.Join(items, ",")+`]`)
		}
		rng.Shuffle(len(members), func(a, b int) { members[a], members[b] = members[b], members[a] })
		out[fmt.Sprintf("k%04d", i)] = "{" + strings.Join(members, ",") + "}"
	}
	return out
}

// splitQueries run on /o (scattered) with /c (whole) beside it.
var splitQueries = []string{
	"SELECT * FROM /o",
	"SELECT o.id FROM /o o WHERE o.total > 100 ORDER BY o.id",
	"SELECT o.id, o.total FROM /o o WHERE o.name <> 'Ax' ORDER BY o.total DESC, o.id LIMIT 17",
	"SELECT DISTINCT o.cust FROM /o o ORDER BY o.cust",
	"SELECT DISTINCT o.name FROM /o o",
	"SELECT COUNT(*) FROM /o",
	"SELECT COUNT(*) FROM /o o WHERE o.cust = 3",
	"SELECT COUNT(*) FROM /o o WHERE o.cust = 3 LIMIT 5",
	"SELECT COUNT(o.name) FROM /o o",
	"SELECT COUNT(DISTINCT o.cust) FROM /o o",
	"SELECT SUM(o.total), AVG(o.total), MIN(o.total), MAX(o.total) FROM /o o",
	"SELECT SUM(DISTINCT o.cust) FROM /o o",
	"SELECT AVG(DISTINCT o.cust) AS a FROM /o o",
	"SELECT o.cust AS c, COUNT(*) AS n, MAX(o.name) AS m FROM /o o GROUP BY o.cust ORDER BY n DESC, c",
	"SELECT o.cust, SUM(o.total) AS s FROM /o o GROUP BY o.cust",
	"SELECT o.cust FROM /o o GROUP BY o.cust",
	"SELECT i.p FROM /o o, o.items i WHERE i.p > 10 ORDER BY i.p, o.id",
	"SELECT COUNT(*) FROM /o o, o.items i",
	"SELECT o.id FROM /o o, /c c WHERE o.cust = c.cust AND c.vip = true ORDER BY o.id",
	"SELECT o.id FROM /o o WHERE o.cust IN (SELECT c.cust FROM /c c WHERE c.vip = false) ORDER BY o.id DESC LIMIT 9",
	"SELECT o.id FROM /o o WHERE NOT (o.total < 50) ORDER BY o.id",
	"SELECT o.id FROM /o o WHERE IS_UNDEFINED(o.cust) OR o.name = null ORDER BY o.id",
	"SELECT e.key FROM /o.entrySet e WHERE e.value.cust = 1 ORDER BY e.key",
	"SELECT k FROM /o.keySet k WHERE k LIKE 'k00%' ORDER BY k",
	"SELECT * FROM /o o ORDER BY o.total LIMIT 3",
	"SELECT o.name, o.id FROM /o o ORDER BY o.name, o.id LIMIT 20",
}

// TestPartialsMergeToTheWholeAnswer: running a query's partial on every
// share of the data, sending each through the wire encoding and merging,
// gives what running it over all the data gives.
func TestPartialsMergeToTheWholeAnswer(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	ctx := context.Background()
	for round := range 5 {
		data := mapSource{
			"/o": randomOrders(rng, 300),
			"/c": {},
		}
		for c := range 7 {
			data["/c"][fmt.Sprint(c)] = fmt.Sprintf(`{"cust":%d,"vip":%v}`, c, c%2 == 0)
		}
		parts := shards(data, "/o", 1+rng.IntN(5))
		for _, text := range splitQueries {
			q, err := Parse(text)
			if err != nil {
				t.Fatalf("%s: %v", text, err)
			}
			whole, err := q.Execute(ctx, data, nil, Options{})
			if err != nil {
				t.Fatalf("round %d: %s: %v", round, text, err)
			}
			var partials []*Partial
			for _, shard := range parts {
				p, err := q.ExecutePartial(ctx, data, shard, nil, Options{})
				if err != nil {
					t.Fatalf("round %d: %s: partial: %v", round, text, err)
				}
				back, err := DecodePartial(EncodePartial(p))
				if err != nil {
					t.Fatalf("round %d: %s: decode partial: %v", round, text, err)
				}
				partials = append(partials, back)
			}
			merged, err := q.Merge(ctx, partials, nil, Options{})
			if err != nil {
				t.Fatalf("round %d: %s: merge: %v", round, text, err)
			}
			w, _ := whole.MarshalJSON()
			m, _ := merged.MarshalJSON()
			ordered := strings.Contains(text, "ORDER BY") || strings.Contains(text, "GROUP BY")
			if !ordered {
				w, m = []byte(sortJSONArray(t, w)), []byte(sortJSONArray(t, m))
			}
			if !jsonNumbersClose(t, w, m) {
				t.Errorf("round %d, %d shards: %s\n whole  %s\n merged %s", round, len(parts), text, w, m)
			}
		}
	}
}

func sortJSONArray(t *testing.T, b []byte) string {
	t.Helper()
	var els []json.RawMessage
	if err := json.Unmarshal(b, &els); err != nil {
		t.Fatalf("%s: %v", b, err)
	}
	strs := make([]string, len(els))
	for i, e := range els {
		strs[i] = string(e)
	}
	slices.Sort(strs)
	return "[" + strings.Join(strs, ",") + "]"
}

// jsonNumbersClose compares two JSON documents, numbers within a relative
// 1e-6 (sums added in another order differ in the last float bits).
func jsonNumbersClose(t *testing.T, a, b []byte) bool {
	t.Helper()
	var x, y any
	if json.Unmarshal(a, &x) != nil || json.Unmarshal(b, &y) != nil {
		return false
	}
	return closeValues(x, y)
}

func closeValues(x, y any) bool {
	switch xv := x.(type) {
	case float64:
		yv, ok := y.(float64)
		if !ok {
			return false
		}
		d := xv - yv
		if d < 0 {
			d = -d
		}
		return d <= 1e-6*max(1, xv, -xv)
	case []any:
		yv, ok := y.([]any)
		if !ok || len(xv) != len(yv) {
			return false
		}
		for i := range xv {
			if !closeValues(xv[i], yv[i]) {
				return false
			}
		}
		return true
	case map[string]any:
		yv, ok := y.(map[string]any)
		if !ok || len(xv) != len(yv) {
			return false
		}
		for k := range xv {
			if !closeValues(xv[k], yv[k]) {
				return false
			}
		}
		return true
	}
	return x == y
}
