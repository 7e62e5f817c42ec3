package cluster

import (
	"log/slog"
	"net"
	"reflect"
	"testing"
	"time"

	"github.com/hashicorp/memberlist"
)

// fakeClock hands out times one second apart, so every Since is distinct.
type fakeClock struct{ t time.Time }

func (c *fakeClock) now() time.Time {
	c.t = c.t.Add(time.Second)
	return c.t
}

func newTestView() (*view, *fakeClock) {
	clock := &fakeClock{t: time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)}
	return newView(slogDiscard(), clock.now), clock
}

func slogDiscard() *slog.Logger { return slog.New(slog.DiscardHandler) }

// node is what memberlist hands the event delegate: the node's latest
// metadata, and State left at its zero value, as memberlist v0.5.4 does.
func node(t *testing.T, name string, port uint16, m Meta) *memberlist.Node {
	t.Helper()
	return nodeMeta(t, name, port, wireMeta{Meta: m})
}

func nodeMeta(t *testing.T, name string, port uint16, wm wireMeta) *memberlist.Node {
	t.Helper()
	b, err := encodeMeta(wm)
	if err != nil {
		t.Fatalf("encodeMeta: %v", err)
	}
	return &memberlist.Node{Name: name, Addr: net.IPv4(10, 0, 0, 1), Port: port, Meta: b}
}

func member(t *testing.T, v *view, name string) Member {
	t.Helper()
	for _, m := range v.list(func(Member) bool { return true }) {
		if m.Name == name {
			return m
		}
	}
	t.Fatalf("member %q: got absent, want present", name)
	return Member{}
}

// signalled reports whether ch holds a signal, consuming it.
func signalled(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

// TestViewLifecycle walks one member through every status and checks what a
// reader of the view sees at each step.
func TestViewLifecycle(t *testing.T) {
	v, _ := newTestView()
	ch, unsub := v.subscribe()
	defer unsub()
	meta1 := Meta{RESTURL: "http://10.0.0.1:8080", InternalAddr: "10.0.0.1:7070", Groups: []string{"g1"}, BootstrapExpect: 3, Version: "v1"}
	meta2 := Meta{RESTURL: "http://10.0.0.1:8081", InternalAddr: "10.0.0.1:7071", Groups: []string{"g2"}, BootstrapExpect: 3, Version: "v2"}

	v.NotifyJoin(node(t, "b", 7946, meta1))
	joined := member(t, v, "b")
	want := Member{Name: "b", GossipAddr: "10.0.0.1:7946", Meta: meta1, Status: StatusAlive, Since: joined.Since}
	if !reflect.DeepEqual(joined, want) {
		t.Fatalf("after join: got %+v, want %+v", joined, want)
	}
	if !signalled(ch) {
		t.Error("join: got no signal, want one")
	}

	v.NotifyUpdate(node(t, "b", 7946, meta2))
	updated := member(t, v, "b")
	if !reflect.DeepEqual(updated.Meta, meta2) {
		t.Errorf("after update: got meta %+v, want %+v", updated.Meta, meta2)
	}
	if !updated.Since.Equal(joined.Since) {
		t.Errorf("after meta update: got Since %v, want unchanged %v", updated.Since, joined.Since)
	}
	if !signalled(ch) {
		t.Error("update: got no signal, want one")
	}

	v.NotifyLeave(node(t, "b", 7946, meta2))
	failed := member(t, v, "b")
	if failed.Status != StatusFailed || !failed.Since.After(updated.Since) {
		t.Errorf("after failure: got %v since %v, want failed since after %v", failed.Status, failed.Since, updated.Since)
	}
	if !signalled(ch) {
		t.Error("failure: got no signal, want one")
	}

	// Back at a new address, as a rescheduled pod would be.
	v.NotifyJoin(node(t, "b", 8000, meta1))
	back := member(t, v, "b")
	signalled(ch)
	if back.Status != StatusAlive || back.GossipAddr != "10.0.0.1:8000" || !back.Since.After(failed.Since) {
		t.Errorf("after return: got %v at %s since %v, want alive at 10.0.0.1:8000 since after %v",
			back.Status, back.GossipAddr, back.Since, failed.Since)
	}

	// A graceful leave: first the metadata flagged leaving, which already
	// makes b left (the announcement is final for this run), then the
	// departure itself, which changes nothing more.
	v.NotifyUpdate(nodeMeta(t, "b", 8000, wireMeta{Meta: meta1, leaving: true}))
	if got := member(t, v, "b"); got.Status != StatusLeft || !got.Since.After(back.Since) {
		t.Errorf("after leaving flag: got %v since %v, want left since after %v", got.Status, got.Since, back.Since)
	}
	if !signalled(ch) {
		t.Error("leaving flag: got no signal, want one")
	}
	v.NotifyLeave(nodeMeta(t, "b", 8000, wireMeta{Meta: meta1, leaving: true}))
	if got := member(t, v, "b").Status; got != StatusLeft {
		t.Errorf("after graceful leave: got %v, want %v", got, StatusLeft)
	}
	if signalled(ch) {
		t.Error("departure after the leaving flag: got a signal, want none (nothing visible changed)")
	}
}

func TestViewSkipsUnreadableMeta(t *testing.T) {
	v, _ := newTestView()
	ch, unsub := v.subscribe()
	defer unsub()

	v.NotifyJoin(&memberlist.Node{Name: "stranger", Addr: net.IPv4(10, 0, 0, 9), Port: 7946, Meta: []byte("not kvnode")})
	if got := v.list(func(Member) bool { return true }); len(got) != 0 {
		t.Errorf("member with unreadable meta: got view %+v, want empty", got)
	}
	if signalled(ch) {
		t.Error("member with unreadable meta: got a signal, want none")
	}

	// A known member whose meta turns unreadable keeps its last meta, and
	// its status still changes.
	meta := Meta{RESTURL: "http://10.0.0.1:8080"}
	v.NotifyJoin(node(t, "b", 7946, meta))
	bad := &memberlist.Node{Name: "b", Addr: net.IPv4(10, 0, 0, 1), Port: 7946, Meta: []byte{0xff}}
	v.NotifyLeave(bad)
	got := member(t, v, "b")
	if got.Status != StatusFailed || !reflect.DeepEqual(got.Meta, meta) {
		t.Errorf("failure with unreadable meta: got %v %+v, want %v %+v", got.Status, got.Meta, StatusFailed, meta)
	}
}

func TestViewSignalsOnlyOnChangeAndCoalesces(t *testing.T) {
	v, _ := newTestView()
	ch, unsub := v.subscribe()
	defer unsub()
	meta := Meta{RESTURL: "http://10.0.0.1:8080"}

	v.NotifyJoin(node(t, "a", 7946, meta))
	v.NotifyJoin(node(t, "b", 7946, meta))
	if !signalled(ch) {
		t.Fatal("two joins: got no signal, want one")
	}
	if signalled(ch) {
		t.Error("two joins: got a second pending signal, want them coalesced into one")
	}

	v.NotifyUpdate(node(t, "b", 7946, meta))
	if signalled(ch) {
		t.Error("update that changes nothing: got a signal, want none")
	}
}

func TestViewUnsubscribe(t *testing.T) {
	v, _ := newTestView()
	ch, unsub := v.subscribe()
	unsub()
	unsub() // idempotent

	if _, ok := <-ch; ok {
		t.Error("after unsubscribe: got a value from the channel, want it closed")
	}
	if n := len(v.subs); n != 0 {
		t.Errorf("subscribers after unsubscribe: got %d, want 0", n)
	}
	// A change after unsubscribing must not send on the closed channel.
	v.NotifyJoin(node(t, "a", 7946, Meta{}))
}

func TestViewListSortedAndDetached(t *testing.T) {
	v, _ := newTestView()
	for _, name := range []string{"c", "a", "b"} {
		v.NotifyJoin(node(t, name, 7946, Meta{Groups: []string{"g"}}))
	}
	v.NotifyLeave(node(t, "b", 7946, Meta{Groups: []string{"g"}}))

	all := v.list(func(Member) bool { return true })
	if got := names(all); !reflect.DeepEqual(got, []string{"a", "b", "c"}) {
		t.Errorf("all members: got %v, want [a b c]", got)
	}
	alive := v.list(func(m Member) bool { return m.Status == StatusAlive })
	if got := names(alive); !reflect.DeepEqual(got, []string{"a", "c"}) {
		t.Errorf("alive members: got %v, want [a c]", got)
	}

	all[0].Groups[0] = "changed by caller"
	if got := member(t, v, "a").Groups[0]; got != "g" {
		t.Errorf("group after caller modified its copy: got %q, want %q", got, "g")
	}
}

func names(ms []Member) []string {
	out := make([]string, 0, len(ms))
	for _, m := range ms {
		out = append(out, m.Name)
	}
	return out
}

func TestStatusString(t *testing.T) {
	for s, want := range map[Status]string{StatusAlive: "alive", StatusFailed: "failed", StatusLeft: "left", Status(7): "Status(7)"} {
		if got := s.String(); got != want {
			t.Errorf("Status(%d).String(): got %q, want %q", int(s), got, want)
		}
	}
}
