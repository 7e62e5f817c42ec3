package fsm

import (
	"context"
	"fmt"
	"slices"
	"sync/atomic"

	"github.com/google/btree"
	"github.com/kvnode/kvnode/index"
)

// Building secondary indexes without stopping writes.
//
// An index over a large region takes long to build (about 1.3 s per
// million entries), and every Apply of the group needs the write lock.
// So a build holds the lock only for O(1) steps: it clones the region's
// B-tree (copy-on-write, O(1)) and starts recording which keys the region's
// writes touch, builds the index from the clone with no lock held, then
// under the lock replays the touched keys against the live tree and
// installs the index. If many keys were touched, it first catches up off
// the lock from a fresh clone, so the final step under the lock stays short.
// Until an index is installed it does not exist for readers: IndexScan
// reports it missing and the caller scans the region, which gives the same
// answer. DESIGN.md ("Secondary indexes") has the argument why an installed
// index never misses or keeps an entry.

const (
	// inlineBuildBudget is how many entries one SetIndexes or Restore may
	// index directly under the lock, summed over its regions (a few
	// milliseconds): a small region's index is then usable at once, with no
	// goroutine. Larger regions are built in the background.
	inlineBuildBudget = 2048
	// finishBelow: the builder installs under the lock once fewer keys than
	// this were touched since its last clone (a few microseconds each).
	finishBelow = 256
	// maxCatchUpRounds bounds the catch-up rounds off the lock, in case
	// writes touch keys faster than a round replays them; the last round
	// then runs under the lock, whatever its size.
	maxCatchUpRounds = 8
	// stopPollEvery is how many entries the builder indexes between two
	// looks at whether it is still wanted.
	stopPollEvery = 4096
)

// indexBuild is one index being built in the background for one region
// incarnation. touched and the region's building map are guarded by the
// FSM's lock; stop may be read without it.
type indexBuild struct {
	region string       // the region's name
	r      *regionState // the incarnation the index is for
	def    index.Def
	// touched are the keys written in r since the builder's last clone of
	// r's entries: the only keys whose values the clone may have wrong.
	touched map[string]struct{}
	// stop tells the builder it is no longer wanted (definition dropped or
	// changed, region cleared, destroyed, replaced, or restored away), so
	// it quits early. Correctness does not depend on it: the builder
	// installs only after checking under the lock that it is still r's
	// build for def and r is still the live region.
	stop atomic.Bool
	done chan struct{} // closed when the builder has ended, either way
}

// abandon stops the region's builds: used when the region leaves the state
// (destroyed, replaced by a newer incarnation, or restored away).
func (r *regionState) abandon() {
	for _, b := range r.building {
		b.stop.Store(true)
	}
}

// touch records a write of key for the region's builds.
func (r *regionState) touch(key string) {
	for _, b := range r.building {
		b.touched[key] = struct{}{}
	}
}

// setRegionIndexes makes region r (named name) keep exactly defs: indexes
// and builds no longer defined, or now defined over another path, go at
// once; an index already installed or being built for the same definition
// is kept (so setting the same definitions again restarts nothing); each
// new one is built, under the lock while *budget allows, else in the
// background. The caller holds f.mu for writing.
func (f *FSM) setRegionIndexes(name string, r *regionState, defs []index.Def, budget *int) {
	want := make(map[string]index.Def, len(defs))
	for _, d := range defs {
		want[d.Name] = d
	}
	for n, x := range r.indexes {
		if d, ok := want[n]; !ok || !slices.Equal(x.Def().Path, d.Path) {
			delete(r.indexes, n)
		}
	}
	for n, b := range r.building {
		if d, ok := want[n]; !ok || !slices.Equal(b.def.Path, d.Path) {
			b.stop.Store(true)
			delete(r.building, n)
		}
	}
	for _, d := range want {
		if _, ok := r.indexes[d.Name]; ok {
			continue
		}
		if _, ok := r.building[d.Name]; ok {
			continue
		}
		if n := r.entries.Len(); n <= *budget {
			*budget -= n
			r.install(d.Name, fullIndex(d, r.entries, nil))
			continue
		}
		b := &indexBuild{region: name, r: r, def: d, touched: map[string]struct{}{}, done: make(chan struct{})}
		if r.building == nil {
			r.building = map[string]*indexBuild{}
		}
		r.building[d.Name] = b
		go f.build(b, r.entries.Clone())
	}
}

// install makes x the region's index called name.
func (r *regionState) install(name string, x *index.Index) {
	if r.indexes == nil {
		r.indexes = map[string]*index.Index{}
	}
	r.indexes[name] = x
}

// fullIndex indexes every entry of t. With a non-nil stop it gives up
// (returning nil) once stop is set.
func fullIndex(d index.Def, t *btree.BTreeG[entry], stop *atomic.Bool) *index.Index {
	x := index.New(d)
	n := 0
	stopped := false
	t.Ascend(func(e entry) bool {
		x.Add(e.key, e.value)
		n++
		if stop != nil && n%stopPollEvery == 0 && stop.Load() {
			stopped = true
			return false
		}
		return true
	})
	if stopped {
		return nil
	}
	return x
}

// catchUp moves x from indexing the entries of from to indexing those of
// to, given every key whose value differs between the two.
func catchUp(x *index.Index, keys map[string]struct{}, from, to *btree.BTreeG[entry]) {
	for k := range keys {
		if e, ok := from.Get(entry{key: k}); ok {
			x.Remove(k, e.value)
		}
		if e, ok := to.Get(entry{key: k}); ok {
			x.Add(k, e.value)
		}
	}
}

// build runs in its own goroutine: it indexes base, a clone of b.r's
// entries taken when b was registered (so b.touched has recorded every
// write since), then catches up and installs.
func (f *FSM) build(b *indexBuild, base *btree.BTreeG[entry]) {
	defer close(b.done)
	x := fullIndex(b.def, base, &b.stop)
	if x == nil {
		return
	}
	for round := 0; ; round++ {
		if f.buildHook != nil {
			f.buildHook(b, round)
		}
		f.mu.Lock()
		if f.st.regions[b.region] != b.r || b.r.building[b.def.Name] != b {
			f.mu.Unlock()
			return
		}
		touched := b.touched
		if len(touched) < finishBelow || round >= maxCatchUpRounds {
			catchUp(x, touched, base, b.r.entries)
			delete(b.r.building, b.def.Name)
			b.r.install(b.def.Name, x)
			f.mu.Unlock()
			return
		}
		next := b.r.entries.Clone()
		b.touched = map[string]struct{}{}
		f.mu.Unlock()
		catchUp(x, touched, base, next)
		base = next
	}
}

// WaitIndexes blocks until no index of this FSM is being built (including
// builds started while it waits), or ctx ends; then it returns an error
// wrapping ctx.Err(). After it returns nil every index SetIndexes defined
// before the call is installed, unless a later call changed it.
func (f *FSM) WaitIndexes(ctx context.Context) error {
	for {
		var pending []chan struct{}
		f.mu.RLock()
		for _, r := range f.st.regions {
			for _, b := range r.building {
				pending = append(pending, b.done)
			}
		}
		f.mu.RUnlock()
		if len(pending) == 0 {
			return nil
		}
		for _, done := range pending {
			select {
			case <-done:
			case <-ctx.Done():
				return fmt.Errorf("fsm: wait for %d index builds: %w", len(pending), ctx.Err())
			}
		}
	}
}
