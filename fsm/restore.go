package fsm

import (
	"errors"
	"fmt"
	"io"

	"github.com/kvnode/kvnode/fsm/buckets"
	"github.com/kvnode/kvnode/fsm/history"
	"github.com/kvnode/kvnode/fsm/snapio"
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
	f.applied.Set(applied)
	f.events.Reset(h.floor, h.events, applied)
	f.mu.Unlock()
	return nil
}

// readSnapshot decodes a whole snapshot stream.
func readSnapshot(r io.Reader) (*state, uint64, error) {
	sr := snapio.NewReader(r)
	magic, err := sr.Read(uint64(len(snapshotMagic)))
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
	applied, err := sr.Uvarint("applied index")
	if err != nil {
		return nil, 0, err
	}
	st := newState()
	if st.lastKey, err = sr.Uvarint("key counter"); err != nil {
		return nil, 0, err
	}
	if version >= snapshotV3 {
		if st.now, err = sr.Uvarint("group clock"); err != nil {
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
		if tag != tagRegion && (version == snapshotV1 || (tag != tagTombstone && tag != tagMeta && (tag != tagEvents || version < snapshotV3) && (tag != tagBuckets || version < snapshotVersion))) {
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
			if name, r, err = readRegion(sr, version); err == nil {
				st.regions[name] = r
			}
		case tagTombstone:
			if name, err = sr.String("tombstone name"); err == nil {
				st.tombstones[name], err = sr.Uvarint("tombstone id")
			}
		case tagEvents:
			if !first {
				return nil, 0, errors.New("a second record of events")
			}
			st.restored = &restoredHistory{}
			err = readHistory(sr, st.restored)
		case tagBuckets:
			if !first {
				return nil, 0, errors.New("a second record of buckets")
			}
			st.own.set, err = buckets.Read(sr)
		case tagMeta:
			if name, err = sr.String("meta key"); err == nil {
				var m metaEntry
				if m.version, err = sr.Uvarint("meta version"); err == nil {
					m.value, err = sr.Bytes("meta value")
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
	if err := sr.Trailer(); err != nil {
		return nil, 0, err
	}
	return st, applied, nil
}

// readRegion reads one region record after its tag. Version 1 records have no
// id: v1 snapshots exist only for group 0, where a region's id is
// informational (commands there carry none), so 0 is a safe default.
func readRegion(sr *snapio.Reader, version byte) (string, *regionState, error) {
	name, err := sr.String("region name")
	if err != nil {
		return "", nil, err
	}
	kind, err := sr.String("region kind")
	if err != nil {
		return "", nil, fmt.Errorf("region %q: %w", name, err)
	}
	if !knownKind(region.Kind(kind)) {
		return "", nil, fmt.Errorf("region %q: unknown kind %q", name, kind)
	}
	var id uint64
	if version != snapshotV1 {
		if id, err = sr.Uvarint("region id"); err != nil {
			return "", nil, fmt.Errorf("region %q: %w", name, err)
		}
	}
	r := newRegionState(region.Kind(kind), id)
	if version >= snapshotV3 {
		if r.ttl, err = sr.Uvarint("region time-to-live"); err != nil {
			return "", nil, fmt.Errorf("region %q: %w", name, err)
		}
	}
	count, err := sr.Uvarint("entry count")
	if err != nil {
		return "", nil, fmt.Errorf("region %q: %w", name, err)
	}
	// No preallocation from count: a corrupt count must not allocate.
	prev := ""
	for i := uint64(0); i < count; i++ {
		key, err := sr.String("key")
		if err != nil {
			return "", nil, fmt.Errorf("region %q entry %d: %w", name, i, err)
		}
		if i > 0 && key <= prev {
			return "", nil, fmt.Errorf("region %q: key %q follows %q: keys must be strictly ascending", name, key, prev)
		}
		value, err := sr.Bytes("value")
		if err != nil {
			return "", nil, fmt.Errorf("region %q key %q: %w", name, key, err)
		}
		var expires uint64
		if version >= snapshotV3 {
			if expires, err = sr.Uvarint("deadline"); err != nil {
				return "", nil, fmt.Errorf("region %q key %q: %w", name, key, err)
			}
		}
		r.put(key, value, expires)
		prev = key
	}
	return name, r, nil
}

// readHistory reads the events record after its tag into h (which grows to
// hold them all; Restore then keeps the newest the member wants).
func readHistory(sr *snapio.Reader, h *restoredHistory) error {
	var err error
	if h.floor.Index, err = sr.Uvarint("history floor"); err != nil {
		return err
	}
	n, err := sr.Uvarint("history floor")
	if err != nil {
		return err
	}
	if n > 1<<32-1 {
		return fmt.Errorf("history floor %d.%d: the event number is not 32 bits", h.floor.Index, n)
	}
	h.floor.N = uint32(n)
	count, err := sr.Uvarint("event count")
	if err != nil {
		return err
	}
	prev := h.floor
	for i := uint64(0); i < count; i++ {
		var e history.Event
		if e.Pos.Index, err = sr.Uvarint("event index"); err != nil {
			return fmt.Errorf("event %d: %w", i, err)
		}
		if n, err = sr.Uvarint("event number"); err != nil {
			return fmt.Errorf("event %d: %w", i, err)
		}
		e.Pos.N = uint32(n)
		if n > 1<<32-1 || !prev.Less(e.Pos) {
			return fmt.Errorf("event %d at %d.%d does not follow %d.%d", i, e.Pos.Index, n, prev.Index, prev.N)
		}
		prev = e.Pos
		var typ string
		if typ, err = sr.String("event type"); err == nil {
			e.Type = region.EventType(typ)
			if e.Region, err = sr.String("event region"); err == nil {
				if e.RegionID, err = sr.Uvarint("event region id"); err == nil {
					if e.Key, err = sr.String("event key"); err == nil {
						if e.Value, err = sr.Bytes("event value"); err == nil {
							e.Old, err = sr.Bytes("event old value")
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
