package fsm

import (
	"encoding/json"
	"fmt"
	"strconv"

	"github.com/google/btree"
	"github.com/kvnode/kvnode/region"
)

// btreeDegree is the B-tree order for entry trees: wide nodes keep them
// shallow and make ordered scans mostly sequential memory reads.
const btreeDegree = 32

// state is everything the state machine holds. Apply mutates it under the
// FSM's write lock; Restore builds a fresh one and swaps it in whole.
type state struct {
	regions map[string]*regionState
	// lastKey is the last number handed out as a generated key. It is one
	// counter for the whole group, so generated keys never repeat across
	// regions, and it travels in snapshots so every replica continues it.
	lastKey uint64
}

// regionState is one region: its kind and its entries in key order.
type regionState struct {
	kind    region.Kind
	entries *btree.BTreeG[entry]
}

// entry is one stored key and value. Values are the exact bytes a command
// carried (already compact JSON); they are never re-serialized.
type entry struct {
	key   string
	value json.RawMessage
}

func entryLess(a, b entry) bool { return a.key < b.key }

func newState() *state {
	return &state{regions: make(map[string]*regionState)}
}

func newRegionState(kind region.Kind) *regionState {
	return &regionState{kind: kind, entries: newEntries()}
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
	r.entries.ReplaceOrInsert(entry{key: key, value: value[:len(value):len(value)]})
}

// nextKey generates a key for put-if-absent: the next decimal number of the
// group-wide counter that is not a key of r yet, so a generated key never
// overwrites or collides with a key a client chose.
func (s *state) nextKey(r *regionState) string {
	for {
		s.lastKey++
		k := strconv.FormatUint(s.lastKey, 10)
		if !r.has(k) {
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
