package fsm

import (
	"errors"
	"fmt"
	"reflect"
	"testing"

	"github.com/kvnode/kvnode/fsm/codec"
	"github.com/kvnode/kvnode/region"
)

// readAll drains a cursor with batches of size batch.
func readAll(z *Frozen, batch int) []region.Entry {
	c := z.Cursor()
	buf := make([]region.Entry, batch)
	var out []region.Entry
	for {
		n := c.Read(buf)
		if n == 0 {
			return out
		}
		out = append(out, buf[:n]...)
	}
}

// A frozen region reads back every entry in key order, whatever the batch
// size, and keeps showing the moment it was taken while writes go on.
func TestFreezeReadsOneMoment(t *testing.T) {
	n := newNode(t)
	n.create("r", region.Replicate)
	var kv []string
	for i := range 1000 {
		kv = append(kv, fmt.Sprintf("k%04d", i), fmt.Sprintf(`{"i":%d}`, i))
	}
	n.put("r", kv...)
	want, err := n.f.List("r", 0, -1)
	if err != nil {
		t.Fatal(err)
	}
	z, err := n.f.Freeze("r", 0)
	if err != nil {
		t.Fatal(err)
	}
	// Writes after the freeze: overwrite, delete, insert, clear.
	n.put("r", "k0000", `{"i":"new"}`, "k0500x", `{"i":"inserted"}`)
	n.must(codec.Command{Op: codec.OpDelete, Region: "r", Keys: []string{"k0999"}})
	if z.Len() != 1000 {
		t.Errorf("Len = %d, want 1000", z.Len())
	}
	for _, batch := range []int{1, 7, 64, 1000, 5000} {
		if got := readAll(z, batch); !reflect.DeepEqual(got, want) {
			t.Fatalf("batch %d: read %d entries, want the %d listed before the writes", batch, len(got), len(want))
		}
	}
	n.must(codec.Command{Op: codec.OpClear, Region: "r"})
	if got := readAll(z, 100); len(got) != 1000 {
		t.Errorf("after clear: read %d entries, want 1000", len(got))
	}
	// A cursor at its end stays there.
	c := z.Cursor()
	buf := make([]region.Entry, 2000)
	if n := c.Read(buf); n != 1000 {
		t.Fatalf("first Read = %d, want 1000", n)
	}
	if n := c.Read(buf); n != 0 {
		t.Errorf("Read after the end = %d, want 0", n)
	}
}

func TestFreezeEmptyAndMissing(t *testing.T) {
	n := newNode(t)
	n.create("r", region.Replicate)
	z, err := n.f.Freeze("r", 0)
	if err != nil || z.Len() != 0 || len(readAll(z, 10)) != 0 {
		t.Errorf("empty region: Freeze = %v, %v; want an empty Frozen", z, err)
	}
	if _, err := n.f.Freeze("nope", 0); !errors.Is(err, region.ErrRegionNotFound) {
		t.Errorf("missing region: err = %v, want ErrRegionNotFound", err)
	}
	// A partition group with no entry of a region's incarnation yet.
	z, err = n.f.Freeze("p", 42)
	if err != nil || z.Len() != 0 || len(readAll(z, 10)) != 0 {
		t.Errorf("partitioned, no entries here: Freeze = %v, %v; want an empty Frozen", z, err)
	}
}
