package fsm

import (
	"encoding/json"
	"errors"
	"fmt"
	"testing"

	"github.com/kvnode/kvnode/fsm/codec"
	"github.com/kvnode/kvnode/region"
)

func TestMetaDeleteAndList(t *testing.T) {
	n := newNode(t)
	set := func(key string, version uint64, value string) *codec.Result {
		return n.apply(codec.Command{Op: codec.OpSetMeta, MetaKey: key, MetaVersion: version, MetaValue: []byte(value)})
	}
	v1 := set("query/a", 0, "A").Version
	set("query/b", 0, "B")
	set("other", 0, "X")
	if res := set("query/zz", 0, ""); !errors.Is(res.Err, region.ErrKeyNotFound) {
		t.Fatalf("deleting an absent key: Err = %v, want ErrKeyNotFound", res.Err)
	}
	if res := set("query/a", v1+100, ""); !errors.Is(res.Err, region.ErrVersionConflict) {
		t.Fatalf("deleting at a wrong version: Err = %v, want ErrVersionConflict", res.Err)
	}
	got := n.f.MetaList("query/")
	if len(got) != 2 || got[0].Key != "query/a" || string(got[1].Value) != "B" {
		t.Fatalf("MetaList = %+v, want query/a and query/b", got)
	}
	if res := set("query/a", v1, ""); res.Err != nil {
		t.Fatalf("delete: %v", res.Err)
	}
	if _, _, ok := n.f.Meta("query/a"); ok {
		t.Fatal("query/a still present after delete")
	}
	// Deletion survives a snapshot round trip.
	f2 := New(Options{})
	if err := restore(f2, persist(t, n.f)); err != nil {
		t.Fatal(err)
	}
	if got := f2.MetaList("query/"); len(got) != 1 || got[0].Key != "query/b" {
		t.Fatalf("after restore MetaList = %+v, want only query/b", got)
	}
}

func TestScanSeesAStableView(t *testing.T) {
	n := newNode(t)
	n.create("r", region.Replicate)
	for i := range 100 {
		n.put("r", fmt.Sprintf("k%03d", i), fmt.Sprintf(`{"i":%d}`, i))
	}
	seen := 0
	err := n.f.Scan("r", 0, func(key string, value json.RawMessage) bool {
		// Writes while scanning neither block nor show up in this scan.
		if seen == 0 {
			n.put("r", "k000", `{"i":-1}`, "new", `{}`)
		}
		if key == "k000" && string(value) != `{"i":0}` {
			t.Errorf("scan saw k000 = %s, want the value at the start of the scan", value)
		}
		seen++
		return true
	})
	if err != nil || seen != 100 {
		t.Fatalf("Scan = %v after %d entries, want 100 entries", err, seen)
	}
	if err := n.f.Scan("nope", 0, func(string, json.RawMessage) bool { return true }); !errors.Is(err, region.ErrRegionNotFound) {
		t.Fatalf("Scan of an unknown region = %v, want ErrRegionNotFound", err)
	}
}
