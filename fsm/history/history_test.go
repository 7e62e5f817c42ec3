package history

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/kvnode/kvnode/region"
)

// fill adds entries 1..n, each one event of region "a" then one of "b".
func fill(l *Log, n int) {
	for i := 1; i <= n; i++ {
		l.Begin(uint64(i))
		l.Add(Event{Type: region.EventCreate, Region: "a", Key: fmt.Sprintf("a%d", i)})
		l.Add(Event{Type: region.EventCreate, Region: "b", Key: fmt.Sprintf("b%d", i)})
		l.Applied(uint64(i))
	}
}

func keys(evs []Event) string {
	var s []string
	for _, e := range evs {
		s = append(s, e.Key)
	}
	return fmt.Sprint(s)
}

// TestEventsInto: a batch holds only the region's events, up to max, in
// buf's storage when they fit (and in a new slice when not, leaving buf
// alone); Next and Behind count every region's events.
func TestEventsInto(t *testing.T) {
	l := New(100)
	fill(l, 5)
	ctx := context.Background()

	buf := make([]Event, 0, 8)
	b, err := l.EventsInto(ctx, buf, "a", Pos{}, 3)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := keys(b.Events), "[a1 a2 a3]"; got != want {
		t.Errorf("events = %s, want %s", got, want)
	}
	if &b.Events[0] != &buf[:1][0] {
		t.Errorf("the batch is not in buf's storage (cap %d, %d events)", cap(buf), len(b.Events))
	}
	// a3 is event 1 of entry 3; b3 (event 2) is not looked at yet.
	if want := (Pos{Index: 3, N: 1}); b.Next != want || b.Behind != 5 {
		t.Errorf("next %v behind %d, want %v behind 5", b.Next, b.Behind, want)
	}

	small := make([]Event, 0, 1)
	b, err = l.EventsInto(ctx, small, "b", b.Next, 10)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := keys(b.Events), "[b3 b4 b5]"; got != want {
		t.Errorf("events = %s, want %s", got, want)
	}
	if cap(b.Events) != 3 || small[:1][0].Key != "" {
		t.Errorf("batch of 3 with a buf of 1: cap %d, buf[0] %q; want a new slice of cap 3 and buf untouched", cap(b.Events), small[:1][0].Key)
	}
	if want := (Pos{Index: 6}); b.Next != want || b.Behind != 0 {
		t.Errorf("next %v behind %d, want %v behind 0", b.Next, b.Behind, want)
	}

	// Nothing of "a" after a5: Next moves past b5, without events.
	b, err = l.Events(ctx, "a", Pos{Index: 5, N: 1}, 10)
	if err != nil {
		t.Fatal(err)
	}
	if len(b.Events) != 0 || b.Events != nil || b.Next != (Pos{Index: 6}) {
		t.Errorf("after a5: %d events (nil %v), next %v; want none, nil, next 6.0", len(b.Events), b.Events == nil, b.Next)
	}
}

// TestSince: every event after a position, of every region, without
// waiting; a position the ring no longer reaches is a *GoneError.
func TestSince(t *testing.T) {
	l := New(3)
	for i := uint64(1); i <= 4; i++ {
		l.Begin(i)
		l.Add(Event{Region: fmt.Sprint("r", i%2), Key: fmt.Sprint("k", i)})
		l.Applied(i)
	}
	var keys []string
	if err := l.Since(Pos{Index: 3}, func(e Event) bool { keys = append(keys, e.Key); return true }); err != nil || fmt.Sprint(keys) != "[k3 k4]" {
		t.Errorf("Since(3.0) = %v, %v; want [k3 k4]", keys, err)
	}
	var gone *GoneError
	if err := l.Since(Pos{Index: 1}, func(Event) bool { return true }); !errors.As(err, &gone) || gone.Oldest != (Pos{Index: 1, N: 1}) {
		t.Errorf("Since(1.0) after the ring dropped 1's event: %v, want a GoneError from 1.1", err)
	}
}

// TestGoneWhileWriting: a reader told its position is gone while the state
// machine keeps adding events reads the oldest position under the lock
// (the race detector caught it reading the floor after unlocking:
// client.TestWatchGone under make test-go, 2026-11-29).
func TestGoneWhileWriting(t *testing.T) {
	l := New(4)
	fill(l, 4) // entry 1's events are gone
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := uint64(5); i <= 200; i++ {
			l.Begin(i)
			l.Add(Event{Type: region.EventCreate, Region: "a", Key: fmt.Sprint(i)})
			l.Applied(i)
		}
	}()
	for range 200 {
		_, err := l.Events(context.Background(), "a", Pos{Index: 1, N: 1}, 10)
		var gone *GoneError
		if !errors.As(err, &gone) || !(Pos{Index: 1, N: 1}).Less(gone.Oldest) {
			t.Fatalf("events after 1.1 of a log that dropped them: %v", err)
		}
	}
	<-done
}
