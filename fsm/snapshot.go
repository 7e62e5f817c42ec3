package fsm

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"io"
	"sort"

	"github.com/google/btree"
	"github.com/hashicorp/raft"
	"github.com/kvnode/kvnode/fsm/history"
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
//	tagEnd | CRC-32C (big endian) of every byte before it
//
// Version 1 (still restored) has no region id, tombstones or metadata;
// version 2 (still restored) no clock, time-to-live, deadlines or events.
const (
	snapshotMagic   = "KVFSMSNP"
	snapshotV1      = 1
	snapshotV2      = 2
	snapshotVersion = 3
	tagEnd          = 0
	tagRegion       = 1
	tagTombstone    = 2
	tagMeta         = 3
	tagEvents       = 4
)

// castagnoli is the CRC-32C table (hash/crc32 builds it once and caches it).
func castagnoli() *crc32.Table { return crc32.MakeTable(crc32.Castagnoli) }

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
		applied: f.applied.index.Load(),
		lastKey: f.st.lastKey,
		now:     f.st.now,
		regions: make([]snapshotRegion, 0, len(f.st.regions)),
	}
	s.floor, s.events = f.events.Snapshot()
	for name, r := range f.st.regions {
		s.regions = append(s.regions, snapshotRegion{name: name, kind: r.kind, id: r.id, ttl: r.ttl, entries: r.entries.Clone()})
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
	applied    uint64
	lastKey    uint64
	now        uint64
	regions    []snapshotRegion    // sorted by name
	tombstones []snapshotTombstone // sorted by name
	meta       []snapshotMeta      // sorted by key
	floor      history.Pos
	events     []history.Event // oldest first
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
	sum := crc32.New(castagnoli())
	sw := &snapshotWriter{w: bufio.NewWriterSize(io.MultiWriter(w, sum), 64<<10)}
	sw.w.WriteString(snapshotMagic)
	sw.w.WriteByte(snapshotVersion)
	sw.uvarint(s.applied)
	sw.uvarint(s.lastKey)
	sw.uvarint(s.now)
	for _, r := range s.regions {
		sw.w.WriteByte(tagRegion)
		sw.string(r.name)
		sw.string(string(r.kind))
		sw.uvarint(r.id)
		sw.uvarint(r.ttl)
		sw.uvarint(uint64(r.entries.Len()))
		r.entries.Ascend(func(e entry) bool {
			sw.string(e.key)
			sw.bytes(e.value)
			sw.uvarint(e.expires)
			return true
		})
	}
	for _, t := range s.tombstones {
		sw.w.WriteByte(tagTombstone)
		sw.string(t.name)
		sw.uvarint(t.id)
	}
	for _, m := range s.meta {
		sw.w.WriteByte(tagMeta)
		sw.string(m.key)
		sw.uvarint(m.entry.version)
		sw.bytes(m.entry.value)
	}
	sw.w.WriteByte(tagEvents)
	sw.uvarint(s.floor.Index)
	sw.uvarint(uint64(s.floor.N))
	sw.uvarint(uint64(len(s.events)))
	for _, e := range s.events {
		sw.uvarint(e.Pos.Index)
		sw.uvarint(uint64(e.Pos.N))
		sw.string(string(e.Type))
		sw.string(e.Region)
		sw.uvarint(e.RegionID)
		sw.string(e.Key)
		sw.bytes(e.Value)
		sw.bytes(e.Old)
	}
	sw.w.WriteByte(tagEnd)
	// Flush so the checksum covers every byte before the trailer.
	if err := sw.w.Flush(); err != nil {
		return err
	}
	var trailer [4]byte
	binary.BigEndian.PutUint32(trailer[:], sum.Sum32())
	_, err := w.Write(trailer[:])
	return err
}

// snapshotWriter writes the stream's primitives. bufio.Writer keeps the
// first write error and turns later writes into no-ops; writeTo reports it
// at Flush.
type snapshotWriter struct {
	w       *bufio.Writer
	scratch [binary.MaxVarintLen64]byte
}

func (sw *snapshotWriter) uvarint(v uint64) {
	sw.w.Write(binary.AppendUvarint(sw.scratch[:0], v))
}

func (sw *snapshotWriter) string(s string) {
	sw.uvarint(uint64(len(s)))
	sw.w.WriteString(s)
}

func (sw *snapshotWriter) bytes(b []byte) {
	sw.uvarint(uint64(len(b)))
	sw.w.Write(b)
}
