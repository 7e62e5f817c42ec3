package indexset

import (
	"encoding/json"
	"slices"
	"sync/atomic"

	"github.com/kvnode/kvnode/index"
)

// Building secondary indexes without stopping writes.
//
// An index over a large region takes long to build (about 1.3 s per
// million entries), and the owner's every write needs the lock. So a build
// holds the lock only for O(1) steps: it clones the region's entries
// (copy-on-write, O(1)) and starts recording which keys the region's writes
// touch, builds the index from the clone with no lock held, then under the
// lock replays the touched keys against the live entries and installs the
// index. If many keys were touched, it first catches up off the lock from a
// fresh clone, so the final step under the lock stays short. Until an
// index is installed it does not exist for readers (Index reports it
// missing). DESIGN.md has the argument why an installed index never misses
// or keeps an entry.

const (
	// InlineBudget is how many entries one round of definitions (the
	// owner's Define calls over all its regions) should index directly
	// under the lock (a few milliseconds): a small region's index is then
	// usable at once, with no goroutine. Larger regions are built in the
	// background.
	InlineBudget = 2048
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

// Build is one index being built in the background for one Set. touched
// and the Set's building map are guarded by the owner's lock; stop may be
// read without it.
type Build struct {
	set *Set
	def index.Def
	// touched are the keys written in the region since the builder's last
	// clone of its entries: the only keys whose values the clone may have
	// wrong.
	touched map[string]struct{}
	// stop tells the builder it is no longer wanted (definition dropped or
	// changed, region cleared, destroyed, replaced, or restored away), so
	// it quits early. Correctness does not depend on it: the builder
	// installs only after checking under the lock that it is still its
	// Set's build for def: changing the definition, Clear and Abandon all
	// remove it.
	stop atomic.Bool
	done chan struct{} // closed when the builder has ended, either way
}

// Def is the definition of the index b builds.
func (b *Build) Def() index.Def { return b.def }

// Set is the Set b builds an index for.
func (b *Build) Set() *Set { return b.set }

// Define makes the set keep exactly defs over entries, the region's live
// entries: indexes and builds no longer defined, or now defined over
// another path, go at once; an index already installed or being built for
// the same definition is kept (so defining the same indexes again restarts
// nothing); each new one is built, under the lock while *budget (entries
// left to index inline, see InlineBudget) allows, else in the background
// with r. The caller holds r.Lock.
func (s *Set) Define(defs []index.Def, entries Entries, budget *int, r Region) {
	want := make(map[string]index.Def, len(defs))
	for _, d := range defs {
		want[d.Name] = d
	}
	for n, x := range s.installed {
		if d, ok := want[n]; !ok || !slices.Equal(x.Def().Path, d.Path) {
			delete(s.installed, n)
		}
	}
	for n, b := range s.building {
		if d, ok := want[n]; !ok || !slices.Equal(b.def.Path, d.Path) {
			b.stop.Store(true)
			delete(s.building, n)
		}
	}
	for _, d := range want {
		if _, ok := s.installed[d.Name]; ok {
			continue
		}
		if _, ok := s.building[d.Name]; ok {
			continue
		}
		if n := entries.Len(); n <= *budget {
			*budget -= n
			s.install(d.Name, fullIndex(d, entries, nil))
			continue
		}
		b := &Build{set: s, def: d, touched: map[string]struct{}{}, done: make(chan struct{})}
		if s.building == nil {
			s.building = map[string]*Build{}
		}
		s.building[d.Name] = b
		go b.run(r, entries.Clone())
	}
}

// fullIndex indexes every entry of t. With a non-nil stop it gives up
// (returning nil) once stop is set.
func fullIndex(d index.Def, t Entries, stop *atomic.Bool) *index.Index {
	x := index.New(d)
	n := 0
	stopped := false
	t.Ascend(func(key string, value json.RawMessage) bool {
		x.Add(key, value)
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
func catchUp(x *index.Index, keys map[string]struct{}, from, to Entries) {
	for k := range keys {
		if v, ok := from.Get(k); ok {
			x.Remove(k, v)
		}
		if v, ok := to.Get(k); ok {
			x.Add(k, v)
		}
	}
}

// run is the builder, in its own goroutine: it indexes base, a clone of
// the region's entries taken when b was registered (so b.touched has
// recorded every write since), then catches up and installs.
func (b *Build) run(r Region, base Entries) {
	defer close(b.done)
	x := fullIndex(b.def, base, &b.stop)
	if x == nil {
		return
	}
	s := b.set
	for round := 0; ; round++ {
		if r.Hook != nil {
			r.Hook(b, round)
		}
		r.Lock.Lock()
		if s.building[b.def.Name] != b {
			r.Lock.Unlock()
			return
		}
		live := r.Live()
		touched := b.touched
		if len(touched) < finishBelow || round >= maxCatchUpRounds {
			catchUp(x, touched, base, live)
			delete(s.building, b.def.Name)
			s.install(b.def.Name, x)
			r.Lock.Unlock()
			return
		}
		next := live.Clone()
		b.touched = map[string]struct{}{}
		r.Lock.Unlock()
		catchUp(x, touched, base, next)
		base = next
	}
}
