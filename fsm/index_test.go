package fsm

import (
	"encoding/json"
	"fmt"
	"slices"
	"testing"

	"github.com/kvnode/kvnode/fsm/codec"
	"github.com/kvnode/kvnode/index"
	"github.com/kvnode/kvnode/region"
)

// indexed returns the keys an index finds for r, in index order.
func indexed(t *testing.T, f *FSM, name string, r index.Range) []string {
	t.Helper()
	var keys []string
	ok, err := f.Indexes().Scan(name, 0, "byCust", []index.Range{r}, func(key string, _ json.RawMessage) bool {
		keys = append(keys, key)
		return true
	})
	if err != nil || !ok {
		t.Fatalf("IndexScan = %v, %v", ok, err)
	}
	return keys
}

func TestIndexesFollowEveryWrite(t *testing.T) {
	n := newNode(t)
	n.f.Indexes().Set(1, map[string][]index.Def{"r": {{Name: "byCust", Path: []string{"cust"}}}})
	n.create("r", region.Replicate) // created after the definition: indexed from the start
	n.put("r", "a", `{"cust":1}`, "b", `{"cust":2.0}`, "c", `{"cust":"2"}`, "d", `{"x":1}`, "e", `{"cust":null}`)
	if got := indexed(t, n.f, "r", index.Point(int64(2))); !slices.Equal(got, []string{"b"}) {
		t.Fatalf("cust = 2 finds %v, want [b] (2.0 equals 2; the string \"2\" does not)", got)
	}
	n.must(codec.Command{Op: codec.OpReplace, Region: "r", Entries: entries("a", `{"cust":2}`)})
	n.must(codec.Command{Op: codec.OpDelete, Region: "r", Keys: []string{"b"}})
	if got := indexed(t, n.f, "r", index.Point(int64(2))); !slices.Equal(got, []string{"a"}) {
		t.Fatalf("after replace and delete, cust = 2 finds %v, want [a]", got)
	}
	if got := indexed(t, n.f, "r", index.Range{Hi: int64(10), HiIncl: true}); !slices.Equal(got, []string{"a"}) {
		t.Fatalf("cust <= 10 finds %v, want [a]", got)
	}
	if got := n.f.Indexes().Len("r", 0, "byCust"); got != 2 {
		t.Fatalf("index holds %d entries, want 2 (a and c; absent and null members are not indexed)", got)
	}

	// A snapshot restored elsewhere rebuilds the configured indexes.
	f2 := New(Options{})
	f2.Indexes().Set(1, map[string][]index.Def{"r": {{Name: "byCust", Path: []string{"cust"}}}})
	if err := restore(f2, persist(t, n.f)); err != nil {
		t.Fatal(err)
	}
	if got := indexed(t, f2, "r", index.Point("2")); !slices.Equal(got, []string{"c"}) {
		t.Fatalf("after restore cust = '2' finds %v, want [c]", got)
	}

	n.must(codec.Command{Op: codec.OpClear, Region: "r"})
	if got := n.f.Indexes().Len("r", 0, "byCust"); got != 0 {
		t.Fatalf("after clear the index holds %d entries", got)
	}
	// An index added later is built from the entries already there.
	for i := range 10 {
		n.put("r", fmt.Sprint(i), fmt.Sprintf(`{"cust":%d,"name":"n%d"}`, i%3, i))
	}
	n.f.Indexes().Set(2, map[string][]index.Def{"r": {{Name: "byCust", Path: []string{"name"}}}})
	if got := indexed(t, n.f, "r", index.Range{Lo: "n7", LoIncl: false}); !slices.Equal(got, []string{"8", "9"}) {
		t.Fatalf("rebuilt on a new path: name > 'n7' finds %v, want [8 9]", got)
	}
	n.f.Indexes().Set(3, nil)
	if ok, _ := n.f.Indexes().Scan("r", 0, "byCust", []index.Range{index.Point("n1")}, func(string, json.RawMessage) bool { return true }); ok {
		t.Fatal("a dropped index still scans")
	}
	if n.f.Indexes().Version() != 3 {
		t.Fatalf("IndexVersion = %d, want 3", n.f.Indexes().Version())
	}
}
