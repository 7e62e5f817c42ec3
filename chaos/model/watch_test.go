package model

import (
	"fmt"
	"reflect"
	"strings"
	"testing"
)

// ev builds a received event: a value event when v is not Absent. Tokens
// and times follow the stream: the n-th event is token "t<n>", received
// at 100+n (after every write of these histories was invoked, unless a
// case says otherwise).
func evs(es ...WatchEvent) []WatchEvent {
	for i := range es {
		if es[i].Token == "" {
			es[i].Token = fmt.Sprintf("t%d", i)
		}
		if es[i].Time == 0 {
			es[i].Time = int64(100 + i)
		}
	}
	return es
}

func created(k string, v int64) WatchEvent { return WatchEvent{Type: "create", Key: k, Value: v} }
func updated(k string, v int64) WatchEvent { return WatchEvent{Type: "update", Key: k, Value: v} }
func destroyed(k string) WatchEvent        { return WatchEvent{Type: "destroy", Key: k} }

func TestCheckWatch(t *testing.T) {
	// The base history: a put, a later update, a delete after both, each
	// acknowledged before the next was invoked.
	base := []Op{
		op(0, 0, 1, put("a", 1), status(200)),
		op(0, 2, 3, put("a", 2), status(200)),
		op(0, 4, 5, del("a"), status(200)),
	}
	with := func(extra ...Op) []Op { return append(append([]Op(nil), base...), extra...) }
	baseEvents := func(extra ...WatchEvent) []WatchEvent {
		return evs(append([]WatchEvent{created("a", 1), updated("a", 2), destroyed("a")}, extra...)...)
	}
	cases := []struct {
		name   string
		ops    []Op
		events []WatchEvent
		gone   bool
		want   WatchVerdict // only the counts matter
	}{
		{name: "every write seen in order", ops: base, events: baseEvents()},
		{name: "missing update", ops: base, events: evs(created("a", 1), destroyed("a")),
			want: WatchVerdict{Missing: 1}},
		{name: "missing destroy of an acknowledged delete", ops: base, events: evs(created("a", 1), updated("a", 2)),
			want: WatchVerdict{Missing: 1}},
		{name: "invented value", ops: base, events: baseEvents(created("a", 99)),
			want: WatchVerdict{Invented: 1}},
		{name: "value written to another key", ops: with(op(1, 6, 7, put("b", 3), status(200))), events: baseEvents(created("a", 3), created("b", 3)),
			want: WatchVerdict{Invented: 1}},
		{name: "destroy no delete accounts for", ops: base[:1], events: evs(created("a", 1), destroyed("a")),
			want: WatchVerdict{Invented: 1}},
		{name: "a second destroy", ops: with(op(1, 6, 7, put("a", 3), status(200))), events: baseEvents(created("a", 3), destroyed("a")),
			want: WatchVerdict{Invented: 1}},
		{name: "reordered pair", ops: base, events: evs(created("a", 2), updated("a", 1), destroyed("a")),
			want: WatchVerdict{OutOfOrder: 1}},
		{name: "destroy outside its window", ops: with(op(0, 6, 7, put("a", 3), status(200))),
			events: evs(created("a", 1), updated("a", 2), updated("a", 3), destroyed("a")),
			want:   WatchVerdict{OutOfOrder: 1}},
		{name: "concurrent writes in either order",
			ops: []Op{
				op(0, 0, 10, put("a", 1), status(200)),
				op(1, 1, 9, put("a", 2), status(200)),
			},
			events: evs(created("a", 2), updated("a", 1))},
		{name: "duplicate token across a reconnect", ops: base,
			events: func() []WatchEvent {
				es := baseEvents()
				again := es[1]
				again.Conn, again.Member = 1, "n2"
				return append(es[:2:2], again, es[2])
			}(),
			want: WatchVerdict{Duplicates: 1}},
		{name: "a value delivered twice under two tokens", ops: base,
			events: evs(created("a", 1), updated("a", 2), WatchEvent{Type: "update", Key: "a", Value: 2, Token: "other", Conn: 1}, destroyed("a")),
			want:   WatchVerdict{Duplicates: 1}},
		{name: "indeterminate write seen", ops: with(op(1, 6, -1, put("a", 3), Output{})), events: baseEvents(created("a", 3))},
		{name: "indeterminate write not seen", ops: with(op(1, 6, -1, put("a", 3), Output{})), events: baseEvents()},
		{name: "indeterminate delete seen", ops: with(op(1, 6, 7, put("a", 3), status(200)), op(2, 8, -1, del("a"), Output{})),
			events: baseEvents(created("a", 3), destroyed("a"))},
		{name: "indeterminate delete not seen", ops: with(op(1, 6, 7, put("a", 3), status(200)), op(2, 8, -1, del("a"), Output{})),
			events: baseEvents(created("a", 3))},
		{name: "write refused as one command appears", ops: with(op(1, 6, 7, pia("a", 3), value(409, 2))), events: baseEvents(created("a", 3)),
			want: WatchVerdict{Invented: 1}},
		{name: "spanning refusal's part appears",
			ops:    with(op(1, 6, 7, spanning(mcas(ks("a", "b"), vs(1, 1), vs(3, 4))), value(409, 1))),
			events: baseEvents(created("a", 3))},
		{name: "event received before its write was invoked",
			ops:    with(op(1, 200, 201, put("a", 3), status(200))),
			events: baseEvents(created("a", 3)), // received at 103
			want:   WatchVerdict{Invented: 1}},
		{name: "update of an absent key", ops: base, events: evs(updated("a", 1), updated("a", 2), destroyed("a")),
			want: WatchVerdict{WrongType: 1}},
		{name: "multi-key write: an event per key",
			ops: []Op{
				op(0, 0, 1, mput(ks("a", "b"), 1, 2), status(200)),
				op(0, 2, 3, mdel("a", "b"), status(200)),
			},
			events: evs(created("a", 1), created("b", 2), destroyed("b"), destroyed("a"))},
		{name: "expire in a region without time-to-live", ops: base, events: baseEvents(WatchEvent{Type: "expire", Key: "a"}),
			want: WatchVerdict{Invented: 1}},
		{name: "after a 410 missing events are not judged", ops: base, events: evs(created("a", 1)), gone: true},
		{name: "after a 410 the rest still is", ops: base, events: evs(updated("a", 2), created("a", 1)), gone: true,
			want: WatchVerdict{OutOfOrder: 1}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := CheckWatch(c.ops, c.events, c.gone)
			if got.Events != len(c.events) {
				t.Errorf("events %d, want %d", got.Events, len(c.events))
			}
			g := [5]int{got.Missing, got.Invented, got.OutOfOrder, got.Duplicates, got.WrongType}
			w := [5]int{c.want.Missing, c.want.Invented, c.want.OutOfOrder, c.want.Duplicates, c.want.WrongType}
			if g != w {
				t.Errorf("missing, invented, out of order, duplicates, wrong type: got %v, want %v\n%s", g, w, strings.Join(got.Problems, "\n"))
			}
			if got.OK() != (w == [5]int{}) {
				t.Errorf("OK() = %v with counts %v", got.OK(), g)
			}
			if len(got.Problems) != g[0]+g[1]+g[2]+g[3]+g[4] {
				t.Errorf("%d problems described for counts %v: %q", len(got.Problems), g, got.Problems)
			}
		})
	}
}

// TestSaveWatchRoundTrip: a saved record loads back as it was, so a
// failed run's watch can be checked again.
func TestSaveWatchRoundTrip(t *testing.T) {
	rec := WatchRecord{
		Ops:    []Op{op(0, 0, 1, put("a", 1), status(200)), op(1, 2, -1, del("a"), Output{})},
		Events: evs(WatchEvent{Type: "create", Key: "a", Value: 1, Member: "n1"}, WatchEvent{Type: "destroy", Key: "a", Member: "n2", Conn: 1}),
		Gone:   true,
	}
	path, err := SaveWatch(t.TempDir(), "run", rec)
	if err != nil {
		t.Fatal(err)
	}
	got, err := LoadWatch(path)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, rec) {
		t.Errorf("loaded %+v, want %+v", got, rec)
	}
}
