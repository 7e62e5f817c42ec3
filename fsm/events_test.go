package fsm

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"math/rand/v2"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/hashicorp/raft"

	"github.com/kvnode/kvnode/fsm/codec"
	"github.com/kvnode/kvnode/fsm/history"
	"github.com/kvnode/kvnode/region"
)

// Change events as a watcher sees them through Events.

// evs renders events one per string, so a failure reads as a diff of
// lines: "3.1 update r#1 a={"n":2} old={"n":1}" (region r, id 1). Long
// values are shortened to their length and a hash.
func evs(events []history.Event) []string {
	out := make([]string, len(events))
	for i, e := range events {
		out[i] = fmt.Sprintf("%d.%d %s %s#%d %s=%s old=%s", e.Pos.Index, e.Pos.N, e.Type, e.Region, e.RegionID, e.Key, short(e.Value), short(e.Old))
	}
	return out
}

func short(v []byte) string {
	if len(v) <= 64 {
		return string(v)
	}
	return fmt.Sprintf("<%d bytes, crc %08x>", len(v), crc32.ChecksumIEEE(v))
}

// ev is the rendering of the event evs makes, for region r created at
// entry 1 (so its id is 1).
func ev(index uint64, n uint32, t region.EventType, key, value, old string) string {
	return fmt.Sprintf("%d.%d %s r#1 %s=%s old=%s", index, n, t, key, short([]byte(value)), short([]byte(old)))
}

// eventsAfter returns every event of region name after p that f holds,
// reading them in calls of at most max events as a watcher would, and
// checks that the reading ends at Position with no gap: each batch's Next
// is the position of its last event, or Position once none is left.
func eventsAfter(t *testing.T, f *FSM, name string, p history.Pos, max int) []history.Event {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var out []history.Event
	for end := f.History().Position(); p.Less(end); {
		b, err := f.History().Events(ctx, name, p, max)
		if err != nil {
			t.Fatalf("Events(%q, %d.%d, %d): %v", name, p.Index, p.N, max, err)
		}
		if len(b.Events) > max {
			t.Fatalf("Events(max %d) returned %d events", max, len(b.Events))
		}
		if !p.Less(b.Next) {
			t.Fatalf("Events(%q, %d.%d) did not move: Next %d.%d", name, p.Index, p.N, b.Next.Index, b.Next.N)
		}
		if k := len(b.Events); k > 0 && b.Events[k-1].Pos.Less(b.Next) && b.Next != end {
			t.Fatalf("Next %d.%d is past the last event returned (%d.%d) but not at the end %d.%d",
				b.Next.Index, b.Next.N, b.Events[k-1].Pos.Index, b.Events[k-1].Pos.N, end.Index, end.N)
		}
		out = append(out, b.Events...)
		p = b.Next
	}
	return out
}

// applied applies c and returns the events of region name it made.
func (n *node) applied(name string, c codec.Command) (*codec.Result, []string) {
	n.t.Helper()
	before := n.f.History().Position()
	res := n.apply(c)
	return res, evs(eventsAfter(n.t, n.f, name, before, 100))
}

func checkEvents(t *testing.T, what string, got, want []string) {
	t.Helper()
	if !slices.Equal(got, want) {
		t.Errorf("%s: events\n got %q\nwant %q", what, got, want)
	}
}

// TestEventsOfEachOp: every entry command reports exactly the changes it
// made, with the value written and the one replaced, at the entry's index
// numbered from 1; a refused command reports none.
func TestEventsOfEachOp(t *testing.T) {
	n := newNode(t)
	n.create("r", region.Replicate) // 1
	type step struct {
		what    string
		cmd     codec.Command
		refused error
		want    []string
	}
	put := func(kv ...string) codec.Command {
		return codec.Command{Op: codec.OpPut, Region: "r", Entries: entries(kv...)}
	}
	for _, s := range []step{
		{what: "put of a new key", cmd: put("a", `{"n":1}`),
			want: []string{ev(2, 1, region.EventCreate, "a", `{"n":1}`, "")}},
		{what: "put over it", cmd: put("a", `{"n":2}`),
			want: []string{ev(3, 1, region.EventUpdate, "a", `{"n":2}`, `{"n":1}`)}},
		{what: "put-all", cmd: put("b", `{"b":1}`, "a", `{"n":3}`, "c", `[1]`, "b", `{"b":2}`),
			want: []string{
				ev(4, 1, region.EventCreate, "b", `{"b":1}`, ""),
				ev(4, 2, region.EventUpdate, "a", `{"n":3}`, `{"n":2}`),
				ev(4, 3, region.EventCreate, "c", `[1]`, ""),
				ev(4, 4, region.EventUpdate, "b", `{"b":2}`, `{"b":1}`),
			}},
		{what: "put-if-absent of a new key", cmd: codec.Command{Op: codec.OpPutIfAbsent, Region: "r", Entries: entries("d", `"d"`)},
			want: []string{ev(5, 1, region.EventCreate, "d", `"d"`, "")}},
		{what: "put-if-absent of an existing key", cmd: codec.Command{Op: codec.OpPutIfAbsent, Region: "r", Entries: entries("d", `"x"`)},
			refused: region.ErrKeyExists},
		{what: "replace", cmd: codec.Command{Op: codec.OpReplace, Region: "r", Entries: entries("d", `"d2"`)},
			want: []string{ev(7, 1, region.EventUpdate, "d", `"d2"`, `"d"`)}},
		{what: "replace with a missing key", cmd: codec.Command{Op: codec.OpReplace, Region: "r", Entries: entries("d", `"d3"`, "zz", `1`)},
			refused: region.ErrKeyAbsent},
		{what: "cas", cmd: codec.Command{Op: codec.OpCAS, Region: "r", Pairs: []region.CASPair{{Key: "a", Old: []byte(`{ "n" : 3 }`), New: []byte(`{"n":4}`)}}},
			want: []string{ev(9, 1, region.EventUpdate, "a", `{"n":4}`, `{"n":3}`)}},
		{what: "cas with another old value", cmd: codec.Command{Op: codec.OpCAS, Region: "r", Pairs: []region.CASPair{{Key: "a", Old: []byte(`{"n":3}`), New: []byte(`{"n":5}`)}}},
			refused: region.ErrCASMismatch},
		{what: "delete", cmd: codec.Command{Op: codec.OpDelete, Region: "r", Keys: []string{"b", "c"}},
			want: []string{ev(11, 1, region.EventDestroy, "b", "", `{"b":2}`), ev(11, 2, region.EventDestroy, "c", "", `[1]`)}},
		{what: "delete of a missing key", cmd: codec.Command{Op: codec.OpDelete, Region: "r", Keys: []string{"a", "b"}},
			refused: region.ErrKeyNotFound},
		{what: "delete-if with another value", cmd: codec.Command{Op: codec.OpDeleteIf, Region: "r", Entries: entries("d", `"d"`)},
			refused: region.ErrCASMismatch},
		{what: "delete-if", cmd: codec.Command{Op: codec.OpDeleteIf, Region: "r", Entries: entries("d", `"d2"`)},
			want: []string{ev(14, 1, region.EventDestroy, "d", "", `"d2"`)}},
		{what: "put with an empty value", cmd: put("e", ""), refused: region.ErrInvalid},
		{what: "put to a missing region", cmd: codec.Command{Op: codec.OpPut, Region: "nope", Entries: entries("a", `1`)},
			refused: region.ErrRegionNotFound},
		{what: "clear", cmd: codec.Command{Op: codec.OpClear, Region: "r"},
			want: []string{ev(17, 1, region.EventClear, "", "", "")}},
		{what: "clear of an empty region", cmd: codec.Command{Op: codec.OpClear, Region: "r"},
			want: []string{ev(18, 1, region.EventClear, "", "", "")}},
	} {
		res, got := n.applied("r", s.cmd)
		if s.refused != nil && !errors.Is(res.Err, s.refused) {
			t.Errorf("%s: result %v, want %v", s.what, res.Err, s.refused)
		}
		if s.refused == nil && res.Err != nil {
			t.Errorf("%s: refused: %v", s.what, res.Err)
		}
		checkEvents(t, s.what, got, s.want)
	}

	// A generated key is reported under the key the result names.
	res, got := n.applied("r", codec.Command{Op: codec.OpPutIfAbsent, Region: "r", Entries: entries("", `{"g":1}`)})
	checkEvents(t, "put-if-absent with a generated key", got, []string{ev(19, 1, region.EventCreate, res.Key, `{"g":1}`, "")})
}

// TestEventsOfPartitionGroup: a partition group's events carry the
// region's id; clear-part is one clear event.
func TestEventsOfPartitionGroup(t *testing.T) {
	n := newNode(t)
	n.must(pput(7, "a", `1`, "b", `2`))
	_, got := n.applied("p", codec.Command{Op: codec.OpClearPart, Region: "p", RegionID: 7})
	if want := []string{"2.1 clear p#7 = old="}; !slices.Equal(got, want) {
		t.Errorf("clear-part: events %q, want %q", got, want)
	}
	all := evs(eventsAfter(t, n.f, "p", history.Pos{}, 10))
	if want := []string{"1.1 create p#7 a=1 old=", "1.2 create p#7 b=2 old=", "2.1 clear p#7 = old="}; !slices.Equal(all, want) {
		t.Errorf("history of p: %q, want %q", all, want)
	}
}

// TestEventsOfBatchAndStagedCommands: a batch entry numbers the events of
// all its sub-commands in one sequence (a refused one adds none); a staged
// command's chunks make no event and its commit makes the command's, at
// the commit's index.
func TestEventsOfBatchAndStagedCommands(t *testing.T) {
	n := newNode(t)
	n.create("r", region.Replicate)     // 1
	n.create("other", region.Replicate) // 2
	n.put("r", "a", `1`)                // 3
	enc := func(c codec.Command) []byte { return c.Encode(nil) }
	before := n.f.History().Position()
	n.must(codec.Command{Op: codec.OpBatch, Batch: [][]byte{ // 4
		enc(codec.Command{Op: codec.OpPut, Region: "r", Entries: entries("b", `2`, "a", `3`)}),
		enc(codec.Command{Op: codec.OpReplace, Region: "r", Entries: entries("missing", `0`)}),
		enc(codec.Command{Op: codec.OpPut, Region: "other", Entries: entries("o", `0`)}),
		enc(codec.Command{Op: codec.OpDelete, Region: "r", Keys: []string{"b"}}),
	}})
	checkEvents(t, "batch", evs(eventsAfter(t, n.f, "r", before, 100)), []string{
		ev(4, 1, region.EventCreate, "b", `2`, ""),
		ev(4, 2, region.EventUpdate, "a", `3`, `1`),
		ev(4, 4, region.EventDestroy, "b", "", `2`),
	})
	if got := evs(eventsAfter(t, n.f, "other", before, 100)); !slices.Equal(got, []string{"4.3 create other#2 o=0 old="}) {
		t.Errorf("batch, region other: events %q, want the create at 4.3", got)
	}

	cmd, v := bigPut("r", "big", codec.StageChunkBytes+10)
	staged := codec.StageCommand(9, cmd.Encode(nil))
	before = n.f.History().Position()
	n.applyRaw(staged[:len(staged)-1]...)
	if got := eventsAfter(t, n.f, "r", before, 100); len(got) != 0 {
		t.Errorf("stage chunks made events %q, want none", evs(got))
	}
	if res := n.applyRaw(staged[len(staged)-1]); res.Err != nil {
		t.Fatalf("commit-staged: %v", res.Err)
	}
	checkEvents(t, "staged command", evs(eventsAfter(t, n.f, "r", before, 100)),
		[]string{ev(n.index, 1, region.EventCreate, "big", string(v), "")})
}

// TestEventsSkipOtherRegions: Events(name) returns only name's events but
// its Next moves past the others' too, so the watcher never reads them
// again; with max events it stops after max of its own region.
func TestEventsSkipOtherRegions(t *testing.T) {
	n := newNode(t)
	n.create("r", region.Replicate)     // 1
	n.create("other", region.Replicate) // 2
	n.put("other", "x", `1`)            // 3
	n.put("r", "a", `1`, "b", `2`)      // 4
	n.put("other", "y", `1`, "z", `2`)  // 5
	ctx := context.Background()
	b, err := n.f.History().Events(ctx, "r", history.Pos{Index: 3}, 1)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := evs(b.Events), []string{ev(4, 1, region.EventCreate, "a", "1", "")}; !slices.Equal(got, want) || b.Next != (history.Pos{Index: 4, N: 1}) || b.Behind != 3 {
		t.Fatalf("Events(r, 3.0, max 1) = %q next %v behind %d, want %q next {4 1} behind 3", got, b.Next, b.Behind, want)
	}
	b, err = n.f.History().Events(ctx, "r", b.Next, 10)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := evs(b.Events), []string{ev(4, 2, region.EventCreate, "b", "2", "")}; !slices.Equal(got, want) || b.Next != n.f.History().Position() || b.Behind != 0 {
		t.Fatalf("Events(r, 4.1) = %q next %v behind %d, want %q next %v (past other's events) behind 0", got, b.Next, b.Behind, want, n.f.History().Position())
	}
	// Only other regions' events after the position: none returned, but
	// the position moves to the end.
	b, err = n.f.History().Events(ctx, "r", history.Pos{Index: 5}, 10)
	if err != nil || len(b.Events) != 0 || b.Next != n.f.History().Position() {
		t.Fatalf("Events(r, 5.0) = %q next %v, %v; want no event, next %v", evs(b.Events), b.Next, err, n.f.History().Position())
	}
}

// eventsCall runs Events in a goroutine.
type eventsCall struct {
	batch history.Batch
	err   error
}

func callEvents(ctx context.Context, f *FSM, name string, after history.Pos) <-chan eventsCall {
	done := make(chan eventsCall, 1)
	go func() {
		b, err := f.History().Events(ctx, name, after, 100)
		done <- eventsCall{b, err}
	}()
	return done
}

func receiveEvents(t *testing.T, done <-chan eventsCall, what string) eventsCall {
	t.Helper()
	select {
	case c := <-done:
		return c
	case <-time.After(10 * time.Second):
		t.Fatalf("%s: Events did not return within 10s", what)
		return eventsCall{}
	}
}

func stillWaitingEvents(t *testing.T, done <-chan eventsCall, what string) {
	t.Helper()
	select {
	case c := <-done:
		t.Fatalf("%s: Events returned early: %q, %v", what, evs(c.batch.Events), c.err)
	case <-time.After(20 * time.Millisecond):
	}
}

// TestEventsWaits: with nothing new, Events waits for the next apply, and
// ends with the context's error or the halt's.
func TestEventsWaits(t *testing.T) {
	n := newNode(t)
	n.create("r", region.Replicate)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()

	done := callEvents(ctx, n.f, "r", n.f.History().Position())
	stillWaitingEvents(t, done, "before any write")
	n.put("r", "a", `1`)
	c := receiveEvents(t, done, "after a put")
	if got, want := evs(c.batch.Events), []string{ev(2, 1, region.EventCreate, "a", "1", "")}; c.err != nil || !slices.Equal(got, want) {
		t.Fatalf("woken Events = %q, %v; want %q", got, c.err, want)
	}

	// An entry without events (a refused command) wakes it with no event
	// and the position after that entry.
	done = callEvents(ctx, n.f, "r", n.f.History().Position())
	stillWaitingEvents(t, done, "before a refused write")
	n.apply(codec.Command{Op: codec.OpDelete, Region: "r", Keys: []string{"missing"}})
	if c := receiveEvents(t, done, "after a refused write"); c.err != nil || len(c.batch.Events) != 0 || c.batch.Next != (history.Pos{Index: 4}) {
		t.Fatalf("Events after a refused write = %q next %v, %v; want none, next {4 0}", evs(c.batch.Events), c.batch.Next, c.err)
	}

	cctx, ccancel := context.WithCancel(ctx)
	done = callEvents(cctx, n.f, "r", n.f.History().Position())
	stillWaitingEvents(t, done, "before the cancel")
	ccancel()
	if c := receiveEvents(t, done, "after the cancel"); !errors.Is(c.err, context.Canceled) {
		t.Fatalf("Events after its context was cancelled: %v, want context.Canceled", c.err)
	}

	done = callEvents(ctx, n.f, "r", n.f.History().Position())
	stillWaitingEvents(t, done, "before the halt")
	n.index++
	n.f.Apply(&raft.Log{Index: n.index, Term: 1, Type: raft.LogCommand, Data: []byte{0xff}})
	c = receiveEvents(t, done, "after the halt")
	var h *HaltError
	if !errors.As(c.err, &h) || h.Index != n.index || !errors.Is(c.err, ErrHalted) {
		t.Fatalf("Events on a halted FSM: %v, want the HaltError of entry %d", c.err, n.index)
	}
}

// TestEventsWokenByRestore: a watcher waiting on a member that installs a
// snapshot from further on is told its position is gone when the
// snapshot's history does not reach back to it, and reads on from the
// snapshot's history when it does.
func TestEventsWokenByRestore(t *testing.T) {
	src := &node{t: t, f: New(Options{History: 2})}
	src.create("r", region.Replicate) // 1
	src.put("r", "a", `1`)            // 2
	far := persist(t, src.f)          // history 2.1, floor 0.0
	for i := range 3 {                // 3..5
		src.put("r", fmt.Sprint(i), `2`)
	}
	farther := persist(t, src.f) // history 4.1, 5.1, floor 3.1

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	lagging := newNode(t)
	lagging.create("r", region.Replicate) // 1
	done := callEvents(ctx, lagging.f, "r", lagging.f.History().Position())
	stillWaitingEvents(t, done, "before the restore")
	if err := restore(lagging.f, far); err != nil {
		t.Fatal(err)
	}
	if c := receiveEvents(t, done, "after a restore that keeps its position"); c.err != nil || !slices.Equal(evs(c.batch.Events), []string{ev(2, 1, region.EventCreate, "a", "1", "")}) {
		t.Fatalf("Events woken by a restore = %q, %v; want the create of a at 2.1", evs(c.batch.Events), c.err)
	}

	done = callEvents(ctx, lagging.f, "r", lagging.f.History().Position())
	stillWaitingEvents(t, done, "before the second restore")
	if err := restore(lagging.f, farther); err != nil {
		t.Fatal(err)
	}
	c := receiveEvents(t, done, "after a restore past its position")
	var gone *history.GoneError
	if !errors.As(c.err, &gone) || gone.Oldest != (history.Pos{Index: 3, N: 1}) {
		t.Fatalf("Events woken by a restore past the history = %q, %v; want a history.GoneError with Oldest {3 1}", evs(c.batch.Events), c.err)
	}
}

// randomLog applies count random entry commands to n (regions r and s
// must exist, replicated): see randomCommand.
func randomLog(n *node, rng *rand.Rand, count int) {
	for range count {
		n.apply(randomCommand(rng, func(*codec.Command) {}))
	}
}

// randomCommand is a put, put-all, put-if-absent, replace, CAS, delete,
// delete-if, clear or batch of entry commands on region r or s, over few
// keys and values so that refusals happen too. stamp sets the time of
// each command (and sub-command).
func randomCommand(rng *rand.Rand, stamp func(*codec.Command)) codec.Command {
	key := func() string { return fmt.Sprintf("k%d", rng.IntN(8)) }
	val := func() []byte { return []byte(fmt.Sprintf(`{"v":%d}`, rng.IntN(4))) }
	one := func() codec.Command {
		c := codec.Command{Region: []string{"r", "r", "s"}[rng.IntN(3)]}
		switch rng.IntN(9) {
		case 0, 1:
			c.Op = codec.OpPut
			for range 1 + rng.IntN(3) {
				c.Entries = append(c.Entries, region.Entry{Key: key(), Value: val()})
			}
		case 2:
			c.Op = codec.OpPutIfAbsent
			c.Entries = []region.Entry{{Key: key(), Value: val()}}
		case 3:
			c.Op = codec.OpReplace
			c.Entries = []region.Entry{{Key: key(), Value: val()}}
		case 4:
			c.Op = codec.OpCAS
			c.Pairs = []region.CASPair{{Key: key(), Old: val(), New: val()}}
		case 5:
			c.Op = codec.OpDelete
			c.Keys = []string{key()}
		case 6:
			c.Op = codec.OpDeleteIf
			c.Entries = []region.Entry{{Key: key(), Value: val()}}
		case 7:
			if rng.IntN(4) == 0 {
				c.Op = codec.OpClear
			} else {
				c.Op = codec.OpPut
				c.Entries = []region.Entry{{Key: key(), Value: val()}}
			}
		default:
			c.Op = codec.OpDelete
			c.Keys = []string{key(), key()}
		}
		stamp(&c)
		return c
	}
	if rng.IntN(6) != 0 {
		return one()
	}
	b := codec.Command{Op: codec.OpBatch}
	for range 1 + rng.IntN(3) {
		sub := one()
		for !sub.Op.Batchable() {
			sub = one()
		}
		b.Batch = append(b.Batch, sub.Encode(nil))
	}
	return b
}

// TestEventsResumeFromAnyPosition: reading from the position of any event
// (mid-entry ones included) gives exactly the events after it: no gap, no
// duplicate, whatever the batch size.
func TestEventsResumeFromAnyPosition(t *testing.T) {
	rng := rand.New(rand.NewPCG(21, 1))
	n := newNode(t)
	n.create("r", region.Replicate)
	n.create("s", region.Replicate)
	randomLog(n, rng, 300)
	if got, want := n.f.History().Position(), (history.Pos{Index: n.index + 1}); got != want {
		t.Fatalf("Position() = %v after %d entries, want %v", got, n.index, want)
	}
	all := eventsAfter(t, n.f, "r", history.Pos{}, 1000)
	if len(all) < 100 {
		t.Fatalf("only %d events of r in 300 random entries", len(all))
	}
	midEntry := 0
	for i, e := range all {
		if i > 0 && e.Pos.Index == all[i-1].Pos.Index {
			midEntry++
		}
		if i > 0 && !all[i-1].Pos.Less(e.Pos) {
			t.Fatalf("event %d at %v does not follow %v", i, e.Pos, all[i-1].Pos)
		}
		size := 1 + i%5
		if got := eventsAfter(t, n.f, "r", e.Pos, size); !reflect.DeepEqual(evs(got), evs(all[i+1:])) {
			t.Fatalf("resuming from event %d (%v) in batches of %d: %d events, want the %d after it\n got %q\nwant %q",
				i, e.Pos, size, len(got), len(all)-i-1, evs(got), evs(all[i+1:]))
		}
	}
	if midEntry == 0 {
		t.Fatal("no entry made two events of r: mid-entry positions untested")
	}
	// From the position after an entry: that entry's events are not repeated.
	for i := uint64(1); i <= n.index; i += 7 {
		var want []history.Event
		for _, e := range all {
			if e.Pos.Index >= i+1 {
				want = append(want, e)
			}
		}
		if got := eventsAfter(t, n.f, "r", history.Pos{Index: i + 1}, 3); !reflect.DeepEqual(evs(got), evs(want)) {
			t.Fatalf("resuming from {%d 0}: got %q\nwant %q", i+1, evs(got), evs(want))
		}
	}
}

// TestPositionFollowsTheAppliedIndex: Position is right after the last
// entry applied, whatever kind of entry it was.
func TestPositionFollowsTheAppliedIndex(t *testing.T) {
	n := newNode(t)
	if got := n.f.History().Position(); got != (history.Pos{Index: 1}) {
		t.Fatalf("Position of a new FSM = %v, want {1 0}", got)
	}
	n.create("r", region.Replicate)
	n.put("r", "a", `1`, "b", `2`)
	if got := n.f.History().Position(); got != (history.Pos{Index: 3}) {
		t.Fatalf("Position after entry 2 = %v, want {3 0}", got)
	}
	n.f.Apply(&raft.Log{Index: 3, Type: raft.LogConfiguration})
	if got := n.f.History().Position(); got != (history.Pos{Index: 4}) {
		t.Fatalf("Position after a configuration entry 3 = %v, want {4 0}", got)
	}
}

// TestHistoryOverflow: a history of 3 events keeps the newest 3; the floor
// is the newest event dropped; reading from before it is a
// *history.GoneError naming the floor, from the floor itself works.
func TestHistoryOverflow(t *testing.T) {
	n := &node{t: t, f: New(Options{History: 3})}
	n.create("r", region.Replicate) // 1
	if got := n.f.History().Floor(); got != (history.Pos{}) {
		t.Fatalf("HistoryFloor of a new FSM = %v, want {0 0}", got)
	}
	for i := range 4 { // 2..5
		n.put("r", fmt.Sprint(i), `1`)
	}
	n.put("r", "x", `1`, "y", `2`) // 6: two events
	// Held: 4.1, 5.1, 6.1, 6.2 minus the oldest: 5.1, 6.1, 6.2.
	if got := n.f.History().Floor(); got != (history.Pos{Index: 4, N: 1}) {
		t.Fatalf("HistoryFloor = %v, want {4 1}", got)
	}
	for _, asked := range []history.Pos{{}, {Index: 2, N: 1}, {Index: 4}, {Index: 3, N: 5}} {
		_, err := n.f.History().Events(context.Background(), "r", asked, 10)
		var gone *history.GoneError
		if !errors.As(err, &gone) || gone.Oldest != (history.Pos{Index: 4, N: 1}) || gone.Asked != asked || !errors.Is(err, history.ErrGone) {
			t.Errorf("Events from %v: %v, want a history.GoneError with Oldest {4 1}", asked, err)
		}
	}
	want := []string{ev(5, 1, region.EventCreate, "3", "1", ""), ev(6, 1, region.EventCreate, "x", "1", ""), ev(6, 2, region.EventCreate, "y", "2", "")}
	checkEvents(t, "from the floor", evs(eventsAfter(t, n.f, "r", history.Pos{Index: 4, N: 1}, 10)), want)
	checkEvents(t, "from 6.1", evs(eventsAfter(t, n.f, "r", history.Pos{Index: 6, N: 1}, 10)), want[2:])
	n.put("r", "z", `3`) // 7
	if got := n.f.History().Floor(); got != (history.Pos{Index: 5, N: 1}) {
		t.Fatalf("HistoryFloor after one more event = %v, want {5 1}", got)
	}
	if _, err := n.f.History().Events(context.Background(), "r", history.Pos{Index: 4, N: 1}, 10); !errors.Is(err, history.ErrGone) {
		t.Fatalf("Events from the old floor: %v, want history.ErrGone", err)
	}
	// A floor in the middle of an entry: 6.1 dropped, 6.2 kept.
	n.put("r", "w", `4`) // 8
	if got := n.f.History().Floor(); got != (history.Pos{Index: 6, N: 1}) {
		t.Fatalf("HistoryFloor = %v, want {6 1}", got)
	}
	checkEvents(t, "from the mid-entry floor", evs(eventsAfter(t, n.f, "r", history.Pos{Index: 6, N: 1}, 10)), []string{
		ev(6, 2, region.EventCreate, "y", "2", ""), ev(7, 1, region.EventCreate, "z", "3", ""), ev(8, 1, region.EventCreate, "w", "4", ""),
	})
}

// allEvents returns every event f holds, of every region.
func allEvents(f *FSM) []history.Event {
	f.mu.RLock()
	defer f.mu.RUnlock()
	_, evs := f.History().Snapshot()
	return evs
}

// TestHistoryInSnapshots: a snapshot carries the history and its floor
// unchanged; a member keeping fewer events keeps the newest and raises its
// floor to the newest it dropped; either continues numbering the same way.
func TestHistoryInSnapshots(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 5))
	src := &node{t: t, f: New(Options{History: 50})}
	src.create("r", region.Replicate)
	src.create("s", region.Replicate)
	randomLog(src, rng, 120)
	all := allEvents(src.f)
	if len(all) != 50 || src.f.History().Floor() == (history.Pos{}) {
		t.Fatalf("source holds %d events, floor %v; want a full ring of 50 with a floor", len(all), src.f.History().Floor())
	}
	snap := persist(t, src.f)

	same := New(Options{History: 50})
	if err := restore(same, snap); err != nil {
		t.Fatal(err)
	}
	if got := allEvents(same); !reflect.DeepEqual(evs(got), evs(all)) {
		t.Fatalf("restored history:\n got %q\nwant %q", evs(got), evs(all))
	}
	if same.History().Floor() != src.f.History().Floor() || same.History().Position() != src.f.History().Position() {
		t.Fatalf("restored floor %v position %v, want %v %v", same.History().Floor(), same.History().Position(), src.f.History().Floor(), src.f.History().Position())
	}

	small := New(Options{History: 10})
	if err := restore(small, snap); err != nil {
		t.Fatal(err)
	}
	if got := allEvents(small); !reflect.DeepEqual(evs(got), evs(all[40:])) {
		t.Fatalf("history restored into 10 slots:\n got %q\nwant the newest 10 %q", evs(got), evs(all[40:]))
	}
	if got := small.History().Floor(); got != all[39].Pos {
		t.Fatalf("floor after restoring into 10 slots = %v, want %v (the newest event dropped)", got, all[39].Pos)
	}
	if _, err := small.History().Events(context.Background(), "r", all[38].Pos, 10); !errors.Is(err, history.ErrGone) {
		t.Fatalf("Events from before the raised floor: %v, want history.ErrGone", err)
	}

	// Both continue as the source does.
	big := New(Options{History: 50})
	if err := restore(big, snap); err != nil {
		t.Fatal(err)
	}
	rest := &node{t: t, f: big, index: src.index}
	tail := &node{t: t, f: small, index: src.index}
	for _, n := range []*node{src, rest, tail} {
		randomLog(n, rand.New(rand.NewPCG(6, 6)), 30)
	}
	if got, want := evs(allEvents(rest.f)), evs(allEvents(src.f)); !slices.Equal(got, want) {
		t.Fatalf("after more entries, restored history:\n got %q\nwant %q", got, want)
	}
	if got, want := evs(allEvents(tail.f)), evs(allEvents(src.f)); !slices.Equal(got, want[len(want)-10:]) {
		t.Fatalf("after more entries, the 10-slot history:\n got %q\nwant %q", got, want[len(want)-10:])
	}

	// A history that never dropped anything keeps its floor at the start:
	// every member answers a token the same way.
	fresh := newNode(t)
	fresh.create("r", region.Replicate)
	f := New(Options{})
	if err := restore(f, persist(t, fresh.f)); err != nil {
		t.Fatal(err)
	}
	if got, want := f.History().Floor(), fresh.f.History().Floor(); got != want {
		t.Fatalf("floor restored from a snapshot with no event = %v, want the source's %v", got, want)
	}
}

// TestCaptureThenEvents: the entries Capture reports, updated by the
// events after the position it returns, are exactly the region's entries,
// wherever in the log the capture was taken (property test).
func TestCaptureThenEvents(t *testing.T) {
	for seed := range uint64(20) {
		rng := rand.New(rand.NewPCG(seed, 77))
		n := &node{t: t, f: New(Options{Clock: func() time.Time { return time.UnixMilli(0) }})}
		n.create("r", region.Replicate)
		n.create("s", region.Replicate)
		var now uint64 = 1_000_000
		timed := func(count int) {
			for range count {
				now += uint64(rng.IntN(300))
				n.apply(expiringCommand(n.f, rng, now))
			}
		}
		timed(rng.IntN(150))
		model := map[string]string{}
		pos, err := capture(n.f, "r", 0, func(key string, value json.RawMessage) error {
			model[key] = string(value)
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		if pos != n.f.History().Position() {
			t.Fatalf("seed %d: Capture position %v, want %v", seed, pos, n.f.History().Position())
		}
		timed(rng.IntN(150))
		// Remove what is due at the last time stamped, so the state holds
		// no entry past its deadline.
		n.must(tick(now))
		expireDue(n, now)
		for _, e := range eventsAfter(t, n.f, "r", pos, 7) {
			switch e.Type {
			case region.EventCreate, region.EventUpdate:
				model[e.Key] = string(e.Value)
			case region.EventDestroy, region.EventExpire:
				delete(model, e.Key)
			case region.EventClear:
				clear(model)
			default:
				t.Fatalf("seed %d: unexpected event %q", seed, evs([]history.Event{e}))
			}
		}
		list, err := n.f.List("r", 0, -1)
		if err != nil {
			t.Fatal(err)
		}
		want := map[string]string{}
		for _, e := range list {
			want[e.Key] = string(e.Value)
		}
		if !reflect.DeepEqual(model, want) {
			t.Fatalf("seed %d: capture plus events = %v, want the region's entries %v", seed, model, want)
		}
	}
}
