package region

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"
)

// EventType says what happened to an entry (or a region) in a change
// stream: GET /kv/v1/watch sends it as the SSE event name.
type EventType string

// The event types of a watch. Create, update, destroy, expire and clear are
// changes decided in a Raft group's log; initial is a current entry sent
// before the changes (?initial=true).
const (
	EventCreate  EventType = "create"  // a key that was absent now holds Value
	EventUpdate  EventType = "update"  // a key's value went from Old to Value
	EventDestroy EventType = "destroy" // a key holding Old was deleted
	EventExpire  EventType = "expire"  // a key holding Old outlived its time-to-live and was removed
	EventClear   EventType = "clear"   // every entry of the region (or of one partition group's part) was removed
	EventInitial EventType = "initial" // a current entry, sent before the changes
)

// Event is one change of a region, in the order its Raft group committed
// it. Values are the exact stored bytes; callers must not modify them.
type Event struct {
	Type EventType
	// Key is the entry's key; empty for EventClear.
	Key string
	// Value is the entry's new value (create, update, initial).
	Value json.RawMessage
	// Old is the entry's value before the change (update, destroy,
	// expire): what a continuous query needs to tell whether the entry
	// matched before.
	Old json.RawMessage
	// Token is the resume token after this event: a watch opened with it
	// (From) receives every event after this one, exactly once, on any
	// member. It is opaque to clients.
	Token string
}

// WatchOptions open a watch.
type WatchOptions struct {
	// From is a resume token (an Event's Token, or Watch.Token): the
	// watch sends every event after it. Empty: from now.
	From string
	// Initial, when set, is called with every current entry of the region,
	// in key order within each partition group, before Watch returns; the
	// watch's events then start exactly after the state Initial saw: no
	// gap, no duplicate. It is not called with From set. An error from it
	// ends the watch before it starts.
	Initial func(key string, value json.RawMessage) error
	// Buffer is how many events of its groups the watch may fall behind
	// the newest before Next gives up with ErrSlowConsumer (0: a default).
	Buffer int
}

// Watch is an open stream of one region's changes on this member.
// Its methods are called from one goroutine.
type Watch interface {
	// Next blocks until at least one event is available, then returns
	// those there are, in commit order for each key. It returns ctx's
	// error when ctx ends, ErrSlowConsumer when the watch fell more than
	// its buffer behind (resume from Token, which may still be within
	// the history kept), and an error wrapping ErrRegionNotFound when the
	// region was destroyed: the watch is over.
	Next(ctx context.Context) ([]Event, error)
	// Token is the position after every event Next returned so far, in
	// every group of the region: what a heartbeat or a disconnect hands
	// the client to resume from.
	Token() string
	// Close releases the watch.
	Close()
}

// ErrGone: a resume token is older than the history kept (410 Gone, as
// etcd answers a compacted revision). See GoneError for the oldest token
// still available.
var ErrGone = errors.New("the token is older than the history kept")

// ErrSlowConsumer: a watcher fell further behind the newest events than
// its buffer allows; it is disconnected rather than buffered without
// bound.
var ErrSlowConsumer = errors.New("the watcher fell too far behind")

// GoneError is a resume token too old for the history kept; Oldest is the
// oldest token a watch may still resume from.
type GoneError struct {
	Token  string
	Oldest string
}

func (e *GoneError) Error() string {
	return fmt.Sprintf("%v: token %q; the oldest token still available is %q (or watch without one, from now)", ErrGone, e.Token, e.Oldest)
}

func (e *GoneError) Unwrap() error { return ErrGone }

// TTL is a write's entry time-to-live. The zero value means "the region's
// entryTimeToLive"; Set with Duration 0 means "never expires", whatever the
// region's default.
type TTL struct {
	Duration time.Duration
	Set      bool
}

// MaxTTL is the longest entry time-to-live kvnode accepts, as a region's
// default or a write's own: ten years, longer than any cache needs, short
// enough that no deadline (unix milliseconds) comes near overflowing.
const MaxTTL = 10 * 365 * 24 * time.Hour
