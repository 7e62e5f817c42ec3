package fsm

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"

	"github.com/kvnode/kvnode/fsm/history"
	"github.com/kvnode/kvnode/region"
)

// Restore replaces the whole state with the snapshot read from rc, and
// closes rc. It builds the new state completely and validates it (magic,
// version, order, checksum, end of stream) before swapping it in under the
// write lock, so a corrupt or truncated snapshot returns an error and leaves
// the current state, applied index included, untouched.
func (f *FSM) Restore(rc io.ReadCloser) error {
	defer rc.Close()
	st, applied, err := readSnapshot(rc)
	if err != nil {
		return fmt.Errorf("fsm: restore snapshot: %w", err)
	}
	st.keyFilter, st.clock = f.keyFilter, f.st.clock
	h := st.restored
	st.restored, st.events = nil, f.events
	if h == nil {
		// An older snapshot has no history: none is kept before it.
		h = &restoredHistory{floor: history.Pos{Index: applied + 1}}
	}
	f.mu.Lock()
	// Indexes are derived state: rebuild the configured ones, large ones in
	// the background like SetIndexes, so writes resume as soon as Restore
	// returns (queries scan until they are installed).
	for _, r := range f.st.regions {
		r.indexes.Abandon()
	}
	st.indexDefs = f.st.indexDefs
	f.st = st
	st.defineIndexes(&f.mu, f.buildHook)
	f.applied.set(applied)
	f.events.Reset(h.floor, h.events, applied)
	f.mu.Unlock()
	return nil
}

// readSnapshot decodes a whole snapshot stream.
func readSnapshot(r io.Reader) (*state, uint64, error) {
	sr := &snapshotReader{r: bufio.NewReaderSize(r, 64<<10), table: castagnoli()}
	magic, err := sr.read(uint64(len(snapshotMagic)))
	if err != nil {
		return nil, 0, fmt.Errorf("header: %w", err)
	}
	if string(magic) != snapshotMagic {
		return nil, 0, fmt.Errorf("not a kvnode fsm snapshot (magic %q)", magic)
	}
	version, err := sr.ReadByte()
	if err != nil {
		return nil, 0, fmt.Errorf("header: %w", err)
	}
	if version > snapshotVersion {
		return nil, 0, fmt.Errorf("format version %d was written by a newer kvnode (this build reads versions %d to %d): upgrade this member", version, snapshotV1, snapshotVersion)
	}
	if version < snapshotV1 {
		return nil, 0, fmt.Errorf("format version %d is not supported (this build reads versions %d to %d)", version, snapshotV1, snapshotVersion)
	}
	applied, err := sr.uvarint("applied index")
	if err != nil {
		return nil, 0, err
	}
	st := newState()
	if st.lastKey, err = sr.uvarint("key counter"); err != nil {
		return nil, 0, err
	}
	if version >= snapshotVersion {
		if st.now, err = sr.uvarint("group clock"); err != nil {
			return nil, 0, err
		}
	}
	// Records come grouped by tag in ascending tag order, names strictly
	// ascending within a tag: one canonical stream per state.
	lastTag, prev := byte(tagRegion), ""
	first := true
	for {
		tag, err := sr.ReadByte()
		if err != nil {
			return nil, 0, fmt.Errorf("after %q: %w", prev, err)
		}
		if tag == tagEnd {
			break
		}
		if tag != tagRegion && (version == snapshotV1 || (tag != tagTombstone && tag != tagMeta && (tag != tagEvents || version < snapshotVersion))) {
			return nil, 0, fmt.Errorf("after %q: unknown record tag %d", prev, tag)
		}
		if tag < lastTag {
			return nil, 0, fmt.Errorf("record tag %d follows tag %d: records must be grouped in tag order", tag, lastTag)
		}
		if tag != lastTag {
			first = true
		}
		var name string
		switch tag {
		case tagRegion:
			var r *regionState
			if name, r, err = sr.region(version); err == nil {
				st.regions[name] = r
			}
		case tagTombstone:
			if name, err = sr.string("tombstone name"); err == nil {
				st.tombstones[name], err = sr.uvarint("tombstone id")
			}
		case tagEvents:
			if !first {
				return nil, 0, errors.New("a second record of events")
			}
			st.restored = &restoredHistory{}
			err = sr.history(st.restored)
		case tagMeta:
			if name, err = sr.string("meta key"); err == nil {
				var m metaEntry
				if m.version, err = sr.uvarint("meta version"); err == nil {
					m.value, err = sr.bytes("meta value")
					st.meta[name] = m
				}
			}
		}
		if err != nil {
			return nil, 0, err
		}
		if !first && name <= prev {
			return nil, 0, fmt.Errorf("%q follows %q: names must be strictly ascending", name, prev)
		}
		lastTag, prev, first = tag, name, false
	}
	if err := sr.checkTrailer(); err != nil {
		return nil, 0, err
	}
	return st, applied, nil
}

// snapshotReader reads the stream's primitives and keeps a running CRC-32C
// of everything it has read.
type snapshotReader struct {
	r     *bufio.Reader
	table *crc32.Table
	sum   uint32
	one   [1]byte
}

// ReadByte reads one byte; it makes snapshotReader an io.ByteReader for
// binary.ReadUvarint.
func (sr *snapshotReader) ReadByte() (byte, error) {
	b, err := sr.r.ReadByte()
	if err != nil {
		return 0, truncated(err)
	}
	sr.one[0] = b
	sr.sum = crc32.Update(sr.sum, sr.table, sr.one[:])
	return b, nil
}

// read reads exactly n bytes. Memory grows with the bytes actually read, so
// a corrupt length cannot make it allocate more than the stream holds.
func (sr *snapshotReader) read(n uint64) ([]byte, error) {
	const chunk = 1 << 20
	var b []byte
	if n <= chunk {
		b = make([]byte, n)
		if _, err := io.ReadFull(sr.r, b); err != nil {
			return nil, truncated(err)
		}
	} else {
		if n > 1<<62 {
			return nil, fmt.Errorf("length %d is impossible", n)
		}
		var buf bytes.Buffer
		if _, err := io.CopyN(&buf, sr.r, int64(n)); err != nil {
			return nil, truncated(err)
		}
		// Copy: the buffer grew by doubling and may be far larger than n.
		b = bytes.Clone(buf.Bytes())
	}
	sr.sum = crc32.Update(sr.sum, sr.table, b)
	return b, nil
}

func (sr *snapshotReader) uvarint(what string) (uint64, error) {
	v, err := binary.ReadUvarint(sr)
	if err != nil {
		return 0, fmt.Errorf("%s: %w", what, err)
	}
	return v, nil
}

func (sr *snapshotReader) bytes(what string) ([]byte, error) {
	n, err := binary.ReadUvarint(sr)
	if err != nil {
		return nil, fmt.Errorf("%s length: %w", what, err)
	}
	b, err := sr.read(n)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	return b, nil
}

func (sr *snapshotReader) string(what string) (string, error) {
	b, err := sr.bytes(what)
	return string(b), err
}

// region reads one region record after its tag. Version 1 records have no
// id: v1 snapshots exist only for group 0, where a region's id is
// informational (commands there carry none), so 0 is a safe default.
func (sr *snapshotReader) region(version byte) (string, *regionState, error) {
	name, err := sr.string("region name")
	if err != nil {
		return "", nil, err
	}
	kind, err := sr.string("region kind")
	if err != nil {
		return "", nil, fmt.Errorf("region %q: %w", name, err)
	}
	if !knownKind(region.Kind(kind)) {
		return "", nil, fmt.Errorf("region %q: unknown kind %q", name, kind)
	}
	var id uint64
	if version != snapshotV1 {
		if id, err = sr.uvarint("region id"); err != nil {
			return "", nil, fmt.Errorf("region %q: %w", name, err)
		}
	}
	r := newRegionState(region.Kind(kind), id)
	if version >= snapshotVersion {
		if r.ttl, err = sr.uvarint("region time-to-live"); err != nil {
			return "", nil, fmt.Errorf("region %q: %w", name, err)
		}
	}
	count, err := sr.uvarint("entry count")
	if err != nil {
		return "", nil, fmt.Errorf("region %q: %w", name, err)
	}
	// No preallocation from count: a corrupt count must not allocate.
	prev := ""
	for i := uint64(0); i < count; i++ {
		key, err := sr.string("key")
		if err != nil {
			return "", nil, fmt.Errorf("region %q entry %d: %w", name, i, err)
		}
		if i > 0 && key <= prev {
			return "", nil, fmt.Errorf("region %q: key %q follows %q: keys must be strictly ascending", name, key, prev)
		}
		value, err := sr.bytes("value")
		if err != nil {
			return "", nil, fmt.Errorf("region %q key %q: %w", name, key, err)
		}
		var expires uint64
		if version >= snapshotVersion {
			if expires, err = sr.uvarint("deadline"); err != nil {
				return "", nil, fmt.Errorf("region %q key %q: %w", name, key, err)
			}
		}
		r.put(key, value, expires)
		prev = key
	}
	return name, r, nil
}

// history reads the events record after its tag into h (which grows to
// hold them all; Restore then keeps the newest the member wants).
func (sr *snapshotReader) history(h *restoredHistory) error {
	var err error
	if h.floor.Index, err = sr.uvarint("history floor"); err != nil {
		return err
	}
	n, err := sr.uvarint("history floor")
	if err != nil {
		return err
	}
	if n > 1<<32-1 {
		return fmt.Errorf("history floor %d.%d: the event number is not 32 bits", h.floor.Index, n)
	}
	h.floor.N = uint32(n)
	count, err := sr.uvarint("event count")
	if err != nil {
		return err
	}
	prev := h.floor
	for i := uint64(0); i < count; i++ {
		var e history.Event
		if e.Pos.Index, err = sr.uvarint("event index"); err != nil {
			return fmt.Errorf("event %d: %w", i, err)
		}
		if n, err = sr.uvarint("event number"); err != nil {
			return fmt.Errorf("event %d: %w", i, err)
		}
		e.Pos.N = uint32(n)
		if n > 1<<32-1 || !prev.Less(e.Pos) {
			return fmt.Errorf("event %d at %d.%d does not follow %d.%d", i, e.Pos.Index, n, prev.Index, prev.N)
		}
		prev = e.Pos
		var typ string
		if typ, err = sr.string("event type"); err == nil {
			e.Type = region.EventType(typ)
			if e.Region, err = sr.string("event region"); err == nil {
				if e.RegionID, err = sr.uvarint("event region id"); err == nil {
					if e.Key, err = sr.string("event key"); err == nil {
						if e.Value, err = sr.bytes("event value"); err == nil {
							e.Old, err = sr.bytes("event old value")
						}
					}
				}
			}
		}
		if err != nil {
			return fmt.Errorf("event %d: %w", i, err)
		}
		e.Value, e.Old = nilIfEmpty(e.Value), nilIfEmpty(e.Old)
		h.events = append(h.events, e)
	}
	return nil
}

// restoredHistory is a snapshot's change history, until Restore hands it
// to the FSM's history.Log.
type restoredHistory struct {
	floor  history.Pos
	events []history.Event
}

// nilIfEmpty: an event's absent value is written as an empty one (stored
// values are never empty).
func nilIfEmpty(b []byte) []byte {
	if len(b) == 0 {
		return nil
	}
	return b
}

// checkTrailer compares the stored checksum with the running one and
// requires the stream to end right after it.
func (sr *snapshotReader) checkTrailer() error {
	want := sr.sum
	var trailer [4]byte
	if _, err := io.ReadFull(sr.r, trailer[:]); err != nil {
		return fmt.Errorf("checksum: %w", truncated(err))
	}
	if got := binary.BigEndian.Uint32(trailer[:]); got != want {
		return fmt.Errorf("checksum mismatch: stored %08x, computed %08x", got, want)
	}
	if _, err := sr.r.ReadByte(); err != io.EOF {
		if err == nil {
			return errors.New("trailing bytes after the checksum")
		}
		return fmt.Errorf("after the checksum: %w", err)
	}
	return nil
}

// truncated turns an end of stream in the middle of the snapshot into
// io.ErrUnexpectedEOF: a snapshot ends only after its trailer.
func truncated(err error) error {
	if err == io.EOF {
		return io.ErrUnexpectedEOF
	}
	return err
}
