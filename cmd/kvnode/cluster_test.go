package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/kvnode/kvnode/store"
)

// These tests run several complete nodes (REST, gossip, store) in one test
// process on loopback, wired exactly as the binary wires them.

type inProcess struct {
	t     *testing.T
	base  string
	nodes map[string]*node
	dirs  map[string]string
	seeds []string // gossip addresses of every node started so far
	// tune, when set, adjusts a node's configuration before it starts.
	tune func(name string, cfg *Config)
	// resolver, when set, resolves --join names (see dnsjoin_test.go).
	resolver *net.Resolver
	// logger, when set, gives each node its logger (see logtap_test.go).
	logger func(name string) *slog.Logger
}

func newInProcess(t *testing.T) *inProcess {
	ip := &inProcess{t: t, base: t.TempDir(), nodes: map[string]*node{}, dirs: map[string]string{}}
	t.Cleanup(func() {
		for _, n := range ip.nodes {
			_ = n.shutdown(false)
		}
	})
	return ip
}

func testOptions() nodeOptions {
	return nodeOptions{
		raft: store.RaftConfig{
			HeartbeatTimeout:   300 * time.Millisecond,
			ElectionTimeout:    300 * time.Millisecond,
			LeaderLeaseTimeout: 200 * time.Millisecond,
		},
		gossipProfile: "local",
		retryJoin:     200 * time.Millisecond,
		promoteAfter:  200 * time.Millisecond,
	}
}

func nodeLogger(name string) *slog.Logger {
	if os.Getenv("KVNODE_TEST_LOG") != "" {
		return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug})).With("node", name)
	}
	return slog.New(slog.DiscardHandler)
}

// start starts (or restarts from its data dir, on new ports) a node.
func (ip *inProcess) start(name string, expect int) *node {
	ip.t.Helper()
	dir, ok := ip.dirs[name]
	if !ok {
		dir = filepath.Join(ip.base, name)
		ip.dirs[name] = dir
	}
	cfg := defaultConfig()
	cfg.Name = name
	cfg.DataDir = dir
	cfg.HTTPAddr = "127.0.0.1:0"
	cfg.InternalAddr = "127.0.0.1:0"
	cfg.GossipAddr = "127.0.0.1:0"
	cfg.BootstrapExpect = expect
	cfg.ShutdownTimeout = 10 * time.Second
	// Like a real seed list: every member ever started, dead ones included.
	cfg.Join = slices.Clone(ip.seeds)
	if ip.tune != nil {
		ip.tune(name, &cfg)
	}
	if err := cfg.Validate(); err != nil {
		ip.t.Fatalf("config: %v", err)
	}
	opts := testOptions()
	opts.resolver = ip.resolver
	logger := nodeLogger(name)
	if ip.logger != nil {
		logger = ip.logger(name)
	}
	n, err := startNode(context.Background(), cfg, opts, logger)
	if err != nil {
		ip.t.Fatalf("start %s: %v", name, err)
	}
	ip.seeds = append(ip.seeds, n.cluster.LocalAddr())
	ip.nodes[name] = n
	return n
}

func (ip *inProcess) stop(name string, graceful bool) {
	ip.t.Helper()
	if err := ip.nodes[name].shutdown(graceful); err != nil {
		ip.t.Errorf("shutdown %s: %v", name, err)
	}
	delete(ip.nodes, name)
}

type reply struct {
	status int
	body   string
	header http.Header
}

func call(t *testing.T, n *node, method, path, body string) reply {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, "http://"+n.httpLn.Addr().String()+path, rd)
	if err != nil {
		t.Fatal(err)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s on %s: %v", method, path, n.cfg.Name, err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	return reply{resp.StatusCode, string(data), resp.Header}
}

func mustCall(t *testing.T, n *node, method, path, body string, want int) reply {
	t.Helper()
	r := call(t, n, method, path, body)
	if r.status != want {
		t.Fatalf("%s %s on %s = %d %s, want %d", method, path, n.cfg.Name, r.status, r.body, want)
	}
	return r
}

func waitUntil(t *testing.T, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	start := time.Now()
	deadline := start.Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s", timeout, what)
		}
		time.Sleep(25 * time.Millisecond)
	}
	if d := time.Since(start); d > time.Second {
		t.Logf("waited %v for %s", d.Round(time.Millisecond), what)
	}
}

type viewJSON struct {
	Leader  string `json:"leader"`
	Members []struct {
		Name     string `json:"name"`
		Status   string `json:"status"`
		Suffrage string `json:"suffrage"`
	} `json:"members"`
}

func view(t *testing.T, n *node) viewJSON {
	t.Helper()
	var v viewJSON
	r := mustCall(t, n, "GET", "/management/v1/cluster", "", 200)
	if err := json.Unmarshal([]byte(r.body), &v); err != nil {
		t.Fatalf("decode cluster view: %v", err)
	}
	return v
}

func (v viewJSON) suffrage(name string) string {
	for _, m := range v.Members {
		if m.Name == name {
			return m.Suffrage
		}
	}
	return ""
}

// leader waits until every node names the same leader.
func (ip *inProcess) leader() *node {
	ip.t.Helper()
	var found *node
	waitUntil(ip.t, 20*time.Second, "nodes to agree on a leader", func() bool {
		leader := ""
		for _, n := range ip.nodes {
			l := view(ip.t, n).Leader
			if l == "" || (leader != "" && l != leader) {
				return false
			}
			leader = l
		}
		found = ip.nodes[leader]
		return found != nil
	})
	return found
}

func TestInProcessCluster(t *testing.T) {
	ip := newInProcess(t)
	for _, name := range []string{"a", "b", "c"} {
		ip.start(name, 3)
	}
	leader := ip.leader()
	a, b, c := ip.nodes["a"], ip.nodes["b"], ip.nodes["c"]

	// /servers from gossip lists all three.
	waitUntil(t, 10*time.Second, "/servers to list 3 members", func() bool {
		var urls []string
		_ = json.Unmarshal([]byte(call(t, c, "GET", "/kv/v1/servers", "").body), &urls)
		return len(urls) == 3
	})

	// A write on one node is readable on the others.
	mustCall(t, b, "POST", "/management/v1/regions", `{"name":"orders","type":"REPLICATE"}`, 201)
	const n = 40
	for i := 0; i < n; i++ {
		node := []*node{a, b, c}[i%3]
		mustCall(t, node, "PUT", fmt.Sprintf("/kv/v1/orders/k%d", i), fmt.Sprintf(`{"i":%d}`, i), 200)
	}
	for _, node := range []*node{a, b, c} {
		for i := 0; i < n; i++ {
			r := mustCall(t, node, "GET", fmt.Sprintf("/kv/v1/orders/k%d", i), "", 200)
			if want := fmt.Sprintf(`{"i":%d}`, i); r.body != want {
				t.Fatalf("%s: k%d = %s, want %s", node.cfg.Name, i, r.body, want)
			}
		}
	}

	// Queries over REST across nodes: a named query created on one node
	// runs on the others; an index created on one is used on all; a
	// partitioned region is queried from every node.
	q := url.QueryEscape("SELECT o.i FROM /orders o WHERE o.i >= $1 AND o.i < $2 ORDER BY o.i")
	mustCall(t, a, "POST", "/kv/v1/queries?id=window&q="+q, "", 201)
	mustCall(t, b, "POST", "/management/v1/regions/orders/indexes", `{"name":"byI","expression":"o.i","from":"/orders o"}`, 201)
	mustCall(t, b, "POST", "/management/v1/regions", `{"name":"parts","type":"PARTITION"}`, 201)
	for i := 0; i < 30; i++ {
		mustCall(t, []*node{a, b, c}[i%3], "PUT", fmt.Sprintf("/kv/v1/parts/p%d", i), fmt.Sprintf(`{"i":%d,"g":%d}`, i, i%3), 200)
	}
	for _, node := range []*node{a, b, c} {
		r := mustCall(t, node, "POST", "/kv/v1/queries/window", `[{"@type":"int","@value":5},{"@type":"int","@value":9}]`, 200)
		if r.body != "[5,6,7,8]" {
			t.Fatalf("%s: named query window(5, 9) = %s, want [5,6,7,8]", node.cfg.Name, r.body)
		}
		r = mustCall(t, node, "GET", "/kv/v1/queries/adhoc?q="+url.QueryEscape("SELECT p.g AS g, COUNT(*) AS n FROM /parts p GROUP BY p.g ORDER BY g"), "", 200)
		if r.body != `[{"g":0,"n":10},{"g":1,"n":10},{"g":2,"n":10}]` {
			t.Fatalf("%s: grouped query over the partitioned region = %s", node.cfg.Name, r.body)
		}
	}

	// The leader is killed (shut down without leaving): a new leader, no
	// acknowledged write lost, writes resume.
	old := leader.cfg.Name
	ip.stop(old, false)
	newLeader := ip.leader()
	if newLeader.cfg.Name == old {
		t.Fatalf("stopped node %s is still leader", old)
	}
	for _, node := range ip.nodes {
		r := mustCall(t, node, "GET", "/kv/v1/orders?limit=ALL", "", 200)
		var got map[string][]json.RawMessage
		if err := json.Unmarshal([]byte(r.body), &got); err != nil || len(got["orders"]) != n {
			t.Fatalf("%s after leader loss: %d entries (%v), want %d", node.cfg.Name, len(got["orders"]), err, n)
		}
	}
	for _, node := range ip.nodes {
		mustCall(t, node, "PUT", "/kv/v1/orders/after-"+node.cfg.Name, `{"ok":1}`, 200)
	}

	// A 4th node joins as a non-voter and receives all data.
	d := ip.start("d", 3)
	waitUntil(t, 20*time.Second, "d to hold every entry", func() bool {
		r := call(t, d, "HEAD", "/kv/v1/orders?consistency=stale", "")
		return r.status == 200 && r.header.Get("Resource-Count") == fmt.Sprint(n+2)
	})
	// With a voter down, d is promoted to keep three live voters.
	waitUntil(t, 20*time.Second, "d to become a voter", func() bool {
		return view(t, newLeader).suffrage("d") == "voter"
	})

	// The stopped node restarts from its data dir, on new ports: the leader
	// updates its address and it catches up, including the writes made
	// while it was down.
	back := ip.start(old, 3)
	waitUntil(t, 20*time.Second, old+" to catch up after restart", func() bool {
		r := call(t, back, "GET", "/kv/v1/orders/after-"+d.cfg.Name, "")
		if r.status == 404 { // d wrote nothing yet; use a survivor's write
			for name := range ip.nodes {
				if name != old && name != "d" {
					r = call(t, back, "GET", "/kv/v1/orders/after-"+name, "")
					break
				}
			}
		}
		return r.status == 200
	})
	mustCall(t, back, "PUT", "/kv/v1/orders/from-restarted", `{"v":1}`, 200)
	mustCall(t, d, "GET", "/kv/v1/orders/from-restarted", "", 200)

	// With all four alive, voters settle at three.
	waitUntil(t, 20*time.Second, "three voters among four live members", func() bool {
		v := view(t, ip.leader())
		voters := 0
		for _, m := range v.Members {
			if m.Suffrage == "voter" {
				voters++
			}
		}
		return voters == 3
	})

	// A graceful shutdown leaves Raft and gossip.
	ip.stop("d", true)
	waitUntil(t, 20*time.Second, "d to be gone from Raft and marked left", func() bool {
		for _, node := range ip.nodes {
			v := view(t, node)
			if v.suffrage("d") != "" {
				return false
			}
			for _, m := range v.Members {
				if m.Name == "d" && m.Status != "left" {
					return false
				}
			}
		}
		return true
	})
	names := []string{}
	for name := range ip.nodes {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		mustCall(t, ip.nodes[name], "PUT", "/kv/v1/orders/end-"+name, `{}`, 200)
	}
}

// TestRunServesUntilCancelled runs the real entry point with flags and env
// and cancels it as SIGTERM would.
func TestRunServesUntilCancelled(t *testing.T) {
	dir := t.TempDir()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	httpAddr := freeAddr(t)
	go func() {
		done <- runWithOutput(ctx, []string{
			"--name", "solo", "--http-addr", httpAddr, "--internal-addr", "127.0.0.1:0",
			"--regions", "orders:REPLICATE",
		}, []string{
			"KVNODE_DATA_DIR=" + dir, "KVNODE_GOSSIP_ADDR=127.0.0.1:0", "KVNODE_LOG_LEVEL=warn",
		}, io.Discard)
	}()
	url := "http://" + httpAddr
	waitUntil(t, 15*time.Second, "the region from --regions to exist", func() bool {
		resp, err := http.Get(url + "/kv/v1/orders")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == 200
	})
	req, _ := http.NewRequest("PUT", url+"/kv/v1/orders/1", strings.NewReader(`{"a":1}`))
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("PUT: %v %v", resp, err)
	}
	resp.Body.Close()
	if _, err := os.Stat(filepath.Join(dir, "raft", "g0", "raft.db")); err != nil {
		t.Fatalf("KVNODE_DATA_DIR not used: %v", err)
	}
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("run returned %v after cancel, want nil", err)
		}
	case <-time.After(20 * time.Second):
		t.Fatalf("run did not return within 20s of cancel")
	}
}

func TestRunRejectsBadConfig(t *testing.T) {
	err := runWithOutput(context.Background(), []string{"--bootstrap-expect", "0"}, nil, io.Discard)
	if err == nil || !strings.Contains(err.Error(), "bootstrap-expect") {
		t.Fatalf("run with a bad flag = %v, want an error naming it", err)
	}
}

// freeAddr returns a loopback address with a port that was free a moment ago.
func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}
