package fsm

import (
	"bytes"
	"context"
	"errors"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/kvnode/kvnode/fsm/codec"
	"github.com/kvnode/kvnode/fsm/history"
	"github.com/kvnode/kvnode/region"
)

// populated builds a small state with every feature a snapshot must carry:
// both kinds, an empty region, unicode keys, a generated key (counter).
func populated(t *testing.T) *node {
	t.Helper()
	n := newNode(t)
	n.create("orders", region.Replicate)
	n.create("parts", region.Partition)
	n.create("empty", region.Replicate)
	n.put("orders", "b", `{"n":2}`, "ключ", `{}`, "a", orderValue)
	n.must(codec.Command{Op: codec.OpPutIfAbsent, Region: "orders", Entries: entries("", `{"gen":1}`)})
	n.put("parts", "日本/🙂", `{"x":[1,2.5,null]}`)
	n.put("orders", "2", `{}`) // the next generated key must skip it
	return n
}

func TestSnapshotRoundTrip(t *testing.T) {
	src := populated(t)
	snap := persist(t, src.f)

	dst := newNode(t)
	rc := &readCloser{Reader: bytes.NewReader(snap)}
	if err := dst.f.Restore(rc); err != nil {
		t.Fatalf("Restore: %v", err)
	}
	if !rc.closed {
		t.Error("Restore did not close its input")
	}
	if got, want := dump(t, dst.f), dump(t, src.f); got != want {
		t.Errorf("restored state:\n%s\nwant:\n%s", got, want)
	}
	if got, want := dst.f.AppliedIndex(), src.f.AppliedIndex(); got != want {
		t.Errorf("restored AppliedIndex = %d, want %d", got, want)
	}
	// The key counter is state: both replicas generate the same next key.
	dst.index = src.index
	gen := codec.Command{Op: codec.OpPutIfAbsent, Region: "orders", Entries: entries("", `{}`)}
	if got, want := dst.must(gen).Key, src.must(gen).Key; got != want || want != "3" {
		t.Errorf("next generated key after restore = %q, on the original %q, want both %q", got, want, "3")
	}
	if !bytes.Equal(persist(t, dst.f), persist(t, src.f)) {
		t.Error("snapshots of the original and the restored FSM differ after the same command")
	}
}

func TestRestoreReplacesEverything(t *testing.T) {
	src := newNode(t)
	src.create("kept", region.Replicate)
	src.put("kept", "k", `{"from":"snapshot"}`)
	snap := persist(t, src.f) // applied index 2

	dst := populated(t) // more regions, higher index
	if err := restore(dst.f, snap); err != nil {
		t.Fatal(err)
	}
	if got, want := dump(t, dst.f), "kept(REPLICATE) k={\"from\":\"snapshot\"}\n"; got != want {
		t.Errorf("state after restore:\n%s\nwant:\n%s", got, want)
	}
	if got := dst.f.AppliedIndex(); got != 2 {
		t.Errorf("AppliedIndex after restore = %d, want the snapshot's 2", got)
	}
	dst.create("orders", region.Replicate) // existed before the restore, not after
}

func TestRestoreRejectsDamage(t *testing.T) {
	good := persist(t, populated(t).f)

	// Any damage must fail cleanly and leave the existing state alone.
	victim := newNode(t)
	victim.create("old", region.Replicate)
	victim.put("old", "k", `{}`)
	before, beforeIndex := dump(t, victim.f), victim.f.AppliedIndex()
	expectRefused := func(what string, b []byte) {
		t.Helper()
		if err := restore(victim.f, b); err == nil {
			t.Fatalf("Restore of %s succeeded, want an error", what)
		}
		if got := dump(t, victim.f); got != before {
			t.Fatalf("after a failed Restore of %s, state is\n%s\nwant\n%s", what, got, before)
		}
		if got := victim.f.AppliedIndex(); got != beforeIndex {
			t.Fatalf("after a failed Restore of %s, AppliedIndex = %d, want %d", what, got, beforeIndex)
		}
	}
	for n := 0; n < len(good); n++ {
		expectRefused("a snapshot truncated to "+itoa(n)+" bytes", good[:n])
	}
	for i := range good {
		bad := bytes.Clone(good)
		bad[i] ^= 0x20
		expectRefused("a snapshot with byte "+itoa(i)+" flipped", bad)
	}
	expectRefused("a snapshot with trailing bytes", append(bytes.Clone(good), 0))
	expectRefused("garbage", []byte(strings.Repeat("garbage!", 20)))
}

// TestRestoreRejectsBadStructure: records that a correct checksum cannot
// excuse (the writer never produces them).
func TestRestoreRejectsBadStructure(t *testing.T) {
	for _, tc := range []struct {
		name string
		s    *snapshot
		want string
	}{
		{"unsorted regions", &snapshot{regions: []snapshotRegion{
			{name: "b", kind: region.Replicate, entries: newEntries()},
			{name: "a", kind: region.Replicate, entries: newEntries()},
		}}, "ascending"},
		{"duplicate regions", &snapshot{regions: []snapshotRegion{
			{name: "a", kind: region.Replicate, entries: newEntries()},
			{name: "a", kind: region.Replicate, entries: newEntries()},
		}}, "ascending"},
		{"unknown kind", &snapshot{regions: []snapshotRegion{
			{name: "a", kind: "LOCAL", entries: newEntries()},
		}}, "unknown kind"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var buf bytes.Buffer
			if err := tc.s.writeTo(&buf); err != nil {
				t.Fatal(err)
			}
			err := restore(New(Options{}), buf.Bytes())
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("Restore = %v, want an error mentioning %q", err, tc.want)
			}
		})
	}
}

// TestPersistIsCopyOnWrite: what Persist writes is the state at Snapshot
// time, whatever Apply does meanwhile.
func TestPersistIsCopyOnWrite(t *testing.T) {
	n := populated(t)
	// Enough entries that the B-tree has inner nodes to share.
	for i := 0; i < 500; i++ {
		n.put("orders", "bulk"+itoa(i), `{"i":`+itoa(i)+`}`)
	}
	wantState, wantIndex := dump(t, n.f), n.f.AppliedIndex()

	snap, err := n.f.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	defer snap.Release()
	for i := 0; i < 500; i += 2 {
		n.put("orders", "bulk"+itoa(i), `{"changed":true}`)
	}
	n.must(codec.Command{Op: codec.OpDelete, Region: "orders", Keys: []string{"a", "bulk1", "bulk499"}})
	n.must(codec.Command{Op: codec.OpPut, Region: "parts", Entries: entries("new", `{}`)})
	n.must(codec.Command{Op: codec.OpClear, Region: "empty"})
	n.must(codec.Command{Op: codec.OpDestroyRegion, Region: "parts"})
	n.create("later", region.Replicate)
	n.must(codec.Command{Op: codec.OpPutIfAbsent, Region: "later", Entries: entries("", `{}`)})

	sink := &memSink{}
	if err := snap.Persist(sink); err != nil {
		t.Fatal(err)
	}
	f := New(Options{})
	if err := restore(f, sink.buf.Bytes()); err != nil {
		t.Fatal(err)
	}
	if got := dump(t, f); got != wantState {
		t.Errorf("persisted state differs from the state at Snapshot time:\n%s\nwant:\n%s", got, wantState)
	}
	if got := f.AppliedIndex(); got != wantIndex {
		t.Errorf("persisted AppliedIndex = %d, want %d", got, wantIndex)
	}
}

func TestPersistCancelsOnWriteError(t *testing.T) {
	n := populated(t)
	snap, err := n.f.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	defer snap.Release()
	sink := &memSink{failAfter: 10}
	if err := snap.Persist(sink); !errors.Is(err, errSinkFull) {
		t.Errorf("Persist into a failing sink = %v, want errSinkFull", err)
	}
	if !sink.cancelled || sink.closed {
		t.Errorf("sink cancelled=%v closed=%v, want cancelled only", sink.cancelled, sink.closed)
	}
}

// goldenSnapshotNode is the fixed state behind testdata/golden/snapshot-v1.bin.
func goldenSnapshotNode(t *testing.T) *node {
	t.Helper()
	n := populated(t)
	n.must(codec.Command{Op: codec.OpCAS, Region: "orders", Pairs: []region.CASPair{{Key: "b", Old: []byte(`{"n":2}`), New: []byte(`{"n":3}`)}}})
	return n
}

const goldenSnapshotDump = "empty(REPLICATE)\n" +
	"orders(REPLICATE) 1={\"gen\":1} 2={} a=" + orderValue + " b={\"n\":3} ключ={}\n" +
	"parts(PARTITION) 日本/🙂={\"x\":[1,2.5,null]}\n"

// TestSnapshotGolden pins the snapshot formats: a snapshot written by any
// version must restore in every later one. Version 1 is no longer written,
// only read.
func TestSnapshotGolden(t *testing.T) {
	f := New(Options{})
	if err := restore(f, readGolden(t, "snapshot-v1.bin")); err != nil {
		t.Fatalf("Restore(snapshot-v1.bin): %v", err)
	}
	if got := dump(t, f); got != goldenSnapshotDump {
		t.Errorf("restored golden state:\n%s\nwant:\n%s", got, goldenSnapshotDump)
	}
	if got := f.AppliedIndex(); got != 8 {
		t.Errorf("restored golden AppliedIndex = %d, want 8", got)
	}
	n := &node{t: t, f: f, index: 8}
	if got := n.must(codec.Command{Op: codec.OpPutIfAbsent, Region: "orders", Entries: entries("", `{}`)}).Key; got != "3" {
		t.Errorf("next generated key after the golden snapshot = %q, want %q", got, "3")
	}
}

func itoa(i int) string { return strconv.Itoa(i) }

// goldenSnapshotV2Node is the fixed state behind snapshot-v2.bin: the v1
// golden state plus what version 2 adds (region IDs, a partition region
// with an ID, tombstones, metadata).
func goldenSnapshotV2Node(t *testing.T) *node {
	t.Helper()
	n := goldenSnapshotNode(t)
	n.must(codec.Command{Op: codec.OpPut, Region: "pr", RegionID: 77, Entries: entries("x", `{"p":1}`)})
	n.must(codec.Command{Op: codec.OpDestroyRegion, Region: "gone", RegionID: 12})
	n.must(codec.Command{Op: codec.OpSetMeta, MetaKey: "partition/table", MetaValue: []byte(`{"t":1}`)})
	n.must(codec.Command{Op: codec.OpSetMeta, MetaKey: "a/first", MetaValue: []byte(`x`)})
	return n
}

// TestSnapshotGoldenV2: a version-2 snapshot (written by builds before
// version 3) still restores to the state it was taken of.
func TestSnapshotGoldenV2(t *testing.T) {
	src := goldenSnapshotV2Node(t)

	f := New(Options{})
	if err := restore(f, readGolden(t, "snapshot-v2.bin")); err != nil {
		t.Fatalf("Restore(snapshot-v2.bin): %v", err)
	}
	if got, want := dump(t, f), dump(t, src.f); got != want {
		t.Errorf("restored v2 golden state:\n%s\nwant:\n%s", got, want)
	}
	for _, name := range []string{"orders", "parts", "pr"} {
		got, _ := f.RegionID(name)
		want, _ := src.f.RegionID(name)
		if got != want || got == 0 {
			t.Errorf("RegionID(%s) after restore = %d, want %d (non-zero)", name, got, want)
		}
	}
	if v, ver, ok := f.Meta("partition/table"); !ok || string(v) != `{"t":1}` || ver == 0 {
		t.Errorf("Meta after restore = %s, %d, %v", v, ver, ok)
	}
	// The tombstone survived: a late command for the destroyed ID is refused.
	n := &node{t: t, f: f, index: src.index}
	if res := n.apply(codec.Command{Op: codec.OpPut, Region: "gone", RegionID: 12, Entries: entries("k", "{}")}); !errors.Is(res.Err, region.ErrRegionNotFound) {
		t.Errorf("late write after restore: %v, want ErrRegionNotFound", res.Err)
	}
	// A version-2 snapshot has no history: resuming from before it is gone.
	if _, err := f.History().Events(context.Background(), "orders", history.Pos{Index: 1}, 10); !errors.Is(err, history.ErrGone) {
		t.Errorf("Events from before a v2 snapshot: %v, want ErrHistoryGone", err)
	}
}

// goldenSnapshotV3Node is the v2 state plus what version 3 adds: the
// group clock, a region's default time-to-live, entry deadlines and the
// change history.
func goldenSnapshotV3Node(t *testing.T) *node {
	t.Helper()
	n := goldenSnapshotV2Node(t)
	n.must(codec.Command{Op: codec.OpCreateRegion, Region: "sessions", Kind: region.Replicate, TTL: 60_000})
	n.must(codec.Command{Op: codec.OpPut, Region: "sessions", Entries: entries("s1", `{"u":"ann"}`), Now: 4_102_444_800_000, TTL: 30_000})
	n.must(codec.Command{Op: codec.OpPut, Region: "sessions", Entries: entries("s2", `{"u":"bob"}`), Now: 4_102_444_800_500})
	n.must(codec.Command{Op: codec.OpDelete, Region: "orders", Keys: []string{"b"}, Now: 4_102_444_800_600})
	return n
}

func TestSnapshotGoldenV3(t *testing.T) {
	src := goldenSnapshotV3Node(t)
	golden(t, "snapshot-v3.bin", persist(t, src.f))

	f := New(Options{Clock: func() time.Time { return time.UnixMilli(4_102_444_800_000) }})
	if err := restore(f, readGolden(t, "snapshot-v3.bin")); err != nil {
		t.Fatalf("Restore(snapshot-v3.bin): %v", err)
	}
	if got, want := dump(t, f), dump(t, src.f); got != want {
		t.Errorf("restored v3 golden state:\n%s\nwant:\n%s", got, want)
	}
	if info, _ := f.Region("sessions"); info.EntryTimeToLive != 60 {
		t.Errorf("restored region time-to-live = %ds, want 60", info.EntryTimeToLive)
	}
	// The deadline survived: s1 expires 30 s after its write, by the
	// group's clock, which the snapshot carried.
	n := &node{t: t, f: f, index: src.index}
	n.must(codec.Command{Op: codec.OpExpire, Region: "sessions", Keys: []string{"s1", "s2"}, Now: 4_102_444_830_000})
	if got, _ := f.Keys("sessions", 0); !slices.Equal(got, []string{"s2"}) {
		t.Errorf("keys after expiring at the restored deadline = %q, want [s2]", got)
	}
	// The history survived: every event, at the same positions.
	want, err := src.f.History().Events(context.Background(), "orders", history.Pos{}, 100)
	if err != nil {
		t.Fatal(err)
	}
	got, err := f.History().Events(context.Background(), "orders", history.Pos{}, 100)
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Events) == 0 || !reflect.DeepEqual(got.Events, want.Events) {
		t.Errorf("restored history of orders = %+v, want %+v", got.Events, want.Events)
	}
}
