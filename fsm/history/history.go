// Package history is a Raft group's change history: the bounded ring of
// the newest change events its state machine applied (package fsm adds
// them as it applies entries), which watches read and wait on.
//
// Events are part of the replicated state: fsm decides them in Apply, so
// every replica holds the same events at the same positions, and
// snapshots carry the ring, so a restarted replica or one rebuilt from a
// snapshot can resume a watch from the same positions too. How many
// events a replica keeps is its own choice (fsm.Options.History).
//
// A Log has its own lock: watchers read it without contending with the
// state machine's lock, which Apply holds for whole batches.
//
// It imports nothing of kvnode but region, and must not import fsm, store,
// rest, raft, memberlist or Echo.
package history

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"sync"

	"github.com/kvnode/kvnode/region"
)

// Default is how many events a Log keeps when told 0.
const Default = 10_000

// Pos is a position in a group's stream of events: every event of the
// entries before Index, and the first N events of entry Index. An event's
// own position (N counts from 1) is the position right after it. Pos{i+1, 0}
// is the position after everything entry i did.
type Pos struct {
	Index uint64 `json:"index"`
	N     uint32 `json:"n"`
}

// Less orders positions.
func (p Pos) Less(q Pos) bool { return p.Index < q.Index || (p.Index == q.Index && p.N < q.N) }

// Event is one change of a region's entries in the group.
type Event struct {
	Pos      Pos              `json:"pos"`
	Type     region.EventType `json:"type"`
	Region   string           `json:"region"`
	RegionID uint64           `json:"regionId"` // the region's id: tells incarnations apart
	Key      string           `json:"key,omitempty"`
	Value    json.RawMessage  `json:"value,omitempty"`
	Old      json.RawMessage  `json:"old,omitempty"`
}

// ErrGone: the position asked for is older than the history kept.
// GoneError says which is the oldest still available.
var ErrGone = errors.New("history: position older than the history kept")

// GoneError is a position before Oldest, the floor of the history.
type GoneError struct{ Asked, Oldest Pos }

func (e *GoneError) Error() string {
	return fmt.Sprintf("history: events after %d.%d are no longer kept; the oldest position still available is %d.%d", e.Asked.Index, e.Asked.N, e.Oldest.Index, e.Oldest.N)
}

func (e *GoneError) Unwrap() error { return ErrGone }

// Log is the ring of a group's newest events. The state machine calls
// Begin, Add and Applied as it applies entries (from one goroutine), and
// Reset when it restores a snapshot; any goroutine may read.
type Log struct {
	mu    sync.RWMutex
	buf   []Event // ring storage, len == capacity
	start int     // index in buf of the oldest event
	n     int     // events held
	// floor is the position of the newest event dropped (or where the
	// history began): every event after it is held.
	floor Pos
	// cur is the position being filled: the entry being applied and how
	// many events it made so far.
	cur Pos
	// applied is the index of the last entry applied.
	applied uint64
	// wake, under wakeMu, is closed and cleared by the next Applied or
	// Reset: nil while nobody waits. A reader takes it while it holds mu
	// for reading, so the Applied that follows (which needs mu) closes it.
	wakeMu sync.Mutex
	wake   chan struct{}
	// stopped is closed by Stop, stopErr says why: the state machine
	// halted.
	stopped  chan struct{}
	stopOnce sync.Once
	stopErr  error
}

// New returns an empty log keeping capacity events (0: Default).
func New(capacity int) *Log {
	if capacity <= 0 {
		capacity = Default
	}
	return &Log{buf: make([]Event, capacity), stopped: make(chan struct{})}
}

// Stop wakes every reader for good with err: the state machine halted,
// and no event will follow.
func (l *Log) Stop(err error) {
	l.stopOnce.Do(func() { l.stopErr = err; close(l.stopped) })
}

func (l *Log) at(i int) *Event { return &l.buf[(l.start+i)%len(l.buf)] }

// Begin starts the events of log entry index.
func (l *Log) Begin(index uint64) {
	l.mu.Lock()
	l.cur = Pos{Index: index}
	l.mu.Unlock()
}

// Add appends an event of the current entry (its Pos is set here),
// dropping the oldest when full.
func (l *Log) Add(e Event) {
	l.mu.Lock()
	l.cur.N++
	e.Pos = l.cur
	if l.n == len(l.buf) {
		l.floor = l.buf[l.start].Pos
		l.buf[l.start] = Event{}
		l.start = (l.start + 1) % len(l.buf)
		l.n--
	}
	l.buf[(l.start+l.n)%len(l.buf)] = e
	l.n++
	l.mu.Unlock()
}

// Applied records that every entry up to index is applied and wakes the
// readers waiting for events.
func (l *Log) Applied(index uint64) {
	l.mu.Lock()
	l.applied = index
	l.mu.Unlock()
	l.wakeAll()
}

// wakeAll wakes every reader waiting for events.
func (l *Log) wakeAll() {
	l.wakeMu.Lock()
	if l.wake != nil {
		close(l.wake)
		l.wake = nil
	}
	l.wakeMu.Unlock()
}

// Position is the position after every entry applied.
func (l *Log) Position() Pos {
	l.mu.RLock()
	defer l.mu.RUnlock()
	return Pos{Index: l.applied + 1}
}

// Floor is the oldest position a reader may still start after.
func (l *Log) Floor() Pos {
	l.mu.RLock()
	defer l.mu.RUnlock()
	return l.floor
}

// search returns how many events held are at or before p.
func (l *Log) search(p Pos) int {
	return sort.Search(l.n, func(i int) bool { return p.Less(l.at(i).Pos) })
}

// Batch is what Events returns.
type Batch struct {
	Events []Event
	// Next is the position to ask from next time: after the last event
	// looked at, or, when none was left, after everything applied.
	Next Pos
	// Behind is how many events of the group (of any region) are held
	// after Next: a reader that keeps falling behind is too slow.
	Behind int
}

// Events returns up to max events of region name after position after,
// in order, skipping other regions' events (they still move Next and
// count in Behind) but not fences, which are every region's. With nothing after it, it waits until an entry is
// applied, ctx ends (ctx's error, with the Batch so far) or the log is
// stopped (the error given to Stop). A position older than the history kept is a
// *GoneError.
func (l *Log) Events(ctx context.Context, name string, after Pos, max int) (Batch, error) {
	return l.EventsInto(ctx, nil, name, after, max)
}

// EventsInto is Events returning the events in buf's storage when they
// fit (a reader that is done with its last batch passes it back), so that
// a reader of a busy group does not allocate a batch each time.
func (l *Log) EventsInto(ctx context.Context, buf []Event, name string, after Pos, max int) (Batch, error) {
	max = ensurePositive(max)
	for {
		l.mu.RLock()
		if floor := l.floor; after.Less(floor) {
			l.mu.RUnlock()
			return Batch{}, &GoneError{Asked: after, Oldest: floor}
		}
		b := Batch{Next: after}
		first := l.search(after)
		// Find the window first and copy it into one exact allocation:
		// every watcher of the group reads each event, so growing the
		// slice event by event was a large share of a busy member's work.
		i, matched := first, 0
		for ; i < l.n && matched < max; i++ {
			if e := l.at(i); e.Region == name || e.Type == Fence {
				matched++
			}
		}
		switch {
		case matched > cap(buf):
			b.Events = make([]Event, 0, matched)
		case matched > 0:
			b.Events = buf[:0]
		}
		for j := first; j < i; j++ {
			e := l.at(j)
			b.Next = e.Pos
			if e.Region == name || e.Type == Fence {
				b.Events = append(b.Events, *e)
			}
		}
		b.Behind = l.n - i
		if p := (Pos{Index: l.applied + 1}); b.Behind == 0 && b.Next.Less(p) {
			b.Next = p
		}
		if len(b.Events) > 0 || b.Next != after {
			l.mu.RUnlock()
			return b, nil
		}
		l.wakeMu.Lock()
		if l.wake == nil {
			l.wake = make(chan struct{})
		}
		wake := l.wake
		l.wakeMu.Unlock()
		l.mu.RUnlock()
		select {
		case <-wake:
		case <-l.stopped:
			return b, l.stopErr
		case <-ctx.Done():
			return b, ctx.Err()
		}
	}
}

func ensurePositive(n int) int {
	if n < 1 {
		return 1
	}
	return n
}

// Snapshot returns the floor and a copy of every event held, oldest first.
func (l *Log) Snapshot() (Pos, []Event) {
	l.mu.RLock()
	defer l.mu.RUnlock()
	out := make([]Event, l.n)
	for i := range out {
		out[i] = *l.at(i)
	}
	return l.floor, out
}

// Reset replaces the history with a snapshot's (events oldest first,
// after floor) as of applied index applied, keeping the newest that fit,
// and wakes every reader.
func (l *Log) Reset(floor Pos, events []Event, applied uint64) {
	l.mu.Lock()
	keep := min(len(events), len(l.buf))
	if keep < len(events) {
		floor = events[len(events)-keep-1].Pos
	}
	clear(l.buf)
	copy(l.buf, events[len(events)-keep:])
	l.start, l.n, l.floor, l.applied = 0, keep, floor, applied
	l.mu.Unlock()
	l.wakeAll()
}

// Since calls fn with every event held after position after, of every
// region, oldest first, until fn returns false; it does not wait for
// more. A position older than the history kept is a *GoneError. (A bucket
// move reads which keys changed while it copied: store/rebalance.)
func (l *Log) Since(after Pos, fn func(Event) bool) error {
	l.mu.RLock()
	defer l.mu.RUnlock()
	if after.Less(l.floor) {
		return &GoneError{Asked: after, Oldest: l.floor}
	}
	for i := l.search(after); i < l.n; i++ {
		if !fn(*l.at(i)) {
			return nil
		}
	}
	return nil
}
