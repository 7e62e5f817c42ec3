package fsm

import (
	"encoding/json"
	"fmt"

	"github.com/kvnode/kvnode/fsm/history"
	"github.com/kvnode/kvnode/region"
)

// Test accessors of state the FSM does not export.

// nextDeadline is the earliest entry deadline in the group.
func nextDeadline(f *FSM) (uint64, bool) {
	f.mu.RLock()
	defer f.mu.RUnlock()
	next, ok := uint64(0), false
	for _, r := range f.st.regions {
		if !r.mayExpire() {
			continue
		}
		if d, _ := r.expiry.Min(); !ok || d.at < next {
			next, ok = d.at, true
		}
	}
	return next, ok
}

// ttlOf is a group-0 region's default time-to-live in milliseconds.
func ttlOf(f *FSM, name string) (uint64, error) {
	f.mu.RLock()
	defer f.mu.RUnlock()
	r, ok := f.st.regions[name]
	if !ok {
		return 0, fmt.Errorf("region %q: %w", name, region.ErrRegionNotFound)
	}
	return r.ttl, nil
}

// capture is a watch's start: the entries of a Freeze and its position.
func capture(f *FSM, name string, id uint64, fn func(key string, value json.RawMessage) error) (history.Pos, error) {
	z, err := f.Freeze(name, id)
	if err != nil {
		return history.Pos{}, err
	}
	cur, buf := z.Cursor(), make([]region.Entry, 64)
	for n := cur.Read(buf); n > 0; n = cur.Read(buf) {
		for _, e := range buf[:n] {
			if err := fn(e.Key, e.Value); err != nil {
				return z.Position(), err
			}
		}
	}
	return z.Position(), nil
}
