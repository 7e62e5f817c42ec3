package fsm

import (
	"encoding/json"
	"sort"

	"github.com/kvnode/kvnode/fsm/codec"
	"github.com/kvnode/kvnode/fsm/history"
	"github.com/kvnode/kvnode/region"
)

// Entry time-to-live. A write's deadline is the group's clock (state.now,
// the latest Now of the commands applied) plus the command's TTL. An entry
// past its deadline is gone for every write from that moment of the log on
// (live), and for reads by the reader's clock too (state.readNow), even
// before its removal is applied. The removal itself is a command: the
// leader of a group proposes OpExpire with the keys it found due (Due),
// and Apply removes those still due at the command's time, so every
// replica removes the same entries at the same position, with the same
// expire events.

// deadline returns the deadline of the entries command c writes.
func (s *state) deadline(c *codec.Command) uint64 {
	if c.TTL == 0 {
		return 0
	}
	if s.now > ^uint64(0)-c.TTL {
		return ^uint64(0) // saturate: "never" for every clock there will be
	}
	return s.now + c.TTL
}

// emit records an event of the entry being applied.
func (s *state) emit(t region.EventType, r *regionState, name, key string, value, old json.RawMessage) {
	s.events.Add(history.Event{Type: t, Region: name, RegionID: r.id, Key: key, Value: value, Old: old})
}

// write stores value under key and records what it did: an update of a
// live entry, else a create (after the expire of an entry it replaces
// past its deadline, whose removal was not applied yet).
func (s *state) write(r *regionState, name, key string, value json.RawMessage, expires uint64) {
	old, had := r.put(key, value, expires)
	switch {
	case had && old.expired(s.now):
		s.emit(region.EventExpire, r, name, key, nil, old.value)
		s.emit(region.EventCreate, r, name, key, value, nil)
	case had:
		s.emit(region.EventUpdate, r, name, key, value, old.value)
	default:
		s.emit(region.EventCreate, r, name, key, value, nil)
	}
}

// remove deletes key and records it as t (destroy or expire).
func (s *state) remove(r *regionState, name, key string, t region.EventType) {
	if old, had := r.del(key); had {
		s.emit(t, r, name, key, nil, old.value)
	}
}

// clearRegion removes every entry and records one clear event.
func (s *state) clearRegion(r *regionState, name string) {
	r.clear()
	s.emit(region.EventClear, r, name, "", nil, nil)
}

// alterRegion changes a region's default entry time-to-live (group 0).
func (s *state) alterRegion(c *codec.Command, _ uint64) *codec.Result {
	if c.RegionID != 0 {
		return invalid(c, "regions are altered in group 0, not with a region id")
	}
	r, err := s.region(c.Region)
	if err != nil {
		return refuse(err)
	}
	r.ttl = c.TTL
	return &codec.Result{}
}

// expire removes each key of c that is past its deadline at the group's
// clock; a key written again since the leader found it due, or removed, is
// left alone. A region that is gone is nothing to do, not an error.
func (s *state) expire(c *codec.Command, _ uint64) *codec.Result {
	r, err := s.view(c.Region, c.RegionID)
	if err != nil || r == nil {
		return &codec.Result{}
	}
	for _, k := range c.Keys {
		if e, ok := r.entries.Get(entry{key: k}); ok && e.expired(s.now) {
			s.remove(r, c.Region, k, region.EventExpire)
		}
	}
	return &codec.Result{}
}

// readNow is the time reads judge deadlines by: the member's clock, or
// the group's when that is ahead. The caller holds the FSM's lock.
func (s *state) readNow() uint64 {
	return max(uint64(s.clock().UnixMilli()), s.now)
}

// Due lists, region by region (names ascending; id as the reads take it:
// the region's id in a partition group, 0 in group 0), up to max keys
// whose deadline the member's clock has passed: what the group's leader
// proposes to expire.
func (f *FSM) Due(max int) []DueKeys {
	f.mu.RLock()
	defer f.mu.RUnlock()
	now := f.st.readNow()
	names := make([]string, 0, len(f.st.regions))
	for name, r := range f.st.regions {
		if r.mayExpire() {
			names = append(names, name)
		}
	}
	sort.Strings(names)
	var out []DueKeys
	for _, name := range names {
		r := f.st.regions[name]
		d := DueKeys{Region: name}
		if r.kind == region.Partition && r.id != 0 && f.group != 0 {
			d.RegionID = r.id
		}
		r.expiry.Ascend(func(x deadline) bool {
			if x.at > now || max <= 0 {
				return false
			}
			if d.RegionID == 0 || f.st.own.owns(x.key) { // a bucket moving out or in is not ours to expire
				d.Keys = append(d.Keys, x.key)
				max--
			}
			return true
		})
		if len(d.Keys) > 0 {
			out = append(out, d)
		}
	}
	return out
}

// DueKeys are keys of one region past their deadline.
type DueKeys struct {
	Region   string
	RegionID uint64
	Keys     []string
}
