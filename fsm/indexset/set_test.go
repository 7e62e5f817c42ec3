package indexset

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/google/btree"
	"github.com/kvnode/kvnode/index"
)

// entry and tree are a region's entries as an owner keeps them (fsm keeps
// them the same way): a copy-on-write B-tree.
type entry struct {
	key   string
	value json.RawMessage
}

type tree struct{ t *btree.BTreeG[entry] }

func newTree() tree {
	return tree{btree.NewG(32, func(a, b entry) bool { return a.key < b.key })}
}

func (e tree) Len() int { return e.t.Len() }

func (e tree) Ascend(fn func(string, json.RawMessage) bool) {
	e.t.Ascend(func(x entry) bool { return fn(x.key, x.value) })
}

func (e tree) Get(key string) (json.RawMessage, bool) {
	x, ok := e.t.Get(entry{key: key})
	return x.value, ok
}

func (e tree) Clone() Entries { return tree{e.t.Clone()} }

// owner is a region's owner: its lock, its entries, the Set over them.
// Every method but define takes the lock; hook (called by the builds
// without the lock) may call them.
type owner struct {
	mu      sync.Mutex
	entries tree
	set     Set
	hook    func(b *Build, round int)
}

func newOwner(n int) *owner {
	o := &owner{entries: newTree()}
	for i := range n {
		o.entries.t.ReplaceOrInsert(entry{key: key(i), value: value(i % 7)})
	}
	return o
}

func key(i int) string { return fmt.Sprintf("k%05d", i) }

func value(n int) json.RawMessage { return json.RawMessage(fmt.Sprintf(`{"n":%d}`, n)) }

var byN = index.Def{Name: "byN", Path: []string{"n"}}

func (o *owner) region() Region {
	return Region{Lock: &o.mu, Live: func() Entries { return o.entries }, Hook: o.hook}
}

// define defines defs with budget entries to index inline.
func (o *owner) define(budget int, defs ...index.Def) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.set.Define(defs, o.entries, &budget, o.region())
}

func (o *owner) put(k string, v json.RawMessage) {
	o.mu.Lock()
	defer o.mu.Unlock()
	old, had := o.entries.t.ReplaceOrInsert(entry{key: k, value: v})
	o.set.Put(k, old.value, had, v)
}

func (o *owner) del(k string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if old, had := o.entries.t.Delete(entry{key: k}); had {
		o.set.Delete(k, old.value)
	}
}

func (o *owner) clear() {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.entries = newTree()
	o.set.Clear()
}

// wait waits for every build in flight, as fsm.WaitIndexes does.
func (o *owner) wait(t *testing.T) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for {
		o.mu.Lock()
		pending := o.set.Pending(nil)
		o.mu.Unlock()
		if len(pending) == 0 {
			return
		}
		for _, done := range pending {
			select {
			case <-done:
			case <-ctx.Done():
				t.Fatalf("builds still running after a minute")
			}
		}
	}
}

// installed returns the installed index called name, nil if none.
func (o *owner) installed(name string) *index.Index {
	o.mu.Lock()
	defer o.mu.Unlock()
	x, _ := o.set.Index(name)
	return x
}

type item struct {
	value index.Key
	key   string
}

func items(x *index.Index) []item {
	var out []item
	x.Ascend(func(v index.Key, k string) bool {
		out = append(out, item{v, k})
		return true
	})
	return out
}

// checkExact fails unless the installed index d holds exactly what one
// built from scratch over the owner's entries now holds.
func (o *owner) checkExact(t *testing.T, d index.Def) {
	t.Helper()
	o.mu.Lock()
	defer o.mu.Unlock()
	x, ok := o.set.Index(d.Name)
	if !ok {
		t.Fatalf("index %q is not installed", d.Name)
	}
	want := index.New(d)
	o.entries.Ascend(func(k string, v json.RawMessage) bool {
		want.Add(k, v)
		return true
	})
	got, exp := items(x), items(want)
	if len(got) != len(exp) {
		t.Fatalf("index %q holds %d entries, a fresh build %d", d.Name, len(got), len(exp))
	}
	for i := range got {
		if got[i] != exp[i] {
			t.Fatalf("index %q entry %d is %+v, a fresh build has %+v", d.Name, i, got[i], exp[i])
		}
	}
}

func TestDefineWithinBudgetInstallsAtOnce(t *testing.T) {
	o := newOwner(100)
	budget := 150
	o.mu.Lock()
	o.set.Define([]index.Def{byN}, o.entries, &budget, o.region())
	building := o.set.Building(byN.Name)
	o.mu.Unlock()
	if building != nil || budget != 50 {
		t.Fatalf("after defining an index over 100 entries with a budget of 150: build %v, budget left %d; want none, 50", building, budget)
	}
	o.checkExact(t, byN)
	o.put(key(3), value(100))
	o.del(key(4))
	o.put("new", value(1))
	o.checkExact(t, byN)
}

func TestBuildInTheBackgroundIsMissingUntilInstalled(t *testing.T) {
	o := newOwner(3000)
	release := make(chan struct{})
	o.hook = func(b *Build, round int) {
		if round == 0 {
			<-release
		}
	}
	o.define(10, byN)
	if o.installed(byN.Name) != nil {
		t.Fatal("an index being built is installed")
	}
	close(release)
	o.wait(t)
	o.checkExact(t, byN)
}

// TestBuildFollowsWritesInEveryPhase writes in the hook of every round:
// first more keys than finishBelow (so the build catches up off the lock),
// then a few, and checks the installed index against the final entries.
func TestBuildFollowsWritesInEveryPhase(t *testing.T) {
	for seed := range uint64(5) {
		o := newOwner(3000)
		rng := rand.New(rand.NewPCG(seed, 3))
		rounds := 0
		o.hook = func(b *Build, round int) {
			rounds = max(rounds, round)
			writes := 3
			if round < 2 {
				writes = 2 * finishBelow
			}
			for range writes {
				k := key(rng.IntN(3500))
				switch rng.IntN(3) {
				case 0:
					o.del(k)
				default:
					o.put(k, value(rng.IntN(9)))
				}
			}
		}
		o.define(10, byN)
		o.wait(t)
		if rounds < 2 {
			t.Fatalf("seed %d: the build installed in round %d, want catch-up rounds", seed, rounds)
		}
		o.checkExact(t, byN)
	}
}

func TestClearEndsABuildWithAnEmptyIndex(t *testing.T) {
	o := newOwner(3000)
	o.hook = func(b *Build, round int) {
		if round == 0 {
			o.clear()
		}
	}
	o.define(10, byN)
	o.wait(t)
	x := o.installed(byN.Name)
	if x == nil || x.Len() != 0 {
		t.Fatalf("after a clear during the build, index = %v; want an empty one", x)
	}
	o.put("k", value(1))
	o.checkExact(t, byN)
}

func TestAbandonedBuildInstallsNothing(t *testing.T) {
	o := newOwner(3000)
	o.hook = func(b *Build, round int) {
		o.mu.Lock()
		o.set.Abandon()
		o.mu.Unlock()
	}
	o.define(10, byN)
	o.wait(t)
	if o.installed(byN.Name) != nil {
		t.Fatal("a build of an abandoned set installed its index")
	}
}

// TestDefineKeepsWhatIsStillDefined: defining the same index again keeps
// the installed index or the build in flight; another path replaces it;
// no definition drops it.
func TestDefineKeepsWhatIsStillDefined(t *testing.T) {
	o := newOwner(50)
	o.define(InlineBudget, byN)
	first := o.installed(byN.Name)
	o.define(InlineBudget, byN)
	if o.installed(byN.Name) != first {
		t.Error("defining the same index again replaced the installed one")
	}
	other := index.Def{Name: byN.Name, Path: []string{"m"}}
	o.define(InlineBudget, other)
	if x := o.installed(byN.Name); x == first || x == nil || x.Def().Path[0] != "m" {
		t.Errorf("redefined over another path: index %v, want a new one over m", x)
	}
	o.define(InlineBudget)
	if o.installed(byN.Name) != nil {
		t.Error("an index no longer defined is still installed")
	}

	big := newOwner(3000)
	var builds []*Build
	release := make(chan struct{})
	big.hook = func(b *Build, round int) {
		if round == 0 {
			<-release
		}
	}
	big.define(10, byN)
	big.mu.Lock()
	builds = append(builds, big.set.Building(byN.Name))
	big.mu.Unlock()
	big.define(10, byN) // the same definition: the build goes on
	big.mu.Lock()
	builds = append(builds, big.set.Building(byN.Name))
	big.mu.Unlock()
	big.define(10, other) // another path: a new build, the old one quits
	big.mu.Lock()
	builds = append(builds, big.set.Building(byN.Name))
	big.mu.Unlock()
	close(release)
	big.wait(t)
	if builds[0] == nil || builds[1] != builds[0] || builds[2] == builds[0] || builds[2] == nil {
		t.Errorf("builds after defining byN, byN again, then over m: %p %p %p; want the same twice, then a new one", builds[0], builds[1], builds[2])
	}
	if x := big.installed(byN.Name); x == nil || x.Def().Path[0] != "m" {
		t.Fatalf("installed after the builds: %v, want the index over m", x)
	}
	big.checkExact(t, other)
}
