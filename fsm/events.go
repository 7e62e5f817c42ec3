package fsm

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"

	"github.com/google/btree"
	"github.com/kvnode/kvnode/region"
)

// Change streams. Every change Apply makes to an entry is also an Event in
// the group's history: a bounded ring of the newest events, part of the
// replicated state (snapshots carry it, so every replica, a restarted one
// and one rebuilt from a snapshot alike, holds the same history and can
// resume a watch from the same tokens). Events are decided by Apply like
// everything else, so they are identical on every replica, at the same
// positions.

// DefaultHistory is how many events a group keeps when Options.History is 0.
const DefaultHistory = 10_000

// Pos is a position in a group's stream of events: every event of the
// entries before Index, and the first N events of entry Index. An event's
// own position (N counts from 1) is the position right after it. Pos{i+1, 0}
// is the position after everything entry i did.
type Pos struct {
	Index uint64
	N     uint32
}

// Less orders positions.
func (p Pos) Less(q Pos) bool { return p.Index < q.Index || (p.Index == q.Index && p.N < q.N) }

// Event is one change of a region's entries in this group.
type Event struct {
	Pos      Pos
	Type     region.EventType
	Region   string
	RegionID uint64 // the region's id (see DESIGN.md): tells incarnations apart
	Key      string // empty for a clear
	Value    json.RawMessage
	Old      json.RawMessage
}

// ErrHistoryGone: the position asked for is older than the history kept.
// HistoryGoneError says which is the oldest still available.
var ErrHistoryGone = errors.New("fsm: position older than the history kept")

// HistoryGoneError is a position before Oldest, the floor of the history.
type HistoryGoneError struct{ Asked, Oldest Pos }

func (e *HistoryGoneError) Error() string {
	return fmt.Sprintf("fsm: events after %d.%d are no longer kept; the oldest position still available is %d.%d", e.Asked.Index, e.Asked.N, e.Oldest.Index, e.Oldest.N)
}

func (e *HistoryGoneError) Unwrap() error { return ErrHistoryGone }

// history is the ring of the newest events. Every event after floor is in
// it; floor is the position of the newest event dropped (or where the
// history began).
type history struct {
	buf   []Event // ring storage, len == capacity
	start int     // index in buf of the oldest event
	n     int     // events held
	floor Pos
	// cur is the position being filled: the entry Apply is applying and
	// how many events it has made so far.
	cur Pos
}

func newHistory(capacity int) *history {
	if capacity <= 0 {
		capacity = DefaultHistory
	}
	return &history{buf: make([]Event, capacity)}
}

// at returns the i-th oldest event held.
func (h *history) at(i int) *Event { return &h.buf[(h.start+i)%len(h.buf)] }

// begin starts the events of log entry index.
func (h *history) begin(index uint64) { h.cur = Pos{Index: index} }

// add appends an event of the current entry, dropping the oldest when full.
func (h *history) add(e Event) {
	h.cur.N++
	e.Pos = h.cur
	if h.n == len(h.buf) {
		h.floor = h.buf[h.start].Pos
		h.buf[h.start] = Event{}
		h.start = (h.start + 1) % len(h.buf)
		h.n--
	}
	h.buf[(h.start+h.n)%len(h.buf)] = e
	h.n++
}

// search returns how many events held are at or before p.
func (h *history) search(p Pos) int {
	return sort.Search(h.n, func(i int) bool { return p.Less(h.at(i).Pos) })
}

// resize keeps at most capacity events (the newest), moving floor up.
func (h *history) resize(capacity int) {
	if capacity <= 0 {
		capacity = DefaultHistory
	}
	if capacity == len(h.buf) {
		return
	}
	keep := min(h.n, capacity)
	if keep < h.n {
		h.floor = h.at(h.n - keep - 1).Pos
	}
	buf := make([]Event, capacity)
	for i := 0; i < keep; i++ {
		buf[i] = *h.at(h.n - keep + i)
	}
	h.buf, h.start, h.n = buf, 0, keep
}

// events returns a copy of every event held, oldest first.
func (h *history) events() []Event {
	out := make([]Event, h.n)
	for i := range out {
		out[i] = *h.at(i)
	}
	return out
}

// Position is the position after every event this replica has applied.
func (f *FSM) Position() Pos {
	f.mu.RLock()
	defer f.mu.RUnlock()
	return f.positionLocked()
}

func (f *FSM) positionLocked() Pos { return Pos{Index: f.applied.index.Load() + 1} }

// HistoryFloor is the oldest position a watch may still resume from.
func (f *FSM) HistoryFloor() Pos {
	f.mu.RLock()
	defer f.mu.RUnlock()
	return f.st.events.floor
}

// Batch is what Events returns: the events found, the position after
// them, and how far behind the newest event the reader is.
type Batch struct {
	Events []Event
	// Next is the position to ask from next time: after the last event
	// returned, or, when none was left, after everything applied.
	Next Pos
	// Behind is how many events of the group (of any region) are held
	// after Next: a reader that keeps falling behind is too slow.
	Behind int
}

// Events returns up to max events of region name after position after, in
// order, skipping other regions' events (they still count in Behind). With
// none after it, it waits until there are, ctx ends or the state machine
// halts. A position older than the history kept is a *HistoryGoneError.
func (f *FSM) Events(ctx context.Context, name string, after Pos, max int) (Batch, error) {
	for {
		f.mu.RLock()
		h := f.st.events
		if after.Less(h.floor) {
			f.mu.RUnlock()
			return Batch{}, &HistoryGoneError{Asked: after, Oldest: h.floor}
		}
		b := Batch{Next: after}
		i := h.search(after)
		for ; i < h.n && len(b.Events) < max; i++ {
			e := h.at(i)
			b.Next = e.Pos
			if e.Region == name {
				b.Events = append(b.Events, *e)
			}
		}
		b.Behind = h.n - i
		if b.Behind == 0 {
			if p := f.positionLocked(); b.Next.Less(p) {
				b.Next = p
			}
		}
		if len(b.Events) > 0 || b.Next != after {
			f.mu.RUnlock()
			return b, nil
		}
		// Nothing new: wait for the next apply. The channel is taken
		// while the read lock keeps Apply out, so no signal is missed.
		wake := f.waiter()
		f.mu.RUnlock()
		select {
		case <-wake:
		case <-f.stopped:
			return Batch{}, f.Halted()
		case <-ctx.Done():
			return b, ctx.Err()
		}
	}
}

// waiter returns the channel the next signal closes.
func (f *FSM) waiter() <-chan struct{} {
	f.wakeMu.Lock()
	defer f.wakeMu.Unlock()
	if f.wake == nil {
		f.wake = make(chan struct{})
	}
	return f.wake
}

// signal wakes every Events call waiting for new events. Apply and Restore
// call it after they release the write lock; it costs nothing while nobody
// waits.
func (f *FSM) signal() {
	f.wakeMu.Lock()
	if f.wake != nil {
		close(f.wake)
		f.wake = nil
	}
	f.wakeMu.Unlock()
}

// Capture calls fn with every live entry of region name (ID id, as the
// reads take it) in key order, and returns the position right after the
// state it saw: a watch that starts there misses nothing and repeats
// nothing. Like Scan, fn runs on a copy-on-write clone, without any lock.
func (f *FSM) Capture(name string, id uint64, fn func(key string, value json.RawMessage) error) (Pos, error) {
	f.mu.Lock()
	r, err := f.st.view(name, id)
	pos := f.positionLocked()
	var t *btree.BTreeG[entry]
	if r != nil {
		t = r.entries.Clone()
	}
	now := f.nowLocked()
	f.mu.Unlock()
	if err != nil || t == nil {
		return pos, err
	}
	t.Ascend(func(e entry) bool {
		if e.expired(now) {
			return true
		}
		err = fn(e.key, e.value)
		return err == nil
	})
	return pos, err
}
