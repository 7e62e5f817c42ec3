package regions

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/kvnode/kvnode/fsm/codec"
	"github.com/kvnode/kvnode/fsm/history"
	"github.com/kvnode/kvnode/region"
	"github.com/kvnode/kvnode/store/expiry"
)

// next reads events from w until it has n of them.
func next(t *testing.T, w region.Watch, n int) []region.Event {
	t.Helper()
	var out []region.Event
	ctx := ctxT(t, 10*time.Second)
	for len(out) < n {
		evs, err := w.Next(ctx)
		if err != nil {
			t.Fatalf("Next after %d of %d events: %v", len(out), n, err)
		}
		out = append(out, evs...)
	}
	return out
}

func describe(evs []region.Event) string {
	var parts []string
	for _, e := range evs {
		parts = append(parts, fmt.Sprintf("%s %s %s", e.Type, e.Key, e.Value))
	}
	return strings.Join(parts, "; ")
}

// TestWatchBothKinds: a watch sees every change of its region, in order
// per key, for both region kinds; a watch resumed from any event's token
// gets exactly the events after it; initial results and the changes after
// them leave no gap and repeat nothing; the watch ends when the region is
// destroyed.
func TestWatchBothKinds(t *testing.T) {
	_, api := soloNode(t)
	for _, kind := range []region.Kind{region.Replicate, region.Partition} {
		t.Run(string(kind), func(t *testing.T) {
			ctx := ctxT(t, 30*time.Second)
			name := "w" + strings.ToLower(string(kind))
			if err := api.CreateRegion(ctx, region.Info{Name: name, Kind: kind}); err != nil {
				t.Fatal(err)
			}
			if err := api.Put(ctx, name, []region.Entry{{Key: "before", Value: json.RawMessage(`{"v":0}`)}}, region.TTL{}); err != nil {
				t.Fatal(err)
			}
			var initial []string
			w, err := api.Watch(ctx, name, region.WatchOptions{Initial: func(k string, v json.RawMessage) error {
				initial = append(initial, k+"="+string(v))
				return nil
			}})
			if err != nil {
				t.Fatal(err)
			}
			defer w.Close()
			if want := []string{`before={"v":0}`}; fmt.Sprint(initial) != fmt.Sprint(want) {
				t.Errorf("initial = %q, want %q", initial, want)
			}
			for i := 1; i <= 3; i++ {
				if err := api.Put(ctx, name, []region.Entry{{Key: fmt.Sprintf("k%d", i), Value: json.RawMessage(fmt.Sprintf(`{"v":%d}`, i))}}, region.TTL{}); err != nil {
					t.Fatal(err)
				}
			}
			if err := api.Put(ctx, name, []region.Entry{{Key: "k1", Value: json.RawMessage(`{"v":10}`)}}, region.TTL{}); err != nil {
				t.Fatal(err)
			}
			if err := api.Delete(ctx, name, []string{"k2"}); err != nil {
				t.Fatal(err)
			}
			evs := next(t, w, 5)
			got := map[string][]string{}
			for _, e := range evs {
				got[e.Key] = append(got[e.Key], fmt.Sprintf("%s %s", e.Type, e.Value))
			}
			want := map[string][]string{
				"k1": {`create {"v":1}`, `update {"v":10}`},
				"k2": {`create {"v":2}`, "destroy "},
				"k3": {`create {"v":3}`},
			}
			if fmt.Sprint(got) != fmt.Sprint(want) {
				t.Fatalf("events by key = %v, want %v", got, want)
			}
			// Resume from every event's token: exactly the events after it.
			for i, e := range evs {
				r, err := api.Watch(ctx, name, region.WatchOptions{From: e.Token})
				if err != nil {
					t.Fatalf("resume from %q: %v", e.Token, err)
				}
				var rest []region.Event
				if i < len(evs)-1 {
					rest = next(t, r, len(evs)-1-i)
				}
				r.Close()
				wantRest := append([]region.Event(nil), evs[i+1:]...)
				if kind == region.Partition {
					// Across groups only each key's order is defined.
					sort.SliceStable(rest, func(a, b int) bool { return rest[a].Key < rest[b].Key })
					sort.SliceStable(wantRest, func(a, b int) bool { return wantRest[a].Key < wantRest[b].Key })
				}
				if describe(rest) != describe(wantRest) {
					t.Errorf("resumed after event %d (%s): got %s, want %s", i, e.Token, describe(rest), describe(wantRest))
				}
			}
			if _, err := api.Watch(ctx, name, region.WatchOptions{From: "9:1.0"}); !errors.Is(err, region.ErrInvalid) {
				t.Errorf("a token of other groups: %v, want ErrInvalid", err)
			}
			if err := api.DestroyRegion(ctx, name); err != nil {
				t.Fatal(err)
			}
			if _, err := w.Next(ctxT(t, 10*time.Second)); !errors.Is(err, region.ErrRegionNotFound) {
				t.Errorf("Next after the region was destroyed: %v, want ErrRegionNotFound", err)
			}
		})
	}
}

// TestWatchExpiry: an entry written with a time-to-live is removed by the
// leader's expiry pass once due, and watchers see an expire event.
func TestWatchExpiry(t *testing.T) {
	s, api := soloNode(t)
	ctx := ctxT(t, 30*time.Second)
	if err := api.CreateRegion(ctx, region.Info{Name: "sessions", Kind: region.Replicate}); err != nil {
		t.Fatal(err)
	}
	w, err := api.Watch(ctx, "sessions", region.WatchOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	if _, err := s.Router().Apply(ctx, 0, &codec.Command{Op: codec.OpPut, Region: "sessions", Entries: []region.Entry{{Key: "s1", Value: json.RawMessage(`{}`)}}, TTL: 200}); err != nil {
		t.Fatal(err)
	}
	time.Sleep(250 * time.Millisecond) // the entry's deadline, by the clock
	if err := expiry.Once(ctx, s.Router()); err != nil {
		t.Fatal(err)
	}
	evs := next(t, w, 2)
	if got := describe(evs); got != `create s1 {}; expire s1 ` {
		t.Errorf("events = %s, want the create and the expire of s1", got)
	}
	if n, err := api.Count(context.Background(), region.Stale, "sessions"); err != nil || n != 0 {
		t.Errorf("count after expiry = %d, %v; want 0", n, err)
	}
}

// TestTokenRoundTrip: a token names every group's position, and reads back
// as the positions it was made of, short (a replicated region's) or long
// (many partition groups, past formatToken's stack buffer).
func TestTokenRoundTrip(t *testing.T) {
	cases := []struct {
		gids []uint64
		pos  []history.Pos
		want string
	}{
		{[]uint64{0}, []history.Pos{{Index: 1234, N: 2}}, "0:1234.2"},
		{[]uint64{0}, []history.Pos{{Index: math.MaxUint64, N: math.MaxUint32}}, "0:18446744073709551615.4294967295"},
		{AllGroups(3), []history.Pos{{Index: 120, N: 3}, {Index: 98}, {Index: 7, N: 1}}, "1:120.3,2:98.0,3:7.1"},
	}
	many := AllGroups(16)
	manyPos := make([]history.Pos, len(many))
	var parts []string
	for i := range manyPos {
		manyPos[i] = history.Pos{Index: 1_000_000_000 + uint64(i), N: uint32(i)}
		parts = append(parts, fmt.Sprintf("%d:%d.%d", many[i], manyPos[i].Index, manyPos[i].N))
	}
	cases = append(cases, struct {
		gids []uint64
		pos  []history.Pos
		want string
	}{many, manyPos, strings.Join(parts, ",")})
	for _, c := range cases {
		got := formatToken(c.gids, c.pos)
		if got != c.want {
			t.Errorf("formatToken(%v, %v) = %q, want %q", c.gids, c.pos, got, c.want)
			continue
		}
		back, err := parseToken(got, c.gids)
		if err != nil {
			t.Errorf("parseToken(%q): %v", got, err)
			continue
		}
		if fmt.Sprint(back) != fmt.Sprint(c.pos) {
			t.Errorf("parseToken(%q) = %v, want %v", got, back, c.pos)
		}
	}
}

// TestWatchNextDeadline: Next on an idle watch of a replicated region
// returns ctx's error when ctx ends, with the token unchanged, and a later
// Next (a new ctx, as a stream's next keep-alive period has) gets the
// write made meanwhile, after which the token moved on.
func TestWatchNextDeadline(t *testing.T) {
	_, api := soloNode(t)
	ctx := ctxT(t, 30*time.Second)
	if err := api.CreateRegion(ctx, region.Info{Name: "idle", Kind: region.Replicate}); err != nil {
		t.Fatal(err)
	}
	w, err := api.Watch(ctx, "idle", region.WatchOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	before := w.Token()
	short, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
	defer cancel()
	if evs, err := w.Next(short); !errors.Is(err, context.DeadlineExceeded) || len(evs) != 0 {
		t.Fatalf("Next on an idle watch: %d events, %v; want none, context.DeadlineExceeded", len(evs), err)
	}
	if got := w.Token(); got != before {
		t.Errorf("token after an idle Next = %q, want %q", got, before)
	}
	if err := api.Put(ctx, "idle", []region.Entry{{Key: "k", Value: json.RawMessage(`{"v":1}`)}}, region.TTL{}); err != nil {
		t.Fatal(err)
	}
	evs := next(t, w, 1)
	if got, want := describe(evs), `create k {"v":1}`; got != want {
		t.Errorf("events after the put = %s, want %s", got, want)
	}
	if got := w.Token(); got == before {
		t.Errorf("token after the event = %q, want one past it (the event's is %q)", got, evs[0].Token)
	}
}
