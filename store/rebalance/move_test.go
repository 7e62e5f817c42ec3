package rebalance

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/kvnode/kvnode/fsm/codec"
	"github.com/kvnode/kvnode/fsm/history"
	"github.com/kvnode/kvnode/partition"
	"github.com/kvnode/kvnode/region"
	"github.com/kvnode/kvnode/store/regions"
)

// pages serves a bucket's entries two at a time, or fails; its delta is
// delta (with Delta set: from a build that reads deltas).
type pages struct {
	entries []regions.BucketEntry
	delta   regions.BucketDelta
	fail    error
}

func (p pages) BucketDelta(context.Context, uint64, int, history.Pos) (regions.BucketDelta, error) {
	d := p.delta
	d.Delta = true
	return d, p.fail
}

func (p pages) BucketPage(_ context.Context, _ uint64, _ int, after regions.BucketEntry, _ int) (regions.BucketPage, error) {
	if p.fail != nil {
		return regions.BucketPage{}, p.fail
	}
	i := 0
	if after.Key != "" {
		i = slices.IndexFunc(p.entries, func(e regions.BucketEntry) bool { return e.Key == after.Key && e.Region == after.Region }) + 1
	}
	end := min(i+2, len(p.entries))
	return regions.BucketPage{Entries: p.entries[i:end], More: end < len(p.entries)}, nil
}

// steps is what the groups were sent, as "group: action" lines.
func steps(store *memStore) []string {
	var out []string
	for _, c := range store.applied {
		switch c.Op {
		case codec.OpBucket:
			out = append(out, c.BucketAction.String())
		case codec.OpBucketImport:
			if len(c.Keys) > 0 {
				out = append(out, fmt.Sprintf("drop %d", len(c.Keys)))
				continue
			}
			out = append(out, fmt.Sprintf("import %d", len(c.Entries)))
		}
	}
	return out
}

// TestMove: a move makes the groups explicit, expects, imports the
// bucket's pages while the source takes writes, seals, imports what
// changed meanwhile (or, when that cannot be told, drops the copy and
// copies again), switches and makes the target the owner; the table
// records the move meanwhile and forgets it after. A move whose copy fails
// is abandoned: the target drops, the source unseals, the bucket stays.
func TestMove(t *testing.T) {
	ctx := context.Background()
	tab := table(t, 4, 4)
	store := newMemStore(t, tab)
	var entries []regions.BucketEntry
	for i := range 5 {
		entries = append(entries, regions.BucketEntry{Region: "p", RegionID: 9, Key: fmt.Sprintf("k%d", i), Value: []byte(`{}`)})
	}
	m := NewMover(store, pages{entries: entries}, nil)
	st, err := m.Move(ctx, 7, 2)
	if err != nil {
		t.Fatal(err)
	}
	got := steps(store)
	want := []string{"init", "init", "init", "init", "expect", "import 2", "import 2", "import 1", "seal", "release", "adopt"}
	if !slices.Equal(got, want) {
		t.Errorf("steps %v, want %v", got, want)
	}
	if st.Entries["p"] != 5 || st.From != tab.Owner(7) || st.To != 2 {
		t.Errorf("stats %+v", st)
	}
	// The adopt names the source and the release's index: its fence.
	release, adopt := store.applied[len(store.applied)-2], store.applied[len(store.applied)-1]
	if release.BucketAction != codec.BucketRelease || adopt.From != st.From || adopt.FromIndex != uint64(len(store.applied)-1) {
		t.Errorf("adopt %+v after release %+v: want From %d, FromIndex %d (the release's)", adopt, release, st.From, len(store.applied)-1)
	}
	after, _, _ := m.Table(ctx)
	if after.Owner(7) != 2 || len(after.Moves) != 0 {
		t.Errorf("after the move: owner %d, moves %+v", after.Owner(7), after.Moves)
	}

	// Sealed, the changes since the first page: written keys imported
	// again, removed ones dropped.
	store.applied = nil
	m.pages = pages{entries: entries, delta: regions.BucketDelta{Entries: entries[:1], Removed: entries[3:]}}
	if _, err := m.Move(ctx, 7, 3); err != nil {
		t.Fatal(err)
	}
	if got, want := steps(store), []string{"expect", "import 2", "import 2", "import 1", "seal", "import 1", "drop 2", "release", "adopt"}; !slices.Equal(got, want) {
		t.Errorf("steps of a move with changes %v, want %v", got, want)
	}
	// Changes that cannot be told: the first copy is dropped, and the
	// bucket copied again, sealed.
	store.applied = nil
	m.pages = pages{entries: entries, delta: regions.BucketDelta{Whole: true}}
	if _, err := m.Move(ctx, 7, 2); err != nil {
		t.Fatal(err)
	}
	if got, want := steps(store), []string{"expect", "import 2", "import 2", "import 1", "seal", "abandon", "expect", "import 2", "import 2", "import 1", "release", "adopt"}; !slices.Equal(got, want) {
		t.Errorf("steps of a move whose changes cannot be told %v, want %v", got, want)
	}

	// A failed copy: abandoned, the bucket stays.
	store.applied = nil
	m.pages = pages{fail: errors.New("member gone")}
	if _, err := m.Move(ctx, 8, 3); err == nil {
		t.Fatal("a move whose copy fails succeeded")
	}
	if got := steps(store); !slices.Equal(got, []string{"expect", "abandon", "unseal"}) {
		t.Errorf("steps of the failed move %v", got)
	}
	after, _, _ = m.Table(ctx)
	if after.Owner(8) != tab.Owner(8) || len(after.Moves) != 0 {
		t.Errorf("after the failed move: owner %d, moves %+v", after.Owner(8), after.Moves)
	}

	// A move a former leader left switching is finished by Resume; one
	// left before the switch is abandoned.
	store.applied = nil
	if _, err := m.update(ctx, func(t *partition.Table) error {
		t.Moves = []partition.Move{{Bucket: 10, From: t.Owner(10), To: 4, ID: 5, Switching: true}, {Bucket: 12, From: t.Owner(12), To: 4, ID: 6}}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if err := m.Resume(ctx); err != nil {
		t.Fatal(err)
	}
	after, _, _ = m.Table(ctx)
	if after.Owner(10) != 4 || after.Owner(12) == 4 || len(after.Moves) != 0 {
		t.Errorf("after Resume: bucket 10 owned by %d, 12 by %d, moves %+v", after.Owner(10), after.Owner(12), after.Moves)
	}
	if got := steps(store); !slices.Equal(got, []string{"release", "adopt", "abandon", "unseal"}) {
		t.Errorf("steps of Resume %v", got)
	}
}

// TestMoveKeepsToItsRate: with Rate set, the copy waits so as to copy no
// more than Rate bytes a second (--rebalance-rate).
func TestMoveKeepsToItsRate(t *testing.T) {
	store := newMemStore(t, table(t, 4, 4))
	var entries []regions.BucketEntry
	for i := range 5 {
		entries = append(entries, regions.BucketEntry{Region: "p", RegionID: 9, Key: fmt.Sprintf("k%d", i), Value: make([]byte, 100_000)})
	}
	m := NewMover(store, pages{entries: entries}, nil)
	m.Rate = 1_000_000
	start := time.Now()
	if _, err := m.Move(context.Background(), 7, 2); err != nil {
		t.Fatal(err)
	}
	// Pages of two: the first two pages (about 400 KB) are paced, the
	// last one ends the copy.
	if took := time.Since(start); took < 380*time.Millisecond || took > 5*time.Second {
		t.Errorf("the move took %v at 1 MB/s, want about 0.4 s", took)
	}
}

// catchUpPages is pages whose deltas answer a position (as builds with
// per-page deltas do): each delta moves it on by one, and they are
// recorded.
type catchUpPages struct {
	pages
	mu     sync.Mutex
	sinces []history.Pos
}

func (p *catchUpPages) BucketDelta(_ context.Context, _ uint64, _ int, since history.Pos) (regions.BucketDelta, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.sinces = append(p.sinces, since)
	d := p.delta
	d.Delta, d.Pos = true, history.Pos{Index: since.Index + 1}
	return d, nil
}

// TestMoveCatchesUpAfterEveryPage: the source's changes are copied after
// every page but the last, each delta since the position the one before
// answered, and the delta after the seal since the last of them, so that
// the history has to reach back one page's time, not the whole copy's.
func TestMoveCatchesUpAfterEveryPage(t *testing.T) {
	store := newMemStore(t, table(t, 4, 4))
	var entries []regions.BucketEntry
	for i := range 5 { // pages of two: three pages
		entries = append(entries, regions.BucketEntry{Region: "p", RegionID: 9, Key: fmt.Sprintf("k%d", i), Value: []byte(`1`)})
	}
	src := &catchUpPages{pages: pages{entries: entries, delta: regions.BucketDelta{
		Entries: []regions.BucketEntry{{Region: "p", RegionID: 9, Key: "k4", Value: []byte(`2`)}},
		Removed: []regions.BucketEntry{{Region: "p", RegionID: 9, Key: "gone"}},
	}}}
	m := NewMover(store, src, nil)
	if _, err := m.Move(context.Background(), 7, 2); err != nil {
		t.Fatal(err)
	}
	want := []history.Pos{{Index: 0}, {Index: 1}, {Index: 2}} // after pages 1 and 2, then after the seal
	if !slices.Equal(src.sinces, want) {
		t.Errorf("deltas since %v, want %v", src.sinces, want)
	}
	// Each delta's entry and drop reached the target, between the pages.
	imports, drops := 0, 0
	for _, c := range store.applied {
		if c.Op == codec.OpBucketImport && slices.Contains(c.Keys, "gone") {
			drops++
		}
		if c.Op == codec.OpBucketImport && slices.ContainsFunc(c.Entries, func(e region.Entry) bool { return string(e.Value) == `2` }) {
			imports++
		}
	}
	if imports != 3 || drops != 3 {
		t.Errorf("%d imports of the changed entry and %d drops, want 3 and 3", imports, drops)
	}
}
