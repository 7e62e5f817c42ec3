package rebalance

import (
	"context"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/kvnode/kvnode/fsm"
	"github.com/kvnode/kvnode/fsm/codec"
	"github.com/kvnode/kvnode/partition"
	"github.com/kvnode/kvnode/region"
	"github.com/kvnode/kvnode/store/catalog"
)

// memStore is the control group's metadata in memory, and groups that
// take every command.
type memStore struct {
	mu      sync.Mutex
	meta    map[string]catalog.Entry
	next    uint64
	applied []*codec.Command
	// failSeals refuses this many seals (as a group that lost its
	// leader would).
	failSeals int
	// delay is how long each bucket step takes (as a group's log would).
	delay time.Duration
	// watchTable, when set, sees every partition table written.
	watchTable func(partition.Table)
}

func newMemStore(t *testing.T, tab partition.Table) *memStore {
	t.Helper()
	raw, err := partition.Encode(tab)
	if err != nil {
		t.Fatal(err)
	}
	return &memStore{meta: map[string]catalog.Entry{catalog.TableKey: {Key: catalog.TableKey, Value: raw, Version: 1}}, next: 2}
}

func (m *memStore) Meta(_ context.Context, _ region.Consistency, key string) ([]byte, uint64, bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	e, ok := m.meta[key]
	return e.Value, e.Version, ok, nil
}

func (m *memStore) MetaList(_ context.Context, _ region.Consistency, prefix string) ([]catalog.Entry, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []catalog.Entry
	for k, e := range m.meta {
		if strings.HasPrefix(k, prefix) {
			out = append(out, e)
		}
	}
	return out, nil
}

func (m *memStore) SetMeta(_ context.Context, key string, version uint64, value []byte) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.meta[key].Version != version {
		return region.ErrVersionConflict
	}
	m.meta[key] = catalog.Entry{Key: key, Value: value, Version: m.next}
	m.next++
	if key == catalog.TableKey && m.watchTable != nil {
		t, err := partition.Decode(value)
		if err != nil {
			return err
		}
		m.watchTable(t)
	}
	return nil
}

func (m *memStore) Apply(_ context.Context, _ uint64, cmd *codec.Command) (*codec.Result, error) {
	time.Sleep(m.delay)
	m.mu.Lock()
	defer m.mu.Unlock()
	if cmd.Op == codec.OpBucket && cmd.BucketAction == codec.BucketSeal && m.failSeals > 0 {
		m.failSeals--
		return nil, region.ErrNotLeader
	}
	m.applied = append(m.applied, cmd)
	// Its position in applied stands for the log index (a release's
	// result carries it).
	return &codec.Result{Version: uint64(len(m.applied))}, nil
}

func (m *memStore) Formats() int { return fsm.Formats }

// TestAutoStart: with --partition-groups auto a cluster with more members
// than groups starts a rebalance that grows them to the members; with
// --auto-rebalance uneven buckets start one that only evens them; an even
// cluster, or one with the modes off, starts nothing.
func TestAutoStart(t *testing.T) {
	even := table(t, 4, 4)
	uneven := table(t, 6, 6)
	uneven.Owners = make([]uint64, partition.Buckets)
	for b := range uneven.Owners {
		uneven.Owners[b] = even.Owner(b) // groups 5 and 6 own nothing yet
	}
	for _, tc := range []struct {
		name    string
		tab     partition.Table
		auto    Auto
		members int
		want    int // -1: no operation
	}{
		{"auto groups, six members", even, Auto{Groups: true}, 6, 6},
		{"auto groups, as many members as groups", even, Auto{Groups: true}, 4, -1},
		{"auto rebalance, uneven", uneven, Auto{Rebalance: true}, 3, 0},
		{"auto rebalance, even", even, Auto{Rebalance: true}, 3, -1},
		{"off", uneven, Auto{}, 9, -1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			store := newMemStore(t, tc.tab)
			ops := NewOperations(store)
			tc.auto.Members = func() int { return tc.members }
			r := NewRunner(ops, NewMover(store, nil, nil), func() bool { return true }, tc.auto, nil)
			r.autoStart(context.Background())
			started, err := ops.List(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			switch {
			case tc.want < 0 && len(started) != 0:
				t.Errorf("started %+v, want none", started)
			case tc.want >= 0 && (len(started) != 1 || started[0].Groups != tc.want || started[0].Status != InProgress):
				t.Errorf("started %+v, want one growing to %d groups", started, tc.want)
			}
		})
	}
}

// TestRunPlansAgainAfterAFailedMove: a move that fails (a group lost its
// leader) is abandoned and the operation plans again, and ends in SUCCESS
// with every bucket even; moves that keep failing end it in ERROR.
func TestRunPlansAgainAfterAFailedMove(t *testing.T) {
	uneven := table(t, 5, 5)
	even := table(t, 4, 4)
	uneven.Owners = make([]uint64, partition.Buckets)
	for b := range uneven.Owners {
		uneven.Owners[b] = even.Owner(b) // group 5 owns nothing yet
	}
	for _, tc := range []struct {
		fails int
		ok    bool
	}{{2, true}, {maxMoveFailures, false}} {
		store := newMemStore(t, uneven)
		store.failSeals = tc.fails
		r := NewRunner(NewOperations(store), NewMover(store, pages{}, nil), func() bool { return true }, Auto{}, nil)
		r.pause = time.Millisecond
		op := Operation{ID: "op", Status: InProgress}
		err := r.run(context.Background(), &op)
		after, _, _ := r.mover.Table(context.Background())
		if tc.ok {
			if err != nil || len(PlanBuckets(after)) != 0 || len(after.Moves) != 0 || op.BucketsMoved != 22 {
				t.Errorf("%d failed seals: %v; %d buckets moved, %d left to plan, moves %+v", tc.fails, err, op.BucketsMoved, len(PlanBuckets(after)), after.Moves)
			}
			continue
		}
		if !errors.Is(err, region.ErrNotLeader) || len(after.Moves) != 0 {
			t.Errorf("%d failed seals in a row: %v, moves left %+v; want ErrNotLeader and none", tc.fails, err, after.Moves)
		}
	}
}

// TestRunMovesInParallel: a rebalance from 3 groups to 6 runs up to
// Parallel moves at once, never two on one group, and ends even, sooner
// than one move at a time.
func TestRunMovesInParallel(t *testing.T) {
	grown := table(t, 6, 6)
	three := table(t, 3, 3)
	grown.Owners = make([]uint64, partition.Buckets)
	for b := range grown.Owners {
		grown.Owners[b] = three.Owner(b) // groups 4-6 own nothing yet
	}
	took := map[int]time.Duration{}
	for _, parallel := range []int{1, 4} {
		store := newMemStore(t, grown)
		store.delay = 2 * time.Millisecond
		most := 0
		store.watchTable = func(tab partition.Table) {
			most = max(most, len(tab.Moves))
			used := map[uint64]bool{}
			for _, mv := range tab.Moves {
				if used[mv.From] || used[mv.To] {
					t.Errorf("Parallel %d: two moves at once on a group: %+v", parallel, tab.Moves)
				}
				used[mv.From], used[mv.To] = true, true
			}
		}
		r := NewRunner(NewOperations(store), NewMover(store, pages{}, nil), func() bool { return true }, Auto{}, nil)
		r.Parallel = parallel
		op := Operation{ID: "op", Status: InProgress}
		start := time.Now()
		if err := r.run(context.Background(), &op); err != nil {
			t.Fatalf("Parallel %d: %v", parallel, err)
		}
		took[parallel] = time.Since(start)
		after, _, _ := r.mover.Table(context.Background())
		if len(PlanBuckets(after)) != 0 || len(after.Moves) != 0 || op.BucketsMoved != 56 {
			t.Errorf("Parallel %d: %d buckets moved (want 56), %d left to plan, moves %+v", parallel, op.BucketsMoved, len(PlanBuckets(after)), after.Moves)
		}
		// Three groups to move out of, three to move into: at most three
		// moves can run at once.
		if want := min(parallel, 3); most != want {
			t.Errorf("Parallel %d: at most %d moves ran at once, want %d", parallel, most, want)
		}
	}
	if took[4] > took[1]*2/3 {
		t.Errorf("4 moves at once took %v, one at a time %v: want it well under", took[4], took[1])
	}
}

// observerFunc is an Observer.
type observerFunc func(bytes int64, took time.Duration, err error)

func (f observerFunc) BucketMoved(bytes int64, took time.Duration, err error) { f(bytes, took, err) }

// TestRunGrowsWithMembersThatJoinDuringIt: with --partition-groups auto,
// members that join while a rebalance runs (members join one at a time)
// grow the groups at once, so buckets are not evened out over too few
// groups and then moved again: 3 groups to 6 takes about the 56 moves of
// going there at once, not the 28 + 37 of going to 4 first.
func TestRunGrowsWithMembersThatJoinDuringIt(t *testing.T) {
	store := newMemStore(t, table(t, 3, 3))
	store.delay = time.Millisecond
	var members atomic.Int64
	members.Store(4)
	mover := NewMover(store, pages{}, nil)
	mover.Observer = observerFunc(func(int64, time.Duration, error) { members.Store(6) })
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() { // the reconcile loops: bootstrap every group added
		for ctx.Err() == nil {
			_, _ = mover.update(ctx, func(tab *partition.Table) error {
				for i := range tab.Groups {
					g := &tab.Groups[i]
					g.Bootstrapped, g.Members, g.Bootstrapper = true, []string{"a"}, "a"
				}
				return nil
			})
			time.Sleep(5 * time.Millisecond)
		}
	}()
	r := NewRunner(NewOperations(store), mover, func() bool { return true }, Auto{Groups: true, Members: func() int { return int(members.Load()) }}, nil)
	r.Parallel = 4
	op := Operation{ID: "op", Status: InProgress, Groups: 4}
	if err := r.run(ctx, &op); err != nil {
		t.Fatal(err)
	}
	after, _, _ := mover.Table(ctx)
	if after.P() != 6 || op.Groups != 6 || len(PlanBuckets(after)) != 0 || len(after.Moves) != 0 {
		t.Errorf("%d groups (operation: %d), %d moves left to plan, moves %+v; want 6 and even", after.P(), op.Groups, len(PlanBuckets(after)), after.Moves)
	}
	// The first moves (to group 4) ran before the members were 6.
	if op.BucketsMoved < 56 || op.BucketsMoved > 60 {
		t.Errorf("%d buckets moved, want about 56", op.BucketsMoved)
	}
}
