package fsm

import (
	"fmt"
	"hash/crc32"
	"io"
	"sort"

	"github.com/google/btree"
	"github.com/hashicorp/raft"
	"github.com/kvnode/kvnode/fsm/buckets"
	"github.com/kvnode/kvnode/fsm/history"
	"github.com/kvnode/kvnode/fsm/snapio"
	"github.com/kvnode/kvnode/region"
)

// Snapshot stream layout, version 3 (DESIGN.md has the full description).
// Strings and byte slices are uvarint length-prefixed.
//
//	magic "KVFSMSNP" | version 3 | uvarint applied index | uvarint last generated key | uvarint group clock
//	per region, names ascending: tagRegion | name | kind | uvarint id | uvarint ttl | uvarint count |
//	    count × (key | value | uvarint deadline), keys ascending
//	per tombstone, names ascending: tagTombstone | name | uvarint id
//	per metadata key, ascending: tagMeta | key | uvarint version | value
//	tagEvents | uvarint floor index | uvarint floor n | uvarint count |
//	    count × (uvarint index | uvarint n | type | region | uvarint region id | key | value | old), oldest first
//	version 4 only: tagBuckets | uvarint count (= the buckets) | count × (byte state | uvarint move)
//	tagEnd | CRC-32C (big endian) of every byte before it
//
// Version 1 (still restored) has no region id, tombstones or metadata;
// version 2 (still restored) no clock, time-to-live, deadlines or events;
// version 3 no buckets. A group whose buckets are implicit (fsm/buckets.go)
// writes version 3, which members of the release before bucket moves read.
const (
	snapshotMagic   = "KVFSMSNP"
	snapshotV1      = 1
	snapshotV2      = 2
	snapshotV3      = 3
	snapshotVersion = 4
	tagEnd          = 0
	tagRegion       = 1
	tagTombstone    = 2
	tagMeta         = 3
	tagEvents       = 4
	tagBuckets      = 5
)

// castagnoli is the CRC-32C table (hash/crc32 builds it once and caches it).
func castagnoli() *crc32.Table { return snapio.Castagnoli() }

// Snapshot captures the state for raft. It only clones each region's B-tree
// (O(1): the clones share nodes copy-on-write), under the write lock because
// Clone marks the original's nodes shared. Persist then streams the clones
// while Apply keeps changing the live trees.
func (f *FSM) Snapshot() (raft.FSMSnapshot, error) {
	if h := f.Halted(); h != nil {
		// Raft's idea of the applied index has moved past entries this
		// state machine never applied: a snapshot would record them as
		// applied, and let Raft drop them from the log.
		return nil, fmt.Errorf("fsm: no snapshot of a halted state machine: %w", h)
	}
	f.mu.Lock()
	if st := f.st.stage; st != nil {
		f.mu.Unlock()
		// Raft tries again at its next snapshot interval; the chunks are
		// in the log until then (see stage.go).
		return nil, fmt.Errorf("fsm: no snapshot while a staged command (%d chunks so far) waits for its commit", len(st.chunks))
	}
	s := &snapshot{
		version: snapshotVersion,
		applied: f.applied.Load(),
		lastKey: f.st.lastKey,
		now:     f.st.now,
		regions: make([]snapshotRegion, 0, len(f.st.regions)),
	}
	timed := false // the state holds what only version 3 carries
	for name, r := range f.st.regions {
		s.regions = append(s.regions, snapshotRegion{name: name, kind: r.kind, id: r.id, ttl: r.ttl, entries: r.entries.Clone()})
		timed = timed || r.ttl != 0 || r.mayExpire()
	}
	s.floor, s.events = f.events.Snapshot()
	if f.st.own.set == nil {
		s.version = snapshotV3
	} else {
		b := *f.st.own.set
		s.buckets = &b
	}
	if f.formats != nil && f.formats() < FormatTime && !timed {
		// A member that reads only version 2 may restore it (a rolling
		// upgrade): without deadlines, version 2 says it all but the
		// history, which that member could not serve anyway.
		s.version, s.events = snapshotV2, nil
	}
	for name, id := range f.st.tombstones {
		s.tombstones = append(s.tombstones, snapshotTombstone{name: name, id: id})
	}
	for key, m := range f.st.meta {
		// Values are replaced, never modified in place: sharing is safe.
		s.meta = append(s.meta, snapshotMeta{key: key, entry: m})
	}
	f.mu.Unlock()
	sort.Slice(s.regions, func(i, j int) bool { return s.regions[i].name < s.regions[j].name })
	sort.Slice(s.tombstones, func(i, j int) bool { return s.tombstones[i].name < s.tombstones[j].name })
	sort.Slice(s.meta, func(i, j int) bool { return s.meta[i].key < s.meta[j].key })
	return s, nil
}

// snapshot is a point-in-time copy of the state, private to its Persist.
type snapshot struct {
	version    byte
	applied    uint64
	lastKey    uint64
	now        uint64
	regions    []snapshotRegion    // sorted by name
	tombstones []snapshotTombstone // sorted by name
	meta       []snapshotMeta      // sorted by key
	floor      history.Pos
	events     []history.Event // oldest first
	buckets    *buckets.Set    // version 4: nil when implicit
}

type snapshotRegion struct {
	name    string
	kind    region.Kind
	id      uint64
	ttl     uint64
	entries *btree.BTreeG[entry]
}

type snapshotTombstone struct {
	name string
	id   uint64
}

type snapshotMeta struct {
	key   string
	entry metaEntry
}

// Persist streams the snapshot to sink and closes it, or cancels it on error.
func (s *snapshot) Persist(sink raft.SnapshotSink) error {
	if err := s.writeTo(sink); err != nil {
		_ = sink.Cancel()
		return fmt.Errorf("fsm: persist snapshot: %w", err)
	}
	if err := sink.Close(); err != nil {
		return fmt.Errorf("fsm: persist snapshot: close sink: %w", err)
	}
	return nil
}

// Release drops the clones; their nodes are freed once the live trees have
// replaced them.
func (s *snapshot) Release() { s.regions, s.meta, s.events = nil, nil, nil }

// writeTo writes the snapshot stream to w.
func (s *snapshot) writeTo(w io.Writer) error {
	sw := snapio.NewWriter(w)
	sw.Raw(snapshotMagic)
	v3 := s.version >= snapshotV3
	sw.Byte(s.version)
	sw.Uvarint(s.applied)
	sw.Uvarint(s.lastKey)
	if v3 {
		sw.Uvarint(s.now)
	}
	for _, r := range s.regions {
		sw.Byte(tagRegion)
		sw.String(r.name)
		sw.String(string(r.kind))
		sw.Uvarint(r.id)
		if v3 {
			sw.Uvarint(r.ttl)
		}
		sw.Uvarint(uint64(r.entries.Len()))
		r.entries.Ascend(func(e entry) bool {
			sw.String(e.key)
			sw.Bytes(e.value)
			if v3 {
				sw.Uvarint(e.expires)
			}
			return true
		})
	}
	for _, t := range s.tombstones {
		sw.Byte(tagTombstone)
		sw.String(t.name)
		sw.Uvarint(t.id)
	}
	for _, m := range s.meta {
		sw.Byte(tagMeta)
		sw.String(m.key)
		sw.Uvarint(m.entry.version)
		sw.Bytes(m.entry.value)
	}
	if !v3 {
		sw.Byte(tagEnd)
		return sw.Finish()
	}
	sw.Byte(tagEvents)
	sw.Uvarint(s.floor.Index)
	sw.Uvarint(uint64(s.floor.N))
	sw.Uvarint(uint64(len(s.events)))
	for _, e := range s.events {
		sw.Uvarint(e.Pos.Index)
		sw.Uvarint(uint64(e.Pos.N))
		sw.String(string(e.Type))
		sw.String(e.Region)
		sw.Uvarint(e.RegionID)
		sw.String(e.Key)
		sw.Bytes(e.Value)
		sw.Bytes(e.Old)
	}
	if s.buckets != nil {
		sw.Byte(tagBuckets)
		s.buckets.Write(sw)
	}
	sw.Byte(tagEnd)
	return sw.Finish()
}
