package fsm

import (
	"errors"
	"strconv"
	"testing"

	"github.com/kvnode/kvnode/fsm/codec"
	"github.com/kvnode/kvnode/region"
)

// Partition-group semantics: commands carrying a region ID.

func pput(id uint64, kv ...string) codec.Command {
	return codec.Command{Op: codec.OpPut, Region: "p", RegionID: id, Entries: entries(kv...)}
}

func TestPartitionRegionCreatedOnFirstWrite(t *testing.T) {
	n := newNode(t)
	// Reads of an ID this group has not seen yet: an empty region.
	if c, err := n.f.Count("p", 5); err != nil || c != 0 {
		t.Fatalf("count before any write = %d, %v; want 0, nil", c, err)
	}
	if vals, err := n.f.GetMany("p", 5, []string{"a"}); err != nil || vals[0] != nil {
		t.Fatalf("get before any write = %v, %v", vals, err)
	}
	if l, err := n.f.List("p", 5, -1); err != nil || len(l) != 0 {
		t.Fatalf("list before any write = %v, %v", l, err)
	}
	if k, err := n.f.Keys("p", 5); err != nil || len(k) != 0 {
		t.Fatalf("keys before any write = %v, %v", k, err)
	}
	n.must(pput(5, "a", `{"v":1}`))
	if v, err := n.f.Get("p", 5, "a"); err != nil || string(v) != `{"v":1}` {
		t.Fatalf("get = %s, %v", v, err)
	}
	if info, ok := n.f.Region("p"); !ok || info.Kind != region.Partition {
		t.Fatalf("lazily created region = %+v, %v; want a PARTITION region", info, ok)
	}
	if id, _ := n.f.RegionID("p"); id != 5 {
		t.Fatalf("RegionID = %d, want 5", id)
	}
}

func TestPartitionIncarnations(t *testing.T) {
	n := newNode(t)
	n.must(pput(5, "a", `{"v":1}`, "b", `{"v":2}`))

	// A stale incarnation is refused for writes and reads.
	if res := n.apply(pput(4, "c", `{}`)); !errors.Is(res.Err, region.ErrRegionNotFound) {
		t.Fatalf("write with an older id: %v, want ErrRegionNotFound", res.Err)
	}
	if _, err := n.f.Count("p", 4); !errors.Is(err, region.ErrRegionNotFound) {
		t.Fatalf("read with an older id: %v, want ErrRegionNotFound", err)
	}
	// A newer incarnation replaces the old one's entries.
	if c, err := n.f.Count("p", 9); err != nil || c != 0 {
		t.Fatalf("read of a newer id before its first write = %d, %v; want an empty region", c, err)
	}
	n.must(pput(9, "z", `{}`))
	if keys, _ := n.f.Keys("p", 9); len(keys) != 1 || keys[0] != "z" {
		t.Fatalf("keys of the new incarnation = %v, want [z]", keys)
	}
	if _, err := n.f.Count("p", 5); !errors.Is(err, region.ErrRegionNotFound) {
		t.Fatalf("read of the replaced incarnation: %v, want ErrRegionNotFound", err)
	}
}

func TestPartitionTombstone(t *testing.T) {
	n := newNode(t)
	n.must(pput(5, "a", `{}`))
	destroy := codec.Command{Op: codec.OpDestroyRegion, Region: "p", RegionID: 5}
	n.must(destroy)
	n.must(destroy) // idempotent
	if _, ok := n.f.Region("p"); ok {
		t.Fatalf("region still defined after destroy")
	}
	// No resurrection by a late write or read of the destroyed ID (or older).
	for _, id := range []uint64{5, 3} {
		if res := n.apply(pput(id, "late", `{}`)); !errors.Is(res.Err, region.ErrRegionNotFound) {
			t.Fatalf("late write with id %d: %v, want ErrRegionNotFound", id, res.Err)
		}
		if _, err := n.f.GetMany("p", id, []string{"a"}); !errors.Is(err, region.ErrRegionNotFound) {
			t.Fatalf("read with destroyed id %d: %v, want ErrRegionNotFound", id, err)
		}
	}
	if _, ok := n.f.Region("p"); ok {
		t.Fatalf("a refused late write created the region")
	}
	// A later incarnation of the name works.
	n.must(pput(6, "fresh", `{}`))
	if c, _ := n.f.Count("p", 6); c != 1 {
		t.Fatalf("count of the recreated region = %d, want 1", c)
	}
	// Destroying an older ID than the live one leaves the live one.
	n.must(codec.Command{Op: codec.OpDestroyRegion, Region: "p", RegionID: 4})
	if c, err := n.f.Count("p", 6); err != nil || c != 1 {
		t.Fatalf("live region after destroying an older id: %d, %v", c, err)
	}
}

func TestPartitionCommandsOnlyForEntries(t *testing.T) {
	n := newNode(t)
	for _, c := range []codec.Command{
		{Op: codec.OpCreateRegion, Region: "p", RegionID: 3, Kind: region.Partition},
		{Op: codec.OpClear, Region: "p", RegionID: 3},
	} {
		if res := n.apply(c); !errors.Is(res.Err, region.ErrInvalid) {
			t.Errorf("%v with a region id: %v, want ErrInvalid", c.Op, res.Err)
		}
	}
}

func TestPartitionEntryRefusalsChangeNothing(t *testing.T) {
	n := newNode(t)
	n.must(pput(2, "a", `{"v":1}`, "b", `{"v":2}`))
	before := dump(t, n.f)
	for _, c := range []codec.Command{
		{Op: codec.OpReplace, Region: "p", RegionID: 2, Entries: entries("a", `{"x":1}`, "zz", `{}`)},
		{Op: codec.OpCAS, Region: "p", RegionID: 2, Pairs: []region.CASPair{{Key: "a", Old: []byte(`{"v":9}`), New: []byte(`{}`)}}},
		{Op: codec.OpDelete, Region: "p", RegionID: 2, Keys: []string{"a", "zz"}},
		{Op: codec.OpPutIfAbsent, Region: "p", RegionID: 2, Entries: entries("a", `{}`)},
	} {
		if res := n.apply(c); res.Err == nil {
			t.Errorf("%v was applied, want a refusal", c.Op)
		}
	}
	if after := dump(t, n.f); after != before {
		t.Fatalf("refusals changed the state:\n%s\nwant\n%s", after, before)
	}
}

func TestKeyFilterRestrictsGeneratedKeys(t *testing.T) {
	even := func(k string) bool {
		i, err := strconv.Atoi(k)
		return err == nil && i%2 == 0
	}
	n := &node{t: t, f: New(Options{KeyFilter: even})}
	n.must(pput(1, "4", `{}`))
	var got []string
	for range 4 {
		got = append(got, n.must(codec.Command{Op: codec.OpPutIfAbsent, Region: "p", RegionID: 1, Entries: entries("", `{}`)}).Key)
	}
	want := []string{"2", "6", "8", "10"} // 4 exists; odd numbers filtered
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("generated keys = %v, want %v", got, want)
		}
	}
	// The filter survives a restore (it is configuration, not state).
	snap := persist(t, n.f)
	if err := restore(n.f, snap); err != nil {
		t.Fatal(err)
	}
	if k := n.must(codec.Command{Op: codec.OpPutIfAbsent, Region: "p", RegionID: 1, Entries: entries("", `{}`)}).Key; k != "12" {
		t.Fatalf("generated key after restore = %q, want 12", k)
	}
}

func TestSetMeta(t *testing.T) {
	n := newNode(t)
	set := func(version uint64, v string) *codec.Result {
		return n.apply(codec.Command{Op: codec.OpSetMeta, MetaKey: "t", MetaVersion: version, MetaValue: []byte(v)})
	}
	if _, _, ok := n.f.Meta("t"); ok {
		t.Fatal("meta exists before any write")
	}
	// Creating requires version 0.
	if res := set(3, "x"); !errors.Is(res.Err, region.ErrVersionConflict) || res.Version != 0 {
		t.Fatalf("create with version 3: %+v, want a conflict reporting version 0", res)
	}
	res := set(0, "one")
	if res.Err != nil || res.Version != n.index {
		t.Fatalf("create: %+v, want version %d (the entry's index)", res, n.index)
	}
	v1 := res.Version
	if v, ver, ok := n.f.Meta("t"); !ok || string(v) != "one" || ver != v1 {
		t.Fatalf("Meta = %s, %d, %v", v, ver, ok)
	}
	// A stale compare-and-set is refused and reports the current version.
	if res := set(0, "stale"); !errors.Is(res.Err, region.ErrVersionConflict) || res.Version != v1 {
		t.Fatalf("stale set: %+v, want a conflict reporting %d", res, v1)
	}
	if res := set(v1, "two"); res.Err != nil || res.Version <= v1 {
		t.Fatalf("set at the current version: %+v", res)
	}
	if v, _, _ := n.f.Meta("t"); string(v) != "two" {
		t.Fatalf("Meta = %s, want two", v)
	}
	if res := n.apply(codec.Command{Op: codec.OpSetMeta}); !errors.Is(res.Err, region.ErrInvalid) {
		t.Fatalf("empty meta key: %v, want ErrInvalid", res.Err)
	}
}

func TestRegionIDIsCreationIndex(t *testing.T) {
	n := newNode(t)
	n.create("a", region.Replicate)
	ia := n.index
	n.create("b", region.Partition)
	if id, ok := n.f.RegionID("a"); !ok || id != ia {
		t.Fatalf("RegionID(a) = %d, %v; want %d", id, ok, ia)
	}
	if id, _ := n.f.RegionID("b"); id != ia+1 {
		t.Fatalf("RegionID(b) = %d, want %d", id, ia+1)
	}
	if _, ok := n.f.RegionID("none"); ok {
		t.Fatal("RegionID of an unknown region reported ok")
	}
}

// TestBatchAppliesEachSubCommand: a batch applies its sub-commands in order
// as independent commands, each with its own result, at one log index.
func TestBatchAppliesEachSubCommand(t *testing.T) {
	n := newNode(t)
	n.create("r", region.Replicate)
	enc := func(c codec.Command) []byte { return c.Encode(nil) }
	res := n.must(codec.Command{Op: codec.OpBatch, Batch: [][]byte{
		enc(codec.Command{Op: codec.OpPut, Region: "r", Entries: entries("a", `{"v":1}`)}),
		enc(codec.Command{Op: codec.OpPutIfAbsent, Region: "r", Entries: entries("a", `{"v":2}`)}),
		enc(codec.Command{Op: codec.OpCAS, Region: "r", Pairs: []region.CASPair{{Key: "a", Old: []byte(`{"v":1}`), New: []byte(`{"v":3}`)}}}),
		enc(codec.Command{Op: codec.OpPutIfAbsent, Region: "r", Entries: entries("", `{"g":1}`)}),
		enc(codec.Command{Op: codec.OpPut, Region: "nope", Entries: entries("x", `{}`)}),
		enc(pput(7, "p1", `{}`)),
	}})
	if len(res.Batch) != 6 {
		t.Fatalf("batch result has %d results, want 6", len(res.Batch))
	}
	var ce *region.ConflictError
	if res.Batch[0].Err != nil || !errors.As(res.Batch[1].Err, &ce) || string(ce.Current) != `{"v":1}` ||
		res.Batch[2].Err != nil || res.Batch[3].Key == "" || !errors.Is(res.Batch[4].Err, region.ErrRegionNotFound) || res.Batch[5].Err != nil {
		t.Fatalf("batch results: %+v %+v %+v %+v %+v %+v", res.Batch[0], res.Batch[1], res.Batch[2], res.Batch[3], res.Batch[4], res.Batch[5])
	}
	if v, _ := n.f.Get("r", 0, "a"); string(v) != `{"v":3}` {
		t.Fatalf("after the batch a = %s, want {\"v\":3} (sub-commands apply in order)", v)
	}
	if n.f.AppliedIndex() != n.index {
		t.Fatalf("AppliedIndex = %d, want %d", n.f.AppliedIndex(), n.index)
	}
}

func TestClearPart(t *testing.T) {
	n := newNode(t)
	n.must(codec.Command{Op: codec.OpPut, Region: "p", RegionID: 5, Entries: entries("a", `{}`, "b", `{}`)})
	if res := n.apply(codec.Command{Op: codec.OpClearPart, Region: "p"}); !errors.Is(res.Err, region.ErrInvalid) {
		t.Fatalf("clear-part without a region id: %v, want ErrInvalid", res.Err)
	}
	n.must(codec.Command{Op: codec.OpClearPart, Region: "p", RegionID: 5})
	if c, _ := n.f.Count("p", 5); c != 0 {
		t.Fatalf("after clear-part the part holds %d entries", c)
	}
	n.must(codec.Command{Op: codec.OpDestroyRegion, Region: "p", RegionID: 5})
	if res := n.apply(codec.Command{Op: codec.OpClearPart, Region: "p", RegionID: 5}); !errors.Is(res.Err, region.ErrRegionNotFound) {
		t.Fatalf("clear-part of a destroyed incarnation: %v, want ErrRegionNotFound", res.Err)
	}
}
