package fsm

import (
	"encoding/json"
	"fmt"
	"sort"

	"github.com/kvnode/kvnode/region"
)

// Local reads. They see this replica's state as of its AppliedIndex, with no
// consistency barrier (the store adds one for linearizable reads), and are
// safe to call concurrently with Apply and Restore.
//
// Returned values share memory with the state machine: callers must not
// modify them. (Values are never modified in place, so they stay valid.)

// Regions lists every region, sorted by name.
func (f *FSM) Regions() []region.Info {
	f.mu.RLock()
	out := make([]region.Info, 0, len(f.st.regions))
	for name, r := range f.st.regions {
		out = append(out, region.Info{Name: name, Kind: r.kind})
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
	return region.Info{Name: name, Kind: r.kind}, true
}

// Get returns the value under key. Errors wrap region.ErrRegionNotFound or
// region.ErrKeyNotFound.
func (f *FSM) Get(name, key string) (json.RawMessage, error) {
	f.mu.RLock()
	defer f.mu.RUnlock()
	r, err := f.st.region(name)
	if err != nil {
		return nil, err
	}
	v, ok := r.get(key)
	if !ok {
		return nil, fmt.Errorf("region %q: key %q: %w", name, key, region.ErrKeyNotFound)
	}
	return v, nil
}

// GetMany returns the values of keys, aligned with keys: nil where a key is
// missing. The only error is a missing region.
func (f *FSM) GetMany(name string, keys []string) ([]json.RawMessage, error) {
	f.mu.RLock()
	defer f.mu.RUnlock()
	r, err := f.st.region(name)
	if err != nil {
		return nil, err
	}
	out := make([]json.RawMessage, len(keys))
	for i, k := range keys {
		out[i], _ = r.get(k)
	}
	return out, nil
}

// List returns up to limit entries in ascending key order (byte-wise);
// limit < 0 means all, 0 none.
func (f *FSM) List(name string, limit int) ([]region.Entry, error) {
	f.mu.RLock()
	defer f.mu.RUnlock()
	r, err := f.st.region(name)
	if err != nil {
		return nil, err
	}
	n := r.entries.Len()
	if limit >= 0 && limit < n {
		n = limit
	}
	out := make([]region.Entry, 0, n)
	if n == 0 {
		return out, nil
	}
	r.entries.Ascend(func(e entry) bool {
		out = append(out, region.Entry{Key: e.key, Value: e.value})
		return len(out) < n
	})
	return out, nil
}

// Keys returns every key of the region in ascending order.
func (f *FSM) Keys(name string) ([]string, error) {
	f.mu.RLock()
	defer f.mu.RUnlock()
	r, err := f.st.region(name)
	if err != nil {
		return nil, err
	}
	out := make([]string, 0, r.entries.Len())
	r.entries.Ascend(func(e entry) bool {
		out = append(out, e.key)
		return true
	})
	return out, nil
}

// Count returns the number of entries in the region.
func (f *FSM) Count(name string) (int, error) {
	f.mu.RLock()
	defer f.mu.RUnlock()
	r, err := f.st.region(name)
	if err != nil {
		return 0, err
	}
	return r.entries.Len(), nil
}
