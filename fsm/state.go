package fsm

import (
	"encoding/json"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/google/btree"
	"github.com/kvnode/kvnode/fsm/history"
	"github.com/kvnode/kvnode/fsm/indexset"
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
	// now is the group's clock in unix milliseconds: the latest Now of the
	// commands applied (never moving back, whatever the clocks of the
	// members that stamped them). Apply decides expiry by it alone, so
	// every replica expires the same entries at the same log position. It
	// travels in snapshots.
	now uint64
	// events is the group's change history (package history): the
	// FSM's, for its lifetime; in snapshots.
	events *history.Log
	// restored is the history a snapshot being read carried (Restore).
	restored *restoredHistory
	// clock is the member's clock, for reads (readNow). Configuration like
	// keyFilter, set again by Restore; Apply never reads it.
	clock func() time.Time
	// own, once explicit, says which buckets of its keys a partition
	// group serves (buckets.go); implicit: every key it is sent. In
	// snapshots.
	own ownership
}

// regionState is one region: its kind and its entries in key order.
type regionState struct {
	// id is the region's ID: the log index of its creation in group 0 (in
	// group 0 itself, the index of the create command here).
	id      uint64
	kind    region.Kind
	entries *btree.BTreeG[entry]
	// bytes are the entries' keys and values, kept by put, del and clear
	// (for metrics: RegionSizes).
	bytes int64
	// indexes are the region's secondary indexes, installed and being
	// built (package indexset), kept in step with entries by put, del and
	// clear, and abandoned when the region leaves the state.
	indexes indexset.Set
	// ttl is the region's default entry time-to-live in milliseconds
	// (group 0's regions: create-region and alter-region set it; the
	// store stamps it into the writes of both kinds). 0: never.
	ttl uint64
	// expiry orders the entries that have a deadline by it (nil: none
	// ever had one), so the due ones are found without a scan.
	expiry *btree.BTreeG[deadline]
}

// entry is one stored key and value. Values are the exact bytes a command
// carried (already compact JSON); they are never re-serialized.
type entry struct {
	key   string
	value json.RawMessage
	// expires is the entry's deadline in unix milliseconds (0: never).
	expires uint64
}

// expired reports whether the entry's deadline is not after now.
func (e entry) expired(now uint64) bool { return e.expires != 0 && e.expires <= now }

// deadline is an entry's place in its region's expiry order.
type deadline struct {
	at  uint64
	key string
}

func deadlineLess(a, b deadline) bool { return a.at < b.at || (a.at == b.at && a.key < b.key) }

func entryLess(a, b entry) bool { return a.key < b.key }

// entryTree is a region's entry tree as package indexset reads it.
type entryTree struct{ t *btree.BTreeG[entry] }

func (e entryTree) Len() int { return e.t.Len() }

func (e entryTree) Ascend(fn func(key string, value json.RawMessage) bool) {
	e.t.Ascend(func(x entry) bool { return fn(x.key, x.value) })
}

func (e entryTree) Get(key string) (json.RawMessage, bool) {
	x, ok := e.t.Get(entry{key: key})
	return x.value, ok
}

func (e entryTree) Clone() indexset.Entries { return entryTree{e.t.Clone()} }

// metaEntry is one metadata value and its version (the log index of the
// entry that wrote it).
type metaEntry struct {
	value   []byte
	version uint64
}

// newState returns an empty state.
func newState() *state {
	return &state{
		regions:    make(map[string]*regionState),
		tombstones: make(map[string]uint64),
		meta:       make(map[string]metaEntry),
	}
}

// advance moves the group's clock to now when that is later.
func (s *state) advance(now uint64) {
	if now > s.now {
		s.now = now
	}
}

func newRegionState(kind region.Kind, id uint64) *regionState {
	return &regionState{id: id, kind: kind, entries: newEntries()}
}

func newEntries() *btree.BTreeG[entry] { return btree.NewG(btreeDegree, entryLess) }

func (r *regionState) has(key string) bool { return r.entries.Has(entry{key: key}) }

// live returns the value under key unless it is absent or expired at now.
func (r *regionState) live(key string, now uint64) (json.RawMessage, bool) {
	e, ok := r.entries.Get(entry{key: key})
	if !ok || e.expired(now) {
		return nil, false
	}
	return e.value, true
}

// mayExpire reports whether any entry of the region has a deadline.
func (r *regionState) mayExpire() bool { return r.expiry != nil && r.expiry.Len() > 0 }

// put stores value under key with deadline expires (0: none) and returns
// the entry it replaced.
func (r *regionState) put(key string, value json.RawMessage, expires uint64) (entry, bool) {
	// Clip capacity: nobody holding this value may append into shared memory.
	old, had := r.entries.ReplaceOrInsert(entry{key: key, value: value[:len(value):len(value)], expires: expires})
	r.indexes.Put(key, old.value, had, value)
	if had {
		r.bytes -= int64(len(old.key) + len(old.value))
		if old.expires != 0 {
			r.expiry.Delete(deadline{old.expires, key})
		}
	}
	if expires != 0 {
		if r.expiry == nil {
			r.expiry = btree.NewG(btreeDegree, deadlineLess)
		}
		r.expiry.ReplaceOrInsert(deadline{expires, key})
	}
	r.bytes += int64(len(key) + len(value))
	return old, had
}

// del removes an entry and returns it.
func (r *regionState) del(key string) (entry, bool) {
	old, had := r.entries.Delete(entry{key: key})
	if had {
		r.indexes.Delete(key, old.value)
		r.bytes -= int64(len(old.key) + len(old.value))
		if old.expires != 0 {
			r.expiry.Delete(deadline{old.expires, key})
		}
	}
	return old, had
}

// clear removes every entry. A new tree rather than Clear: a snapshot or a
// scan may share the old tree's nodes. The region is then empty, so an
// index being built is done: it is empty too.
func (r *regionState) clear() {
	r.entries = newEntries()
	r.expiry = nil
	r.bytes = 0
	r.indexes.Clear()
}

// expiredCount is how many entries are past their deadline at now but
// not removed yet.
func (r *regionState) expiredCount(now uint64) int {
	n := 0
	if r.mayExpire() {
		r.expiry.Ascend(func(d deadline) bool {
			if d.at > now {
				return false
			}
			n++
			return true
		})
	}
	return n
}

// defineIndexes makes every region keep the indexes s.indexDefs names for
// it (indexset.Set.Define): up to indexset.InlineBudget entries in all are
// indexed at once, larger regions in the background, whose builds take
// lock (the FSM's, which the caller holds for writing) for their short
// steps. hook is FSM.buildHook.
func (s *state) defineIndexes(lock sync.Locker, hook func(*indexset.Build, int)) {
	budget := indexset.InlineBudget
	for name, r := range s.regions {
		r.indexes.Define(s.indexDefs[name], entryTree{r.entries}, &budget, indexset.Region{
			Lock: lock,
			Live: func() indexset.Entries { return entryTree{r.entries} },
			Hook: hook,
		})
	}
}

// nextKey generates a key for put-if-absent: the next decimal number of the
// group-wide counter that is not a key of r yet, so a generated key never
// overwrites or collides with a key a client chose.
func (s *state) nextKey(r *regionState) string {
	for {
		s.lastKey++
		k := strconv.FormatUint(s.lastKey, 10)
		// An explicit group generates keys of the buckets it owns; an
		// implicit one those the store's filter says hash to it.
		mine := s.keyFilter == nil || s.keyFilter(k)
		if s.own.set != nil {
			mine = s.own.set.Owns(k)
		}
		if mine && !r.has(k) {
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
		r.indexes.Abandon()
	}
	r = newRegionState(region.Partition, id)
	r.indexes.Empty(s.indexDefs[name])
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
