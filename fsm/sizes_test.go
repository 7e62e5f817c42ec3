package fsm

import (
	"reflect"
	"testing"

	"github.com/kvnode/kvnode/fsm/codec"
	"github.com/kvnode/kvnode/region"
)

// TestRegionSizes: a region's entries and bytes (keys and values) follow
// puts, overwrites, deletes and clears, and a restored replica reports
// the same sizes as the one snapshotted.
func TestRegionSizes(t *testing.T) {
	n := newNode(t)
	n.create("orders", region.Replicate)
	n.create("empty", region.Replicate)
	n.create("gone", region.Replicate)
	n.put("orders", "a", `{"n":1}`, "bb", `{"n":22}`, "c", `{}`)
	n.put("orders", "a", `{"n":100}`) // 7 bytes of value become 9
	n.must(codec.Command{Op: codec.OpDelete, Region: "orders", Keys: []string{"c"}})
	n.put("gone", "x", `{"big":"yyyyyyyy"}`)
	n.must(codec.Command{Op: codec.OpClear, Region: "gone"})

	want := []RegionSize{
		{Region: "empty"},
		{Region: "gone"},
		{Region: "orders", Entries: 2, Bytes: int64(len("a") + len(`{"n":100}`) + len("bb") + len(`{"n":22}`))},
	}
	if got := n.f.RegionSizes(); !reflect.DeepEqual(got, want) {
		t.Errorf("RegionSizes = %+v, want %+v", got, want)
	}
	other := New(Options{})
	if err := restore(other, persist(t, n.f)); err != nil {
		t.Fatal(err)
	}
	if got := other.RegionSizes(); !reflect.DeepEqual(got, want) {
		t.Errorf("restored RegionSizes = %+v, want %+v", got, want)
	}
}
