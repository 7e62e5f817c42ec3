package store

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/kvnode/kvnode/cluster"
	"github.com/kvnode/kvnode/internal/waitfor"
	"github.com/kvnode/kvnode/store/query"
	"github.com/kvnode/kvnode/store/raftgroup"
	"github.com/kvnode/kvnode/store/regions"
)

// world is a fake gossip view shared by the nodes of a test: the test says
// who is alive, failed or gone, and every node's Membership reads it.
type world struct {
	mu      sync.Mutex
	members map[string]cluster.Member
	subs    map[int]chan struct{}
	nextSub int
}

func newWorld() *world {
	return &world{members: map[string]cluster.Member{}, subs: map[int]chan struct{}{}}
}

func (w *world) set(m cluster.Member) {
	w.mu.Lock()
	defer w.mu.Unlock()
	m.Since = time.Now()
	w.members[m.Name] = m
	for _, ch := range w.subs {
		select {
		case ch <- struct{}{}:
		default:
		}
	}
}

func (w *world) setStatus(name string, st cluster.Status) {
	w.mu.Lock()
	m := w.members[name]
	w.mu.Unlock()
	m.Status = st
	w.set(m)
}

func (w *world) Members() []cluster.Member {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := make([]cluster.Member, 0, len(w.members))
	for _, m := range w.members {
		out = append(out, m)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

func (w *world) Subscribe() (<-chan struct{}, func()) {
	w.mu.Lock()
	defer w.mu.Unlock()
	id := w.nextSub
	w.nextSub++
	ch := make(chan struct{}, 1)
	w.subs[id] = ch
	return ch, func() {
		w.mu.Lock()
		delete(w.subs, id)
		w.mu.Unlock()
	}
}

// testRaft is fast enough for tests yet tolerant of a loaded 2-core machine
// running them under the race detector.
func testRaft() raftgroup.Config {
	return raftgroup.Config{
		HeartbeatTimeout:   300 * time.Millisecond,
		ElectionTimeout:    300 * time.Millisecond,
		LeaderLeaseTimeout: 200 * time.Millisecond,
		CommitTimeout:      5 * time.Millisecond,
	}
}

// testNode is one store in a test cluster.
type testNode struct {
	name string
	dir  string
	addr string
	*Store
	// The data API and the query engine over the store, wired as package
	// node wires them.
	*regions.API
	*query.Engine
}

type testCluster struct {
	mu     sync.Mutex // guards nodes against readers in other goroutines
	t      testing.TB
	world  *world
	nodes  map[string]*testNode
	expect int
	tune   func(*Config)
	base   string
}

func newTestCluster(t testing.TB, expect int) *testCluster {
	t.Helper()
	// The base dir first: cleanups run in reverse order, so the nodes are
	// closed before their data dirs are removed.
	tc := &testCluster{t: t, world: newWorld(), nodes: map[string]*testNode{}, expect: expect, base: t.TempDir()}
	t.Cleanup(func() {
		for _, n := range tc.nodes {
			if n.Store != nil {
				_ = n.Close()
			}
		}
	})
	return tc
}

func testLogger(t testing.TB, name string) *slog.Logger {
	if os.Getenv("KVNODE_TEST_LOG") != "" {
		return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug})).With("node", name)
	}
	return slog.New(slog.DiscardHandler)
}

// start starts (or restarts, reusing its data dir) the named node and marks
// it alive in the gossip view.
func (tc *testCluster) start(name string) *testNode {
	tc.t.Helper()
	tc.mu.Lock()
	n := tc.nodes[name]
	if n == nil {
		n = &testNode{name: name, dir: filepath.Join(tc.base, name)}
		tc.nodes[name] = n
	}
	tc.mu.Unlock()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tc.t.Fatalf("listen: %v", err)
	}
	if n.addr != "" {
		// Keep the address across restarts when the port is still free.
		if ln2, err := net.Listen("tcp", n.addr); err == nil {
			_ = ln.Close()
			ln = ln2
		}
	}
	n.addr = ln.Addr().String()
	cfg := Config{
		NodeName:          name,
		DataDir:           n.dir,
		Listener:          ln,
		Advertise:         n.addr,
		BootstrapExpect:   tc.expect,
		Members:           tc.world,
		Raft:              testRaft(),
		ReconcileInterval: 100 * time.Millisecond,
		PromoteAfter:      200 * time.Millisecond,
		LeaderWait:        5 * time.Second,
		Logger:            testLogger(tc.t, name),
	}
	if tc.tune != nil {
		tc.tune(&cfg)
	}
	s, err := New(cfg)
	if err != nil {
		tc.t.Fatalf("start %s: %v", name, err)
	}
	regs := regions.New(s.Router(), cfg.Logger)
	tc.mu.Lock()
	n.Store, n.API, n.Engine = s, regs, query.New(s.Router(), regs.Parts())
	tc.mu.Unlock()
	s.Start()
	tc.world.set(cluster.Member{Name: name, Meta: cluster.Meta{InternalAddr: n.addr, BootstrapExpect: tc.expect}, Status: cluster.StatusAlive})
	return n
}

// crash stops a node without leaving (as a kill would), and marks it failed.
func (tc *testCluster) crash(name string) {
	tc.t.Helper()
	tc.mu.Lock()
	n := tc.nodes[name]
	st := n.Store
	n.Store, n.API, n.Engine = nil, nil, nil
	tc.mu.Unlock()
	if err := st.Close(); err != nil {
		tc.t.Logf("close %s: %v", name, err)
	}
	tc.world.setStatus(name, cluster.StatusFailed)
}

// leader waits for a leader among running nodes and returns it.
func (tc *testCluster) leader() *testNode {
	tc.t.Helper()
	var found *testNode
	waitfor.Cond(tc.t, 15*time.Second, "a leader", func() bool {
		for _, n := range tc.nodes {
			if n.Store != nil && n.IsLeader() {
				found = n
				return true
			}
		}
		return false
	})
	return found
}

// followers returns running nodes other than the leader.
func (tc *testCluster) followers(leader *testNode) []*testNode {
	var out []*testNode
	for _, n := range tc.nodes {
		if n.Store != nil && n != leader {
			out = append(out, n)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].name < out[j].name })
	return out
}

func ctxT(t testing.TB, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

// voters returns the group 0 voters and non-voters as the leader sees them.
func (tc *testCluster) suffrage(n *testNode) (voters, nonvoters []string) {
	tc.t.Helper()
	conf, err := n.groups.control().Configuration()
	if err != nil {
		tc.t.Fatalf("configuration: %v", err)
	}
	for _, s := range conf.Servers {
		if s.Suffrage == 0 { // raft.Voter
			voters = append(voters, string(s.ID))
		} else {
			nonvoters = append(nonvoters, string(s.ID))
		}
	}
	sort.Strings(voters)
	sort.Strings(nonvoters)
	return voters, nonvoters
}

func names(prefix string, n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("%s%d", prefix, i)
	}
	return out
}
