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

	"github.com/kvnode/kvnode/fsm"
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

// TestWatchAnswerKeepsValueBytes: the watch RPC (a watch served by a
// member without a replica of the group) hands over stored values byte
// for byte, as a local replica does: "<", ">" and "&" are not turned into
// \u003c escapes, in the events and in the initial entries alike.
func TestWatchAnswerKeepsValueBytes(t *testing.T) {
	s, api := soloNode(t)
	ctx := ctxT(t, 30*time.Second)
	if err := api.CreateRegion(ctx, region.Info{Name: "html", Kind: region.Replicate}); err != nil {
		t.Fatal(err)
	}
	value := json.RawMessage(`{"a":"<b>&</b>"}`)
	if err := api.Put(ctx, "html", []region.Entry{{Key: "k", Value: value}}, region.TTL{}); err != nil {
		t.Fatal(err)
	}
	replica := func(region.Consistency) (*fsm.FSM, error) { return s.Router().ControlState() }
	for _, req := range []watchReq{
		{Region: "html", Max: batchEvents}, // the events from the start of the history
		{Region: "html", Capture: true},    // the initial entries
	} {
		body, err := json.Marshal(req)
		if err != nil {
			t.Fatal(err)
		}
		out, err := api.parts.serveWatch(ctx, replica, body)
		if err != nil {
			t.Fatalf("serveWatch(%+v): %v", req, err)
		}
		var resp watchResp
		if err := json.Unmarshal(out, &resp); err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, e := range resp.Events {
			if e.Key == "k" {
				got = append(got, string(e.Value))
			}
		}
		for _, e := range resp.Entries {
			got = append(got, string(e.Value))
		}
		if want := []string{string(value)}; fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("capture=%v: values = %s, want %s", req.Capture, got, want)
		}
	}
}

// TestWatchResumeAcrossRecreate: a token of a replicated region that was
// destroyed and created again under the same name does not resume on the
// new incarnation (whose events would follow without a word about the
// old one's end, and the old one's last events would be skipped): the
// watch is refused as the region not found.
func TestWatchResumeAcrossRecreate(t *testing.T) {
	_, api := soloNode(t)
	for _, kind := range []region.Kind{region.Replicate, region.Partition} {
		t.Run(string(kind), func(t *testing.T) { resumeAcrossRecreate(t, api, kind) })
	}
}

func resumeAcrossRecreate(t *testing.T, api *API, kind region.Kind) {
	ctx := ctxT(t, 30*time.Second)
	name := "again-" + strings.ToLower(string(kind))
	put := func(key string) {
		t.Helper()
		if err := api.Put(ctx, name, []region.Entry{{Key: key, Value: json.RawMessage(`{}`)}}, region.TTL{}); err != nil {
			t.Fatal(err)
		}
	}
	if err := api.CreateRegion(ctx, region.Info{Name: name, Kind: kind}); err != nil {
		t.Fatal(err)
	}
	w, err := api.Watch(ctx, name, region.WatchOptions{})
	if err != nil {
		t.Fatal(err)
	}
	put("old1")
	token := next(t, w, 1)[0].Token
	w.Close()
	put("old2") // after the token: the resumed watch must not skip it silently
	if err := api.DestroyRegion(ctx, name); err != nil {
		t.Fatal(err)
	}
	if err := api.CreateRegion(ctx, region.Info{Name: name, Kind: kind}); err != nil {
		t.Fatal(err)
	}
	put("new")
	r, err := api.Watch(ctx, name, region.WatchOptions{From: token})
	if err == nil {
		evs := next(t, r, 1)
		r.Close()
		t.Fatalf("resumed from %s (a token of the destroyed incarnation): got %s, want ErrRegionNotFound", token, describe(evs))
	}
	if !errors.Is(err, region.ErrRegionNotFound) {
		t.Fatalf("resumed from %s: %v, want ErrRegionNotFound", token, err)
	}
}

// TestWatchCatchesUpWithABurst: one write of more entries than a batch
// (a put-all) leaves a watch more than its buffer behind for a moment,
// though its consumer keeps up: the watch delivers every event rather
// than ending as a slow consumer, burst after burst, and so does one
// resumed from before the bursts (which would otherwise be refused again
// at every resume, until the bursts left the history and the token was
// gone).
func TestWatchCatchesUpWithABurst(t *testing.T) {
	_, api := soloNode(t)
	ctx := ctxT(t, 30*time.Second)
	if err := api.CreateRegion(ctx, region.Info{Name: "burst", Kind: region.Replicate}); err != nil {
		t.Fatal(err)
	}
	const buffer, n = 10, 3 * batchEvents
	w, err := api.Watch(ctx, "burst", region.WatchOptions{Buffer: buffer})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	token := w.Token()
	for burst := 1; burst <= 2; burst++ {
		putBurst(t, api, "burst", burst, n)
		if got := len(next(t, w, n)); got != n {
			t.Errorf("events of burst %d = %d, want %d", burst, got, n)
		}
	}
	r, err := api.Watch(ctx, "burst", region.WatchOptions{From: token, Buffer: buffer})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if got := len(next(t, r, 2*n)); got != 2*n {
		t.Errorf("events of the bursts, resumed from before them = %d, want %d", got, 2*n)
	}
}

// TestWatchSlowConsumer: a watch that falls behind by more than its
// buffer, and further behind from one batch to the next because the
// writes outpace its consumer, ends with ErrSlowConsumer; its token
// resumes exactly after the last event delivered.
func TestWatchSlowConsumer(t *testing.T) {
	_, api := soloNode(t)
	ctx := ctxT(t, 30*time.Second)
	if err := api.CreateRegion(ctx, region.Info{Name: "slow", Kind: region.Replicate}); err != nil {
		t.Fatal(err)
	}
	const buffer, n = 10, 3 * batchEvents
	w, err := api.Watch(ctx, "slow", region.WatchOptions{Buffer: buffer})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	putBurst(t, api, "slow", 1, n)
	got := len(next(t, w, 1)) // the first batch: past the buffer, once
	putBurst(t, api, "slow", 2, n)
	putBurst(t, api, "slow", 3, n)
	for {
		evs, err := w.Next(ctxT(t, 10*time.Second))
		if errors.Is(err, region.ErrSlowConsumer) {
			break
		}
		if err != nil {
			t.Fatalf("Next after %d events: %v, want ErrSlowConsumer", got, err)
		}
		if got += len(evs); got >= 3*n {
			t.Fatalf("got all %d events, want ErrSlowConsumer before the end", got)
		}
	}
	r, err := api.Watch(ctx, "slow", region.WatchOptions{From: w.Token()})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if rest := len(next(t, r, 3*n-got)); got+rest != 3*n {
		t.Errorf("events before the error %d + after its token %d = %d, want %d", got, rest, got+rest, 3*n)
	}
}

// putBurst writes n entries in one command (a put-all).
func putBurst(t *testing.T, api *API, name string, burst, n int) {
	t.Helper()
	entries := make([]region.Entry, n)
	for i := range entries {
		entries[i] = region.Entry{Key: fmt.Sprintf("b%d-%04d", burst, i), Value: json.RawMessage(`{}`)}
	}
	if err := api.Put(ctxT(t, 10*time.Second), name, entries, region.TTL{}); err != nil {
		t.Fatal(err)
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
		{[]uint64{0}, []history.Pos{{Index: 1234, N: 2}}, "17@0:1234.2"},
		{[]uint64{0}, []history.Pos{{Index: math.MaxUint64, N: math.MaxUint32}}, "17@0:18446744073709551615.4294967295"},
		{AllGroups(3), []history.Pos{{Index: 120, N: 3}, {Index: 98}, {Index: 7, N: 1}}, "17@1:120.3,2:98.0,3:7.1"},
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
	}{many, manyPos, "17@" + strings.Join(parts, ",")})
	for _, c := range cases {
		got := formatToken(17, c.gids, c.pos)
		if got != c.want {
			t.Errorf("formatToken(%v, %v) = %q, want %q", c.gids, c.pos, got, c.want)
			continue
		}
		id, back, err := parseToken(got, c.gids)
		if err != nil || id != 17 {
			t.Errorf("parseToken(%q) = region %d, %v; want region 17", got, id, err)
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
	// The token may move past entries that made no event of this region
	// (the cluster's own metadata): what matters is that the next event
	// is still delivered, below.
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

// TestWatchDeliversEverythingBeforeTheDestroy: a replicated region's
// destruction is an entry of the control group's log, after the writes
// committed before it: the watch delivers them, then ends at once (the
// destroy's entry moves the watch's position, and a batch without events
// checks the region), not at its next idle check.
func TestWatchDeliversEverythingBeforeTheDestroy(t *testing.T) {
	_, api := soloNode(t)
	ctx := ctxT(t, 30*time.Second)
	if err := api.CreateRegion(ctx, region.Info{Name: "brief", Kind: region.Replicate}); err != nil {
		t.Fatal(err)
	}
	w, err := api.Watch(ctx, "brief", region.WatchOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	for _, k := range []string{"a", "b", "c"} {
		if err := api.Put(ctx, "brief", []region.Entry{{Key: k, Value: json.RawMessage(`{}`)}}, region.TTL{}); err != nil {
			t.Fatal(err)
		}
	}
	got := next(t, w, 3)
	if err := api.DestroyRegion(ctx, "brief"); err != nil {
		t.Fatal(err)
	}
	destroyed := time.Now()
	for {
		evs, err := w.Next(ctx)
		got = append(got, evs...)
		if err != nil {
			if !errors.Is(err, region.ErrRegionNotFound) {
				t.Fatalf("the watch ended with %v, want ErrRegionNotFound", err)
			}
			break
		}
	}
	if took := time.Since(destroyed); took > regionCheck/2 {
		t.Errorf("the watch ended %v after the destroy, want at once (the idle check comes every %v)", took, regionCheck)
	}
	if d := describe(got); d != "create a {}; create b {}; create c {}" {
		t.Errorf("events before the end = %s, want the three creates", d)
	}
}

// A token from before partition groups were added names fewer groups: it
// resumes the new ones from the start of their history (a 410 if that is
// gone, checked by Watch); one that names more than the region has, or
// another group, is refused.
func TestParseTokenAcrossGrowth(t *testing.T) {
	id, pos, err := parseToken("7@1:10.0,2:20.1", []uint64{1, 2, 3, 4})
	if err != nil || id != 7 || len(pos) != 4 || pos[0] != (history.Pos{Index: 10}) || pos[1] != (history.Pos{Index: 20, N: 1}) || pos[2] != (history.Pos{}) || pos[3] != (history.Pos{}) {
		t.Errorf("a token of 2 groups for 4: %d %v %v", id, pos, err)
	}
	for _, bad := range []string{"7@1:10.0,2:20.1,3:1.0", "7@2:10.0", "7@1:10.0,3:1.0"} {
		if _, _, err := parseToken(bad, []uint64{1, 2}); !errors.Is(err, region.ErrInvalid) {
			t.Errorf("parseToken(%q) = %v, want ErrInvalid", bad, err)
		}
	}
}
