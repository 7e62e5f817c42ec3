package fsm

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/kvnode/kvnode/fsm/codec"
	"github.com/kvnode/kvnode/fsm/history"
	"github.com/kvnode/kvnode/partition"
	"github.com/kvnode/kvnode/region"
)

// keysOfBucket are n keys of bucket b.
func keysOfBucket(b, n int) []string {
	var out []string
	for i := 0; len(out) < n; i++ {
		if k := fmt.Sprintf("k%d", i); partition.Bucket(k) == b {
			out = append(out, k)
		}
	}
	return out
}

// partNode is a partition group's state machine with region "p" (id 5)
// holding the given keys, its buckets made explicit with owned.
func partNode(t *testing.T, owned []uint64, keys ...string) *node {
	t.Helper()
	n := &node{t: t, f: New(Options{Group: 1})}
	for _, k := range keys {
		n.must(codec.Command{Op: codec.OpPut, Region: "p", RegionID: 5, Entries: entries(k, `{"k":"`+k+`"}`), Now: uint64(time.Now().UnixMilli()), TTL: 3_600_000})
	}
	if owned != nil {
		n.must(codec.Command{Op: codec.OpBucket, BucketAction: codec.BucketInit, Buckets: owned})
	}
	return n
}

func step(a codec.BucketAction, b int, move uint64) codec.Command {
	return codec.Command{Op: codec.OpBucket, BucketAction: a, Bucket: uint64(b), MoveID: move}
}

// TestBucketMove: bucket 7 moves from group S to group T, as the store's
// mover drives it. Throughout, each of the bucket's operations is served by
// exactly one of them or refused with ErrWrongGroup (a retry), reads are
// never served from a half-imported copy, the entries arrive with their
// deadlines, and the move makes no change events (watchers saw the writes
// where they happened); a step of another move is refused.
func TestBucketMove(t *testing.T) {
	const b, move = 7, 0xabc
	mine := keysOfBucket(b, 3)
	other := keysOfBucket(8, 1)
	src := partNode(t, []uint64{7, 8}, append(slices.Clone(mine), other...)...)
	dst := partNode(t, []uint64{9})
	put := func(n *node, k string) *codec.Result {
		return n.apply(codec.Command{Op: codec.OpPut, Region: "p", RegionID: 5, Entries: entries(k, `{"v":2}`)})
	}
	wrong := func(what string, err error) {
		t.Helper()
		if !errors.Is(err, region.ErrWrongGroup) {
			t.Errorf("%s: %v, want ErrWrongGroup", what, err)
		}
	}

	// Before: S serves the bucket; T refuses it.
	if res := put(dst, mine[0]); !errors.Is(res.Err, region.ErrWrongGroup) {
		t.Fatalf("a write to T before the move: %v", res.Err)
	}
	_, err := dst.f.Get("p", 5, mine[0])
	wrong("a read from T before the move", err)

	// Seal: S serves reads, refuses writes; other buckets go on.
	src.must(step(codec.BucketSeal, b, move))
	wrong("a write to S once sealed", put(src, mine[1]).Err)
	if v, err := src.f.Get("p", 5, mine[1]); err != nil || string(v) != `{"k":"`+mine[1]+`"}` {
		t.Errorf("a read from S once sealed: %s, %v", v, err)
	}
	if res := put(src, other[0]); res.Err != nil {
		t.Errorf("a write of another bucket to S: %v", res.Err)
	}
	if res := src.apply(step(codec.BucketSeal, b, move+1)); !errors.Is(res.Err, region.ErrInvalid) {
		t.Errorf("a seal by another move: %v", res.Err)
	}

	// Copy into T: imported entries are served by nobody at T yet.
	dst.must(step(codec.BucketExpect, b, move))
	var imp codec.Command
	src.f.BucketEntries(b, BucketEntry{}, func(e BucketEntry) bool {
		imp.Entries = append(imp.Entries, region.Entry{Key: e.Key, Value: e.Value})
		imp.Expires = append(imp.Expires, e.Expires)
		imp.Region, imp.RegionID = e.Region, e.RegionID
		return true
	})
	if len(imp.Entries) != len(mine) || imp.Expires[0] < uint64(time.Now().UnixMilli()) {
		t.Fatalf("the bucket's entries at S: %+v", imp)
	}
	imp.Op, imp.Bucket, imp.MoveID = codec.OpBucketImport, b, move
	before := dst.f.events.Position()
	dst.must(imp)
	if n, _ := dst.f.Count("p", 5); n != 0 {
		t.Errorf("T counts %d entries while importing, want 0", n)
	}
	if keys, _ := dst.f.Keys("p", 5); len(keys) != 0 {
		t.Errorf("T lists %v while importing", keys)
	}
	if z, err := dst.f.Freeze("p", 5); err != nil || z.Cursor().Read(make([]region.Entry, 8)) != 0 {
		t.Errorf("T's frozen state (streamed listings, a watch's initial results) holds the bucket while importing (%v)", err)
	}
	_, err = dst.f.Get("p", 5, mine[0])
	wrong("a read from T while importing", err)
	imp.MoveID = move + 1
	if res := dst.apply(imp); !errors.Is(res.Err, region.ErrInvalid) {
		t.Errorf("an import of another move: %v", res.Err)
	}
	// The last pass drops a key deleted at the source since it was
	// copied (a key of another bucket is refused).
	drop := codec.Command{Op: codec.OpBucketImport, Region: "p", RegionID: 5, Bucket: b, MoveID: move, Keys: []string{other[0]}}
	if res := dst.apply(drop); !errors.Is(res.Err, region.ErrInvalid) {
		t.Errorf("a drop of another bucket's key: %v", res.Err)
	}
	drop.Keys = []string{mine[0]}
	dst.must(drop)
	if e, ok := src.f.BucketEntryOf("p", 5, mine[1]); !ok || string(e.Value) != `{"k":"`+mine[1]+`"}` || e.Expires == 0 {
		t.Errorf("BucketEntryOf(%s) at S = %+v, %v", mine[1], e, ok)
	}

	// Release, then adopt (as the mover does): T serves, S refuses and
	// holds nothing of it. The release answers its log index, which the
	// adopt names in its fence.
	released := src.must(step(codec.BucketRelease, b, move))
	if again := src.must(step(codec.BucketRelease, b, move)); again.Version <= released.Version { // a retried step is a no-op
		t.Errorf("a retried release answered index %d, the first %d", again.Version, released.Version)
	}
	adopt := step(codec.BucketAdopt, b, move)
	adopt.From, adopt.FromIndex = 3, released.Version
	dst.must(adopt)
	if v, err := dst.f.Get("p", 5, mine[2]); err != nil || string(v) != `{"k":"`+mine[2]+`"}` {
		t.Errorf("a read from T after the move: %s, %v", v, err)
	}
	if v, err := dst.f.Get("p", 5, mine[0]); !errors.Is(err, region.ErrKeyNotFound) {
		t.Errorf("a key the last pass dropped, read from T after the move: %s, %v", v, err)
	}
	if res := put(dst, mine[1]); res.Err != nil {
		t.Errorf("a write to T after the move: %v", res.Err)
	}
	wrong("a write to S after the move", put(src, mine[1]).Err)
	if keys, _ := src.f.Keys("p", 5); !slices.Equal(keys, other) {
		t.Errorf("S keeps %v after the move, want %v", keys, other)
	}
	if due := dst.f.Due(10); len(due) != 0 {
		t.Errorf("T finds %v due at the group clock", due)
	}
	if got := dst.f.Buckets(); got[b] != "owned" || got[9] != "owned" || got[8] != "absent" {
		t.Errorf("T's buckets: 7 %s, 8 %s, 9 %s", got[7], got[8], got[9])
	}
	// The only events at T are the adopt's fence, which every region's
	// watch reads, and the one write made there after the move.
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	for _, name := range []string{"p", "any other region"} {
		batch, _ := dst.f.events.Events(ctx, name, before, 100)
		fence, ok := history.FenceInfo{}, len(batch.Events) > 0
		if ok {
			fence, ok = history.FenceOf(batch.Events[0])
		}
		if want := (history.FenceInfo{Bucket: b, From: 3, Release: released.Version}); !ok || fence != want {
			t.Errorf("events of %q at T: %+v, want first the fence %+v", name, batch.Events, want)
		}
		if wantN := map[bool]int{true: 2, false: 1}[name == "p"]; len(batch.Events) != wantN || (name == "p" && batch.Events[1].Key != mine[1]) {
			t.Errorf("events of %q at T: %+v, want the fence and %d write(s) after the move", name, batch.Events, wantN-1)
		}
	}

	// T's state, buckets and deadlines included, survives a snapshot.
	again := New(Options{Group: 1})
	if err := restore(again, persist(t, dst.f)); err != nil {
		t.Fatal(err)
	}
	if dump(t, again) != dump(t, dst.f) || !slices.Equal(again.Buckets(), dst.f.Buckets()) {
		t.Error("the restored copy differs")
	}
	if batch, _ := again.events.Events(ctx, "p", before, 100); len(batch.Events) != 2 || batch.Events[0].Type != history.Fence {
		t.Errorf("events of the restored copy: %+v, want the fence and the write", batch.Events)
	}
}

// TestBucketAbandon: a move abandoned before the adopt leaves the source
// as it was (unsealed) and the target without the bucket's entries.
func TestBucketAbandon(t *testing.T) {
	const b, move = 3, 0x11
	mine := keysOfBucket(b, 2)
	src := partNode(t, []uint64{3}, mine...)
	dst := partNode(t, []uint64{})
	src.must(step(codec.BucketSeal, b, move))
	dst.must(step(codec.BucketExpect, b, move))
	dst.must(codec.Command{Op: codec.OpBucketImport, Region: "p", RegionID: 5, Bucket: b, MoveID: move,
		Entries: entries(mine[0], `{}`), Expires: []uint64{0}})
	dst.must(step(codec.BucketAbandon, b, move))
	src.must(step(codec.BucketUnseal, b, move))
	if res := src.apply(codec.Command{Op: codec.OpPut, Region: "p", RegionID: 5, Entries: entries(mine[0], `{"v":3}`)}); res.Err != nil {
		t.Errorf("a write to S after the abandon: %v", res.Err)
	}
	if sizes := dst.f.RegionSizes(); len(sizes) != 1 || sizes[0].Entries != 0 {
		t.Errorf("T keeps entries of the abandoned move: %+v", sizes)
	}
	if res := dst.apply(step(codec.BucketAdopt, b, move)); !errors.Is(res.Err, region.ErrInvalid) {
		t.Errorf("an adopt after the abandon: %v", res.Err)
	}
	// A former control leader's mover, still running, sends the seal of
	// the abandoned move late: refused, and the bucket takes writes.
	// Likewise when the abandon's unseal came before the move ever
	// sealed (a move abandoned during its copy). A new move seals.
	if res := src.apply(step(codec.BucketSeal, b, move)); !errors.Is(res.Err, region.ErrInvalid) {
		t.Errorf("a late seal of the abandoned move: %v", res.Err)
	}
	src.must(step(codec.BucketUnseal, b, move+1))
	if res := src.apply(step(codec.BucketSeal, b, move+1)); !errors.Is(res.Err, region.ErrInvalid) {
		t.Errorf("a late seal of a move abandoned before it sealed: %v", res.Err)
	}
	if res := src.apply(codec.Command{Op: codec.OpPut, Region: "p", RegionID: 5, Entries: entries(mine[0], `{"v":4}`)}); res.Err != nil {
		t.Errorf("a write to S after the late seals: %v", res.Err)
	}
	src.must(step(codec.BucketSeal, b, move+2))
}

// TestBucketsGeneratedKeys: an explicit group generates keys of the
// buckets it owns only, and one that owns none refuses rather than loop.
func TestBucketsGeneratedKeys(t *testing.T) {
	n := partNode(t, []uint64{4, 40})
	for range 20 {
		res := n.must(codec.Command{Op: codec.OpPutIfAbsent, Region: "p", RegionID: 5, Entries: entries("", `{}`)})
		if b := partition.Bucket(res.Key); b != 4 && b != 40 {
			t.Fatalf("generated key %q is of bucket %d", res.Key, b)
		}
	}
	empty := partNode(t, []uint64{})
	if res := empty.apply(codec.Command{Op: codec.OpPutIfAbsent, Region: "p", RegionID: 5, Entries: entries("", `{}`)}); !errors.Is(res.Err, region.ErrWrongGroup) {
		t.Errorf("a generated key in a group of no bucket: %v", res.Err)
	}
	if res := n.apply(codec.Command{Op: codec.OpBucket, BucketAction: codec.BucketInit, Buckets: []uint64{5}}); !errors.Is(res.Err, region.ErrInvalid) {
		t.Errorf("a second init of other buckets: %v", res.Err)
	}
	n.must(codec.Command{Op: codec.OpBucket, BucketAction: codec.BucketInit, Buckets: []uint64{4, 40}})
}
