package nodetest

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/kvnode/kvnode/internal/waitfor"
	"github.com/kvnode/kvnode/node"
	"github.com/kvnode/kvnode/store/raftgroup"
)

// Cluster is a set of in-process nodes sharing a temporary directory; the
// test's cleanup closes the ones still running.
type Cluster struct {
	t     *testing.T
	base  string
	dirs  map[string]string
	seeds []string // gossip addresses of every node started so far

	// Nodes are the running nodes by name.
	Nodes map[string]*node.Node
	// Tune, when set, adjusts a node's configuration before it starts.
	Tune func(name string, cfg *node.Config)
	// Resolver, when set, resolves --join names.
	Resolver *net.Resolver
	// Logger, when set, gives each node its logger (default: Logger).
	Logger func(name string) *slog.Logger
	// KeepAddrs restarts a node on the addresses it had (REST, internal,
	// gossip), as a member of a real deployment comes back, rather than
	// on new ports. Tests that are not about a changed address set it:
	// hashicorp/raft (1.7.3, and 1.8.0 still) reads a follower's address
	// without its lock while it replicates (updateLastAppended), so a
	// voter that comes back at a new address can make a data race that
	// -race reports (client's TestWritesWithoutQuorum, 2026-11-29).
	KeepAddrs bool
	addrs     map[string][3]string // each node's last REST, internal and gossip address
}

// New is an empty cluster.
func New(t *testing.T) *Cluster {
	c := &Cluster{t: t, base: t.TempDir(), Nodes: map[string]*node.Node{}, dirs: map[string]string{}, addrs: map[string][3]string{}}
	t.Cleanup(func() {
		for _, n := range c.Nodes {
			_ = n.Close()
		}
	})
	return c
}

// Fast shortens cfg's Raft and gossip timings for a cluster on loopback.
func Fast(cfg *node.Config) {
	cfg.Raft = raftgroup.Config{
		HeartbeatTimeout:   300 * time.Millisecond,
		ElectionTimeout:    300 * time.Millisecond,
		LeaderLeaseTimeout: 200 * time.Millisecond,
	}
	cfg.GossipProfile = "local"
	cfg.RetryJoin = 200 * time.Millisecond
	cfg.PromoteAfter = 200 * time.Millisecond
}

// Logger discards a node's logs, or writes them at debug level to
// standard error when KVNODE_TEST_LOG is set.
func Logger(name string) *slog.Logger {
	if os.Getenv("KVNODE_TEST_LOG") != "" {
		return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug})).With("node", name)
	}
	return slog.New(slog.DiscardHandler)
}

// Start starts (or restarts from its data dir, on new ports) the node
// name of a cluster that expects expect members, joined to every node
// started before it, and fails the test if it cannot.
func (c *Cluster) Start(name string, expect int) *node.Node {
	c.t.Helper()
	dir, ok := c.dirs[name]
	if !ok {
		dir = filepath.Join(c.base, name)
		c.dirs[name] = dir
	}
	cfg := node.Default()
	cfg.Name = name
	cfg.DataDir = dir
	cfg.HTTPAddr = "127.0.0.1:0"
	cfg.InternalAddr = "127.0.0.1:0"
	cfg.GossipAddr = "127.0.0.1:0"
	if a, ok := c.addrs[name]; ok && c.KeepAddrs {
		cfg.HTTPAddr, cfg.InternalAddr, cfg.GossipAddr = a[0], a[1], a[2]
	}
	cfg.BootstrapExpect = expect
	cfg.ShutdownTimeout = 10 * time.Second
	// Like a real seed list: every member ever started, dead ones included.
	cfg.Join = slices.Clone(c.seeds)
	Fast(&cfg)
	cfg.Resolver = c.Resolver
	cfg.Logger = Logger(name)
	if c.Logger != nil {
		cfg.Logger = c.Logger(name)
	}
	if c.Tune != nil {
		c.Tune(name, &cfg)
	}
	if err := cfg.Validate(); err != nil {
		c.t.Fatalf("config: %v", err)
	}
	n, err := node.Start(context.Background(), cfg)
	if err != nil {
		c.t.Fatalf("start %s: %v", name, err)
	}
	c.seeds = append(c.seeds, n.GossipAddr())
	c.Nodes[name] = n
	c.addrs[name] = [3]string{n.HTTPAddr(), n.InternalAddr(), n.GossipAddr()}
	return n
}

// Stop shuts the node name down, gracefully (it hands its leaderships over
// and stays a member, or leaves with Config.LeaveOnShutdown) or not (it
// fails).
func (c *Cluster) Stop(name string, graceful bool) {
	c.t.Helper()
	n := c.Nodes[name]
	stop := n.Close
	if graceful {
		stop = n.Shutdown
	}
	if err := stop(); err != nil {
		c.t.Errorf("shutdown %s: %v", name, err)
	}
	delete(c.Nodes, name)
}

// Leader waits until every running node names the same control-group
// leader and returns it.
func (c *Cluster) Leader() *node.Node {
	c.t.Helper()
	var found *node.Node
	waitfor.Cond(c.t, 20*time.Second, "nodes to agree on a leader", func() bool {
		leader := ""
		for _, n := range c.Nodes {
			l := View(c.t, n).Leader
			if l == "" || (leader != "" && l != leader) {
				return false
			}
			leader = l
		}
		found = c.Nodes[leader]
		return found != nil
	})
	return found
}

// Reply is an HTTP answer read whole.
type Reply struct {
	Status int
	Body   string
	Header http.Header
}

// Call sends a request to n's REST API (a JSON body when body is not
// empty) and reads the answer; a transport error fails the test.
func Call(t *testing.T, n *node.Node, method, path, body string) Reply {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, "http://"+n.HTTPAddr()+path, rd)
	if err != nil {
		t.Fatal(err)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s on %s: %v", method, path, n.Name(), err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	return Reply{resp.StatusCode, string(data), resp.Header}
}

// MustCall is Call that fails the test unless the status is want.
func MustCall(t *testing.T, n *node.Node, method, path, body string, want int) Reply {
	t.Helper()
	r := Call(t, n, method, path, body)
	if r.Status != want {
		t.Fatalf("%s %s on %s = %d %s, want %d", method, path, n.Name(), r.Status, r.Body, want)
	}
	return r
}

// ClusterView is GET /management/v1/cluster.
type ClusterView struct {
	Leader  string `json:"leader"`
	Members []struct {
		Name     string `json:"name"`
		Status   string `json:"status"`
		Suffrage string `json:"suffrage"`
	} `json:"members"`
}

// View reads n's view of the cluster.
func View(t *testing.T, n *node.Node) ClusterView {
	t.Helper()
	var v ClusterView
	r := MustCall(t, n, "GET", "/management/v1/cluster", "", 200)
	if err := json.Unmarshal([]byte(r.Body), &v); err != nil {
		t.Fatalf("decode cluster view: %v", err)
	}
	return v
}

// Suffrage is the member's suffrage ("voter", "nonvoter"), or "" when it
// is not in the control group.
func (v ClusterView) Suffrage(name string) string {
	for _, m := range v.Members {
		if m.Name == name {
			return m.Suffrage
		}
	}
	return ""
}

// FreeAddr returns a loopback address with a port that was free a moment ago.
func FreeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}
