package indexset

import (
	"encoding/json"
	"sync"

	"github.com/kvnode/kvnode/index"
)

// Entries is a region's entries as a Set reads them: in key order, with a
// copy-on-write clone.
type Entries interface {
	// Len is the number of entries.
	Len() int
	// Ascend calls fn with every entry in key order until fn returns false.
	Ascend(fn func(key string, value json.RawMessage) bool)
	// Get returns the value stored under key.
	Get(key string) (json.RawMessage, bool)
	// Clone returns the entries as of now, which later writes to these
	// entries never change. It must cost O(1) (a B-tree's copy-on-write
	// clone does): builds take clones under the owner's lock.
	Clone() Entries
}

// Region is what a Set's background builds need of the region whose
// entries they index, from the region's owner.
type Region struct {
	// Lock is the owner's lock: it guards the Set and the entries. The
	// owner holds it for every write of the entries and every call of a
	// Set method; a background build takes it only for O(1) steps, and
	// for the replay of the keys written meanwhile.
	Lock sync.Locker
	// Live returns the region's live entries (which change when the owner
	// empties the region and starts new ones). It is called with Lock held.
	Live func() Entries
	// Hook, when set (by tests only), is called by every background build
	// before each time it takes Lock to catch up or install (round 0, 1,
	// ...), with no lock held: tests land writes there, in each phase of a
	// build.
	Hook func(b *Build, round int)
}

// Set is the secondary indexes of one incarnation of a region: those
// installed, which are exact and may be read, and those still being built,
// which do not exist for readers. The zero value is an empty set. Every
// method must be called with the owner's lock held (see Region), and the
// owner must tell it every change of the entries (Put and Delete for each
// write of a key, Clear when the entries are emptied) and call Abandon when
// the region leaves its state. A Set is used through a pointer and never
// copied: its builds point back to it.
type Set struct {
	installed map[string]*index.Index
	building  map[string]*Build
}

// Put keeps the set in step with a write of key: its value was old (if
// had) and is value now.
func (s *Set) Put(key string, old json.RawMessage, had bool, value json.RawMessage) {
	for _, x := range s.installed {
		if had {
			x.Remove(key, old)
		}
		x.Add(key, value)
	}
	s.touch(key)
}

// Delete keeps the set in step with the removal of key, whose value was old.
func (s *Set) Delete(key string, old json.RawMessage) {
	for _, x := range s.installed {
		x.Remove(key, old)
	}
	s.touch(key)
}

// touch records a write of key for the builds in flight.
func (s *Set) touch(key string) {
	for _, b := range s.building {
		b.touched[key] = struct{}{}
	}
}

// Clear follows the region's entries being emptied: every index is empty
// now, so an index being built is done, and installed empty.
func (s *Set) Clear() {
	for name, x := range s.installed {
		s.installed[name] = index.New(x.Def())
	}
	for name, b := range s.building {
		b.stop.Store(true)
		delete(s.building, name)
		s.install(name, index.New(b.def))
	}
}

// Empty gives a new region, whose entries are still empty, the (empty)
// indexes defs names: nothing to build.
func (s *Set) Empty(defs []index.Def) {
	for _, d := range defs {
		s.install(d.Name, index.New(d))
	}
}

// Abandon ends the builds in flight, which then install nothing: the
// region is leaving the owner's state (destroyed, replaced by a newer
// incarnation, or restored away), and nobody will read its indexes again.
func (s *Set) Abandon() {
	for name, b := range s.building {
		b.stop.Store(true)
		delete(s.building, name)
	}
}

// install makes x the index called name.
func (s *Set) install(name string, x *index.Index) {
	if s.installed == nil {
		s.installed = map[string]*index.Index{}
	}
	s.installed[name] = x
}

// Index returns the installed index called name. An index still being
// built is missing: a reader scans the region instead, which gives the
// same answer.
func (s *Set) Index(name string) (*index.Index, bool) {
	x, ok := s.installed[name]
	return x, ok
}

// Len is the number of installed indexes.
func (s *Set) Len() int { return len(s.installed) }

// Building returns the build in flight of the index called name, nil when
// there is none.
func (s *Set) Building(name string) *Build { return s.building[name] }

// Pending appends to dst the channels that close when the builds now in
// flight end (installed or abandoned), for an owner to wait on without its
// lock.
func (s *Set) Pending(dst []<-chan struct{}) []<-chan struct{} {
	for _, b := range s.building {
		dst = append(dst, b.done)
	}
	return dst
}
