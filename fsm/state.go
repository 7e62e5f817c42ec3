package fsm

import (
	"encoding/json"
	"fmt"
	"strconv"

	"github.com/google/btree"
	"github.com/kvnode/kvnode/index"
	"github.com/kvnode/kvnode/region"
)

// btreeDegree is the B-tree order for entry trees: wide nodes keep them
// shallow and make ordered scans mostly sequential memory reads.
const btreeDegree = 32

// state is everything the state machine holds. Apply mutates it under the
// FSM's write lock; Restore builds a fresh one and swaps it in whole.
type state struct {
	regions map[string]*regionState
	// tombstones: per region name, the highest region ID destroyed in this
	// partition group. A command with that ID or a lower one is refused, so
	// a late command never resurrects a destroyed region.
	tombstones map[string]uint64
	// meta is versioned metadata (group 0: the partition table).
	meta map[string]metaEntry
	// keyFilter, when set, restricts generated keys (see Options). It is
	// configuration, not state: not in snapshots, set again by Restore.
	keyFilter func(string) bool
	// indexDefs, by region name, are the secondary indexes every region
	// of that name keeps. Configuration like keyFilter: the indexes are
	// derived from the entries, never in snapshots, rebuilt by Restore.
	indexDefs map[string][]index.Def
	// stage holds the chunks of a staged command until its commit
	// (stage.go). Never in snapshots: Snapshot refuses while it is set.
	stage *staging
	// lastKey is the last number handed out as a generated key. It is one
	// counter for the whole group, so generated keys never repeat across
	// regions, and it travels in snapshots so every replica continues it.
	lastKey uint64
}

// regionState is one region: its kind and its entries in key order.
type regionState struct {
	// id is the region's ID: the log index of its creation in group 0 (in
	// group 0 itself, the index of the create command here).
	id      uint64
	kind    region.Kind
	entries *btree.BTreeG[entry]
	// indexes are the region's installed secondary indexes by name, kept
	// in step with entries by put, del and clear.
	indexes map[string]*index.Index
	// building are the indexes being built in the background, by name
	// (indexbuild.go); put and del record their keys for them.
	building map[string]*indexBuild
}

// entry is one stored key and value. Values are the exact bytes a command
// carried (already compact JSON); they are never re-serialized.
type entry struct {
	key   string
	value json.RawMessage
}

func entryLess(a, b entry) bool { return a.key < b.key }

// metaEntry is one metadata value and its version (the log index of the
// entry that wrote it).
type metaEntry struct {
	value   []byte
	version uint64
}

func newState() *state {
	return &state{
		regions:    make(map[string]*regionState),
		tombstones: make(map[string]uint64),
		meta:       make(map[string]metaEntry),
	}
}

func newRegionState(kind region.Kind, id uint64) *regionState {
	return &regionState{id: id, kind: kind, entries: newEntries()}
}

func newEntries() *btree.BTreeG[entry] { return btree.NewG(btreeDegree, entryLess) }

// get returns the value stored under key.
func (r *regionState) get(key string) (json.RawMessage, bool) {
	e, ok := r.entries.Get(entry{key: key})
	return e.value, ok
}

func (r *regionState) has(key string) bool { return r.entries.Has(entry{key: key}) }

func (r *regionState) put(key string, value json.RawMessage) {
	// Clip capacity: nobody holding this value may append into shared memory.
	old, had := r.entries.ReplaceOrInsert(entry{key: key, value: value[:len(value):len(value)]})
	for _, x := range r.indexes {
		if had {
			x.Remove(key, old.value)
		}
		x.Add(key, value)
	}
	r.touch(key)
}

// del removes an entry.
func (r *regionState) del(key string) {
	old, had := r.entries.Delete(entry{key: key})
	if had {
		for _, x := range r.indexes {
			x.Remove(key, old.value)
		}
		r.touch(key)
	}
}

// clear removes every entry. A new tree rather than Clear: a snapshot or a
// scan may share the old tree's nodes. The region is then empty, so an
// index being built is done: it is empty too.
func (r *regionState) clear() {
	r.entries = newEntries()
	for name, x := range r.indexes {
		r.indexes[name] = index.New(x.Def())
	}
	for name, b := range r.building {
		b.stop.Store(true)
		delete(r.building, name)
		r.install(name, index.New(b.def))
	}
}

// emptyIndexes gives a new, still empty region the (empty) indexes defs
// name: nothing to build.
func (r *regionState) emptyIndexes(defs []index.Def) {
	for _, d := range defs {
		r.install(d.Name, index.New(d))
	}
}

// nextKey generates a key for put-if-absent: the next decimal number of the
// group-wide counter that is not a key of r yet, so a generated key never
// overwrites or collides with a key a client chose.
func (s *state) nextKey(r *regionState) string {
	for {
		s.lastKey++
		k := strconv.FormatUint(s.lastKey, 10)
		if (s.keyFilter == nil || s.keyFilter(k)) && !r.has(k) {
			return k
		}
	}
}

// knownKind reports whether k is a region kind this build can hold.
func knownKind(k region.Kind) bool {
	return k == region.Replicate || k == region.Partition
}

// region returns the named region or an error wrapping
// region.ErrRegionNotFound.
func (s *state) region(name string) (*regionState, error) {
	r, ok := s.regions[name]
	if !ok {
		return nil, fmt.Errorf("region %q: %w", name, region.ErrRegionNotFound)
	}
	return r, nil
}

// target returns the region a write command acts on. id 0 is group 0's
// world: the region must be defined here. A non-zero id is a partition
// group's: the region is created on first use of a new ID (dropping an
// older incarnation's entries), and refused when the ID was destroyed or a
// newer incarnation already lives here.
func (s *state) target(name string, id uint64) (*regionState, error) {
	if id == 0 {
		return s.region(name)
	}
	if dead := s.tombstones[name]; dead >= id {
		return nil, fmt.Errorf("region %q (id %d) was destroyed: %w", name, id, region.ErrRegionNotFound)
	}
	r, ok := s.regions[name]
	switch {
	case ok && r.id == id:
		return r, nil
	case ok && r.id > id:
		return nil, fmt.Errorf("region %q: id %d is older than the one here (%d): %w", name, id, r.id, region.ErrRegionNotFound)
	}
	if ok {
		r.abandon()
	}
	r = newRegionState(region.Partition, id)
	r.emptyIndexes(s.indexDefs[name])
	s.regions[name] = r
	return r, nil
}

// view returns the region a read sees: as target, but without creating
// anything. A nil region with a nil error is an empty region: defined in
// group 0, no entry of it in this group yet.
func (s *state) view(name string, id uint64) (*regionState, error) {
	if id == 0 {
		return s.region(name)
	}
	if dead := s.tombstones[name]; dead >= id {
		return nil, fmt.Errorf("region %q (id %d) was destroyed: %w", name, id, region.ErrRegionNotFound)
	}
	r, ok := s.regions[name]
	switch {
	case !ok || r.id < id:
		return nil, nil
	case r.id > id:
		return nil, fmt.Errorf("region %q: id %d is older than the one here (%d): %w", name, id, r.id, region.ErrRegionNotFound)
	}
	return r, nil
}
