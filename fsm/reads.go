package fsm

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"strings"

	"github.com/kvnode/kvnode/index"
	"github.com/kvnode/kvnode/region"
)

// Local reads. They see this replica's state as of its AppliedIndex, with no
// consistency barrier (the store adds one for linearizable reads), and are
// safe to call concurrently with Apply and Restore.
//
// Returned values share memory with the state machine: callers must not
// modify them. (Values are never modified in place, so they stay valid.)
//
// Entry reads take the region's ID. 0 reads group 0's region of that name
// (region.ErrRegionNotFound when there is none). A non-zero ID reads a
// partition group's part of that incarnation: empty when the group holds no
// entry of it yet, region.ErrRegionNotFound when it was destroyed or a newer
// incarnation lives here.

// Regions lists every region, sorted by name.
func (f *FSM) Regions() []region.Info {
	f.mu.RLock()
	out := make([]region.Info, 0, len(f.st.regions))
	for name, r := range f.st.regions {
		out = append(out, r.info(name))
	}
	f.mu.RUnlock()
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// Region describes one region.
func (f *FSM) Region(name string) (region.Info, bool) {
	f.mu.RLock()
	defer f.mu.RUnlock()
	r, ok := f.st.regions[name]
	if !ok {
		return region.Info{}, false
	}
	return r.info(name), true
}

// info describes the region named name.
func (r *regionState) info(name string) region.Info {
	return region.Info{Name: name, Kind: r.kind, EntryTimeToLive: int64(r.ttl / 1000)}
}

// Get returns the value under key. Errors wrap region.ErrRegionNotFound or
// region.ErrKeyNotFound.
func (f *FSM) Get(name string, id uint64, key string) (json.RawMessage, error) {
	f.mu.RLock()
	defer f.mu.RUnlock()
	r, err := f.st.view(name, id)
	if err != nil {
		return nil, err
	}
	if id != 0 && !f.st.own.serves(key) {
		return nil, wrongGroup(key)
	}
	var v json.RawMessage
	ok := false
	if r != nil {
		v, ok = r.live(key, f.st.readNow())
	}
	if !ok {
		return nil, fmt.Errorf("region %q: key %q: %w", name, key, region.ErrKeyNotFound)
	}
	return v, nil
}

// GetMany returns the values of keys, aligned with keys: nil where a key is
// missing. The only error is a missing region.
func (f *FSM) GetMany(name string, id uint64, keys []string) ([]json.RawMessage, error) {
	f.mu.RLock()
	defer f.mu.RUnlock()
	r, err := f.st.view(name, id)
	if err != nil {
		return nil, err
	}
	if id != 0 {
		for _, k := range keys {
			if !f.st.own.serves(k) {
				return nil, wrongGroup(k)
			}
		}
	}
	out := make([]json.RawMessage, len(keys))
	if r == nil {
		return out, nil
	}
	now := f.st.readNow()
	for i, k := range keys {
		out[i], _ = r.live(k, now)
	}
	return out, nil
}

// List returns up to limit entries in ascending key order (byte-wise);
// limit < 0 means all, 0 none.
func (f *FSM) List(name string, id uint64, limit int) ([]region.Entry, error) {
	f.mu.RLock()
	defer f.mu.RUnlock()
	r, err := f.st.view(name, id)
	if err != nil {
		return nil, err
	}
	if r == nil {
		return []region.Entry{}, nil
	}
	n := r.entries.Len()
	if limit >= 0 && limit < n {
		n = limit
	}
	out := make([]region.Entry, 0, n)
	if n == 0 {
		return out, nil
	}
	now, hide := f.st.readNow(), f.st.own.hidden()
	r.entries.Ascend(func(e entry) bool {
		if !e.expired(now) && (hide == nil || !hide(e.key)) {
			out = append(out, region.Entry{Key: e.key, Value: e.value})
		}
		return len(out) < n
	})
	return out, nil
}

// Keys returns every key of the region in ascending order.
func (f *FSM) Keys(name string, id uint64) ([]string, error) {
	f.mu.RLock()
	defer f.mu.RUnlock()
	r, err := f.st.view(name, id)
	if err != nil {
		return nil, err
	}
	if r == nil {
		return []string{}, nil
	}
	out := make([]string, 0, r.entries.Len())
	now, hide := f.st.readNow(), f.st.own.hidden()
	r.entries.Ascend(func(e entry) bool {
		if !e.expired(now) && (hide == nil || !hide(e.key)) {
			out = append(out, e.key)
		}
		return true
	})
	return out, nil
}

// Count returns the number of entries in the region.
func (f *FSM) Count(name string, id uint64) (int, error) {
	f.mu.RLock()
	defer f.mu.RUnlock()
	r, err := f.st.view(name, id)
	if err != nil || r == nil {
		return 0, err
	}
	now := f.st.readNow()
	if hide := f.st.own.hidden(); hide != nil {
		n := 0
		r.entries.Ascend(func(e entry) bool {
			if !e.expired(now) && !hide(e.key) {
				n++
			}
			return true
		})
		return n, nil
	}
	return r.entries.Len() - r.expiredCount(now), nil
}

// RegionSize is a region's size on this replica.
type RegionSize struct {
	Region  string
	Entries int
	// Bytes are the entries' keys and values.
	Bytes int64
}

// RegionSizes lists every region's entry count and bytes on this replica,
// sorted by name. It costs O(regions): the counts are kept as entries
// change.
func (f *FSM) RegionSizes() []RegionSize {
	f.mu.RLock()
	out := make([]RegionSize, 0, len(f.st.regions))
	for name, r := range f.st.regions {
		out = append(out, RegionSize{Region: name, Entries: r.entries.Len(), Bytes: r.bytes})
	}
	f.mu.RUnlock()
	sort.Slice(out, func(i, j int) bool { return out[i].Region < out[j].Region })
	return out
}

// RegionID returns the ID of the region name defined here.
func (f *FSM) RegionID(name string) (uint64, bool) {
	f.mu.RLock()
	defer f.mu.RUnlock()
	r, ok := f.st.regions[name]
	if !ok {
		return 0, false
	}
	return r.id, true
}

// Meta returns a metadata value and its version. The value is shared with
// the state machine: callers must not modify it.
func (f *FSM) Meta(key string) (value []byte, version uint64, ok bool) {
	f.mu.RLock()
	defer f.mu.RUnlock()
	m, ok := f.st.meta[key]
	return m.value, m.version, ok
}

// MetaEntry is one metadata key with its value and version.
type MetaEntry struct {
	Key     string
	Value   []byte
	Version uint64
}

// MetaList returns every metadata entry whose key starts with prefix, in
// key order. Values are shared with the state machine: do not modify them.
func (f *FSM) MetaList(prefix string) []MetaEntry {
	f.mu.RLock()
	var out []MetaEntry
	for k, m := range f.st.meta {
		if strings.HasPrefix(k, prefix) {
			out = append(out, MetaEntry{Key: k, Value: m.value, Version: m.version})
		}
	}
	f.mu.RUnlock()
	sort.Slice(out, func(i, j int) bool { return out[i].Key < out[j].Key })
	return out
}

// Scan calls fn with every entry of the region in key order, until fn
// returns false. It iterates a copy-on-write clone of the region's tree
// taken under the write lock (O(1)), so fn runs without any lock held: it
// may take its time, read this FSM again, or run while writes apply. It
// sees the region as of the moment of the call.
func (f *FSM) Scan(name string, id uint64, fn func(key string, value json.RawMessage) bool) error {
	f.mu.Lock()
	r, err := f.st.view(name, id)
	if err != nil || r == nil {
		f.mu.Unlock()
		return err
	}
	t := r.entries.Clone()
	now, hide := f.st.readNow(), f.st.own.hidden()
	f.mu.Unlock()
	t.Ascend(func(e entry) bool { return e.expired(now) || (hide != nil && hide(e.key)) || fn(e.key, e.value) })
	return nil
}

// Indexes is the state machine's secondary indexes: what Indexes()
// returns, a view with the index operations (set, wait for, scan).
type Indexes struct{ f *FSM }

// Indexes is f's secondary indexes.
func (f *FSM) Indexes() Indexes { return Indexes{f} }

// Set makes every region keep the secondary indexes defs names for
// it (by region name) and keeps them in step with every later write. It
// returns at once: an index over a small region is built before it
// returns, a larger one in the background without blocking writes
// (package indexset), and until it is installed IndexScan reports it missing,
// so queries scan. Indexes already installed or being built for the same
// definition are kept, so calling it again with the same definitions costs
// little and restarts nothing. WaitIndexes waits for the builds. version
// is the caller's label for this set of definitions (IndexVersion returns
// it). Indexes are derived from the entries, so they are neither
// replicated nor snapshotted: each replica builds its own, and Restore
// rebuilds them.
func (ix Indexes) Set(version uint64, defs map[string][]index.Def) {
	f := ix.f
	f.mu.Lock()
	defer f.mu.Unlock()
	f.st.indexDefs = defs
	f.st.defineIndexes(&f.mu, f.buildHook)
	f.indexVersion = version
}

// Version returns the version of the last Set: the definitions
// this FSM maintains, whose indexes may still be building (WaitIndexes).
func (ix Indexes) Version() uint64 {
	f := ix.f
	f.mu.RLock()
	defer f.mu.RUnlock()
	return f.indexVersion
}

// Wait blocks until no index of this FSM is being built (including
// builds started while it waits), or ctx ends; then it returns an error
// wrapping ctx.Err(). After it returns nil every index SetIndexes defined
// before the call is installed, unless a later call changed it.
func (ix Indexes) Wait(ctx context.Context) error {
	f := ix.f
	for {
		var pending []<-chan struct{}
		f.mu.RLock()
		for _, r := range f.st.regions {
			pending = r.indexes.Pending(pending)
		}
		f.mu.RUnlock()
		if len(pending) == 0 {
			return nil
		}
		for _, done := range pending {
			select {
			case <-done:
			case <-ctx.Done():
				return fmt.Errorf("fsm: wait for %d index builds: %w", len(pending), ctx.Err())
			}
		}
	}
}

// Scan calls fn with every entry whose indexed value lies in one of
// the ranges, in index order, each entry once, until fn returns false. ok
// is false when the region has no such index here (or it is still being
// built) or a bound is not a scalar: the caller scans the region instead. Like Scan it runs fn over
// copy-on-write clones, without any lock held.
func (ix Indexes) Scan(name string, id uint64, indexName string, ranges []index.Range, fn func(key string, value json.RawMessage) bool) (ok bool, err error) {
	f := ix.f
	f.mu.Lock()
	r, err := f.st.view(name, id)
	if err != nil || r == nil {
		f.mu.Unlock()
		return err == nil, err
	}
	x, found := r.indexes.Index(indexName)
	if !found {
		f.mu.Unlock()
		return false, nil
	}
	x = x.Clone()
	entries := r.entries.Clone()
	now, hide := f.st.readNow(), f.st.own.hidden()
	f.mu.Unlock()
	return x.Scan(ranges, func(key string) bool {
		e, ok := entries.Get(entry{key: key})
		if !ok || e.expired(now) || (hide != nil && hide(key)) {
			return true
		}
		return fn(key, e.value)
	}), nil
}

// Len returns how many entries an index of the region holds here, -1
// when there is no such index or it is still being built.
func (ix Indexes) Len(name string, id uint64, indexName string) int {
	f := ix.f
	f.mu.RLock()
	defer f.mu.RUnlock()
	r, err := f.st.view(name, id)
	if err != nil || r == nil {
		return -1
	}
	x, ok := r.indexes.Index(indexName)
	if !ok {
		return -1
	}
	return x.Len()
}
