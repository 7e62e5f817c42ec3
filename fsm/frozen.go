package fsm

import (
	"github.com/google/btree"
	"github.com/kvnode/kvnode/fsm/history"
	"github.com/kvnode/kvnode/region"
)

// Frozen is a region's entries as of one moment: a copy-on-write clone of
// its B-tree. Taking it costs O(1) and copies nothing; writes applied later
// copy the tree nodes they touch, so the clone never changes and may be read
// for as long as a listing takes, without any lock. It is what region
// listings stream from: however large the region, reading it allocates
// nothing per entry (values are shared, and never modified in place).
//
// Entries past their deadline at the moment of the Freeze are left out, and
// so are those of a bucket being imported (the source serves it until the
// switch), so a listing agrees with the reads. Position is the change history's
// position right after the frozen state: a watch's initial results are a
// Frozen, and its changes start there (no gap, no duplicate).
type Frozen struct {
	t    *btree.BTreeG[entry]  // nil: an empty region
	now  uint64                // deadlines not after it are expired (reads)
	hide func(key string) bool // buckets being imported (nil: none)
	pos  history.Pos
}

// Position is the change history's position right after the state.
func (z *Frozen) Position() history.Pos { return z.pos }

// Freeze returns the region's entries as of now. Errors are those of the
// other entry reads (see List): a missing or destroyed region.
func (f *FSM) Freeze(name string, id uint64) (*Frozen, error) {
	// Clone marks the shared nodes copy-on-write in the original tree as
	// well, so it needs the write lock, like Scan.
	f.mu.Lock()
	defer f.mu.Unlock()
	r, err := f.st.view(name, id)
	if err != nil {
		return nil, err
	}
	z := &Frozen{now: f.st.readNow(), hide: f.st.own.hidden(), pos: history.Pos{Index: f.applied.Load() + 1}}
	if r != nil {
		z.t = r.entries.Clone()
	}
	return z, nil
}

// Len is the number of entries, expired ones included (an upper bound).
func (z *Frozen) Len() int {
	if z.t == nil {
		return 0
	}
	return z.t.Len()
}

// Cursor returns a cursor at the first entry.
func (z *Frozen) Cursor() *Cursor { return &Cursor{t: z.t, now: z.now, hide: z.hide} }

// Cursor reads a Frozen in ascending key order, a batch at a time. Each
// Read seeks past the last key it returned (O(log n)), so a cursor holds no
// goroutine and needs no closing: dropping it is enough.
type Cursor struct {
	t       *btree.BTreeG[entry]
	now     uint64
	hide    func(key string) bool
	last    string
	started bool
	done    bool
}

// Read fills dst with the next entries and returns how many it filled; 0
// means the end (or an empty dst). The values are shared with the state
// machine: do not modify them.
func (c *Cursor) Read(dst []region.Entry) int {
	if c.done || c.t == nil || len(dst) == 0 {
		return 0
	}
	n := 0
	fill := func(e entry) bool {
		if c.started && e.key == c.last {
			return true // the entry the previous Read ended with
		}
		if e.expired(c.now) || c.hide != nil && c.hide(e.key) {
			return true
		}
		dst[n] = region.Entry{Key: e.key, Value: e.value}
		n++
		return n < len(dst)
	}
	if c.started {
		c.t.AscendGreaterOrEqual(entry{key: c.last}, fill)
	} else {
		c.t.Ascend(fill)
	}
	if n == 0 {
		c.done = true
		return 0
	}
	c.started, c.last = true, dst[n-1].Key
	return n
}
