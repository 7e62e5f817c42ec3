package cluster

import (
	"bytes"
	"fmt"
	"log/slog"
	"net"
	"reflect"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"
)

// Failure detection with the "local" profile takes a few seconds; these
// deadlines leave room for a loaded two-core machine.
const (
	joinDeadline = 15 * time.Second
	failDeadline = 30 * time.Second
)

// syncBuffer collects a node's logs; they are printed only if the test fails.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// newTestNode starts a node on 127.0.0.1 with the local profile, shut down
// when the test ends.
func newTestNode(t *testing.T, cfg Config) *Cluster {
	t.Helper()
	c, _ := newTestNodeLogs(t, cfg)
	return c
}

// newTestNodeLogs is newTestNode that also returns the node's log.
func newTestNodeLogs(t *testing.T, cfg Config) (*Cluster, *syncBuffer) {
	t.Helper()
	logs := &syncBuffer{}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("log of node %s:\n%s", cfg.Name, logs.String())
		}
	})
	if cfg.BindAddr == "" {
		cfg.BindAddr = "127.0.0.1:0"
	}
	if cfg.Profile == "" {
		cfg.Profile = "local"
	}
	if cfg.RetryInterval == 0 {
		cfg.RetryInterval = 100 * time.Millisecond
	}
	cfg.Logger = slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	c, err := New(cfg)
	if err != nil {
		t.Fatalf("New(%s): %v", cfg.Name, err)
	}
	t.Cleanup(func() {
		if err := c.Shutdown(); err != nil {
			t.Errorf("Shutdown(%s): %v", cfg.Name, err)
		}
	})
	c.Start(t.Context())
	return c, logs
}

// freePort returns a port that was free on 127.0.0.1 for both TCP and UDP
// a moment ago, for tests that must know a node's address before it starts.
func freePort(t *testing.T) string {
	t.Helper()
	for range 10 {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatalf("listen: %v", err)
		}
		port := ln.Addr().(*net.TCPAddr).Port
		pc, err := net.ListenPacket("udp", "127.0.0.1:"+strconv.Itoa(port))
		ln.Close()
		if err != nil {
			continue
		}
		pc.Close()
		return strconv.Itoa(port)
	}
	t.Fatal("no port free for both TCP and UDP")
	return ""
}

// eventually polls check until it returns "" or the deadline passes, then
// fails with the last thing check reported.
func eventually(t *testing.T, deadline time.Duration, check func() string) {
	t.Helper()
	end := time.Now().Add(deadline)
	for {
		msg := check()
		if msg == "" {
			return
		}
		if time.Now().After(end) {
			t.Fatalf("after %v: %s", deadline, msg)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// waitAlive waits until c's alive members are exactly want.
func waitAlive(t *testing.T, c *Cluster, want ...string) {
	t.Helper()
	eventually(t, joinDeadline, func() string {
		if got := names(c.Alive()); !slices.Equal(got, want) {
			return fmt.Sprintf("%s's alive members: got %v, want %v", c.LocalName(), got, want)
		}
		return ""
	})
}

// waitStatus waits until c sees member name in status want.
func waitStatus(t *testing.T, c *Cluster, name string, want Status, deadline time.Duration) Member {
	t.Helper()
	var found Member
	eventually(t, deadline, func() string {
		for _, m := range c.Members() {
			if m.Name == name {
				found = m
				if m.Status == want {
					return ""
				}
				return fmt.Sprintf("%s's view of %s: got %v, want %v", c.LocalName(), name, m.Status, want)
			}
		}
		return fmt.Sprintf("%s's view of %s: got absent, want %v", c.LocalName(), name, want)
	})
	return found
}

func TestThreeNodesJoinThroughSeedList(t *testing.T) {
	t.Parallel()
	addrs := []string{"127.0.0.1:" + freePort(t), "127.0.0.1:" + freePort(t), "127.0.0.1:" + freePort(t)}
	// Every node gets the same list: itself included, one name that never
	// resolves, and one seed by DNS name.
	_, portB, _ := net.SplitHostPort(addrs[1])
	seeds := []string{"does-not-exist.invalid:7946", addrs[0], "localhost:" + portB, addrs[2]}
	metas := map[string]Meta{
		"a": {RESTURL: "http://127.0.0.1:8082", InternalAddr: "127.0.0.1:7072", Groups: []string{"east"}, BootstrapExpect: 3, Version: "test"},
		"b": {RESTURL: "http://127.0.0.1:8080", InternalAddr: "127.0.0.1:7070", Groups: []string{"east", "ssd"}, BootstrapExpect: 3, Version: "test"},
		"c": {RESTURL: "http://127.0.0.1:8081", InternalAddr: "127.0.0.1:7071", BootstrapExpect: 3, Version: "test"},
	}
	var nodes []*Cluster
	for i, name := range []string{"a", "b", "c"} {
		nodes = append(nodes, newTestNode(t, Config{Name: name, BindAddr: addrs[i], Meta: metas[name], Join: seeds}))
	}

	for _, c := range nodes {
		waitAlive(t, c, "a", "b", "c")
	}
	for _, c := range nodes {
		for i, m := range c.Members() {
			want := Member{Name: m.Name, GossipAddr: addrs[i], Meta: metas[m.Name], Status: StatusAlive, Since: m.Since}
			if !reflect.DeepEqual(m, want) {
				t.Errorf("%s's view of %s: got %+v, want %+v", c.LocalName(), m.Name, m, want)
			}
		}
		wantURLs := []string{"http://127.0.0.1:8080", "http://127.0.0.1:8081", "http://127.0.0.1:8082"}
		if got := c.RESTURLs(); !slices.Equal(got, wantURLs) {
			t.Errorf("%s's RESTURLs: got %v, want %v", c.LocalName(), got, wantURLs)
		}
	}
}

// TestLeaveAndFailure: a node that leaves is seen as left, one that stops
// without leaving is seen as failed; both stay in Members and leave Alive.
func TestLeaveAndFailure(t *testing.T) {
	t.Parallel()
	a := newTestNode(t, Config{Name: "a"})
	b := newTestNode(t, Config{Name: "b", Join: []string{a.LocalAddr()}})
	c := newTestNode(t, Config{Name: "c", Join: []string{a.LocalAddr()}})
	for _, n := range []*Cluster{a, b, c} {
		waitAlive(t, n, "a", "b", "c")
	}

	// Fail b first, while a and c can both confirm it, which keeps
	// memberlist's suspicion timeout at its minimum.
	if err := b.Shutdown(); err != nil {
		t.Fatalf("Shutdown(b): %v", err)
	}
	waitStatus(t, a, "b", StatusFailed, failDeadline)
	waitStatus(t, c, "b", StatusFailed, failDeadline)

	if err := c.Leave(time.Second); err != nil {
		t.Fatalf("Leave(c): %v", err)
	}
	if err := c.Shutdown(); err != nil {
		t.Fatalf("Shutdown(c): %v", err)
	}
	// If the departure itself is lost, a still counts c as left once failure
	// detection catches up, because c's leaving flag got through.
	waitStatus(t, a, "c", StatusLeft, failDeadline)

	want := map[string]Status{"a": StatusAlive, "b": StatusFailed, "c": StatusLeft}
	got := map[string]Status{}
	for _, m := range a.Members() {
		got[m.Name] = m.Status
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("a's members: got %v, want %v", got, want)
	}
	if got := names(a.Alive()); !slices.Equal(got, []string{"a"}) {
		t.Errorf("a's alive members: got %v, want [a]", got)
	}
	if got := a.RESTURLs(); len(got) != 0 {
		t.Errorf("a's RESTURLs (a advertises none): got %v, want none", got)
	}
}

// TestFailedMemberComesBack: a node restarted under its old name, at a new
// address, is alive again with a fresh Since.
func TestFailedMemberComesBack(t *testing.T) {
	t.Parallel()
	a := newTestNode(t, Config{Name: "a"})
	b := newTestNode(t, Config{Name: "b", Join: []string{a.LocalAddr()}, Meta: Meta{Version: "old"}})
	waitAlive(t, a, "a", "b")

	if err := b.Shutdown(); err != nil {
		t.Fatalf("Shutdown(b): %v", err)
	}
	failed := waitStatus(t, a, "b", StatusFailed, failDeadline)

	b2 := newTestNode(t, Config{Name: "b", Join: []string{a.LocalAddr()}, Meta: Meta{Version: "new"}})
	back := waitStatus(t, a, "b", StatusAlive, joinDeadline)
	if back.GossipAddr != b2.LocalAddr() || back.Version != "new" || !back.Since.After(failed.Since) {
		t.Errorf("a's view of restarted b: got %s version %q since %v, want %s version %q since after %v",
			back.GossipAddr, back.Version, back.Since, b2.LocalAddr(), "new", failed.Since)
	}
	waitAlive(t, b2, "a", "b")
}

// TestRestartWithNewMeta: a node restarted at once at the same address
// with new metadata is seen with the new metadata.
func TestRestartWithNewMeta(t *testing.T) {
	t.Parallel()
	a := newTestNode(t, Config{Name: "a"})
	b := newTestNode(t, Config{Name: "b", Join: []string{a.LocalAddr()}, Meta: Meta{RESTURL: "http://127.0.0.1:1"}})
	waitAlive(t, a, "a", "b")
	if err := b.Shutdown(); err != nil {
		t.Fatalf("Shutdown(b): %v", err)
	}

	b2 := newTestNode(t, Config{Name: "b", BindAddr: b.LocalAddr(), Join: []string{a.LocalAddr()}, Meta: Meta{RESTURL: "http://127.0.0.1:2"}})
	eventually(t, joinDeadline, func() string {
		if got := a.RESTURLs(); !slices.Equal(got, []string{"http://127.0.0.1:2"}) {
			return fmt.Sprintf("a's RESTURLs: got %v, want [http://127.0.0.1:2]", got)
		}
		return ""
	})
	waitAlive(t, b2, "a", "b")
}

func TestSubscribe(t *testing.T) {
	t.Parallel()
	a := newTestNode(t, Config{Name: "a"})
	ch, unsub := a.Subscribe()
	defer unsub()

	waitSignal := func(what string) {
		t.Helper()
		select {
		case <-ch:
		case <-time.After(joinDeadline):
			t.Fatalf("%s: got no signal within %v, want one", what, joinDeadline)
		}
	}

	b := newTestNode(t, Config{Name: "b", Join: []string{a.LocalAddr()}})
	waitSignal("b joins")
	waitAlive(t, a, "a", "b")
	waitAlive(t, b, "a", "b")
	// Drop a signal left over from changes seen while waiting.
	select {
	case <-ch:
	default:
	}

	if err := b.Leave(time.Second); err != nil {
		t.Fatalf("Leave(b): %v", err)
	}
	if err := b.Shutdown(); err != nil {
		t.Fatalf("Shutdown(b): %v", err)
	}
	waitSignal("b leaves")
	waitStatus(t, a, "b", StatusLeft, failDeadline)

	unsub()
	if _, ok := <-ch; ok {
		t.Fatal("after unsubscribe: got a signal, want the channel closed")
	}
	if n := len(a.view.subs); n != 0 {
		t.Errorf("subscribers after unsubscribe: got %d, want 0", n)
	}
	// Changes after unsubscribing reach the view without touching the
	// closed channel.
	newTestNode(t, Config{Name: "c", Join: []string{a.LocalAddr()}})
	waitAlive(t, a, "a", "c")
}

func TestLifecycleCallsAreSafeToRepeat(t *testing.T) {
	a := newTestNode(t, Config{Name: "a"})
	for i := range 2 {
		if err := a.Leave(time.Second); err != nil {
			t.Fatalf("Leave #%d: %v", i+1, err)
		}
	}
	waitStatus(t, a, "a", StatusLeft, time.Second)
	if err := a.Shutdown(); err != nil {
		t.Fatalf("first Shutdown: %v", err)
	}
	if err := a.Shutdown(); err != nil {
		t.Errorf("second Shutdown: got %v, want nil", err)
	}
	if err := a.Leave(time.Second); err == nil {
		t.Error("Leave after Shutdown: got nil, want an error")
	}
}

// TestTwoClustersInOneProcess: nothing is shared between Cluster values, so
// two separate clusters run side by side without seeing each other.
func TestTwoClustersInOneProcess(t *testing.T) {
	t.Parallel()
	a1 := newTestNode(t, Config{Name: "a"})
	b1 := newTestNode(t, Config{Name: "b", Join: []string{a1.LocalAddr()}})
	a2 := newTestNode(t, Config{Name: "a"})
	c2 := newTestNode(t, Config{Name: "c", Join: []string{a2.LocalAddr()}})
	waitAlive(t, a1, "a", "b")
	waitAlive(t, b1, "a", "b")
	waitAlive(t, a2, "a", "c")
	waitAlive(t, c2, "a", "c")
}
