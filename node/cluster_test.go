package node_test

import (
	"encoding/json"
	"fmt"
	"net/url"
	"slices"
	"testing"
	"time"

	"github.com/kvnode/kvnode/internal/waitfor"
	"github.com/kvnode/kvnode/node"
	"github.com/kvnode/kvnode/node/nodetest"
)

// These tests run several complete nodes (REST, gossip, store) in one test
// process on loopback, wired exactly as the binary wires them.

func TestInProcessCluster(t *testing.T) {
	ip := nodetest.New(t)
	// d is stopped for good at the end: it leaves (a scale-down), where
	// a plain SIGTERM would be a restart.
	ip.Tune = func(name string, cfg *node.Config) { cfg.LeaveOnShutdown = name == "d" }
	for _, name := range []string{"a", "b", "c"} {
		ip.Start(name, 3)
	}
	leader := ip.Leader()
	a, b, c := ip.Nodes["a"], ip.Nodes["b"], ip.Nodes["c"]

	// /servers from gossip lists all three.
	waitfor.Cond(t, 10*time.Second, "/servers to list 3 members", func() bool {
		var urls []string
		_ = json.Unmarshal([]byte(nodetest.Call(t, c, "GET", "/kv/v1/servers", "").Body), &urls)
		return len(urls) == 3
	})

	// A write on one node is readable on the others.
	nodetest.MustCall(t, b, "POST", "/management/v1/regions", `{"name":"orders","type":"REPLICATE"}`, 201)
	const n = 40
	for i := 0; i < n; i++ {
		node := []*node.Node{a, b, c}[i%3]
		nodetest.MustCall(t, node, "PUT", fmt.Sprintf("/kv/v1/orders/k%d", i), fmt.Sprintf(`{"i":%d}`, i), 200)
	}
	for _, node := range []*node.Node{a, b, c} {
		for i := 0; i < n; i++ {
			r := nodetest.MustCall(t, node, "GET", fmt.Sprintf("/kv/v1/orders/k%d", i), "", 200)
			if want := fmt.Sprintf(`{"i":%d}`, i); r.Body != want {
				t.Fatalf("%s: k%d = %s, want %s", node.Name(), i, r.Body, want)
			}
		}
	}

	// Queries over REST across nodes: a named query created on one node
	// runs on the others; an index created on one is used on all; a
	// partitioned region is queried from every node.
	q := url.QueryEscape("SELECT o.i FROM /orders o WHERE o.i >= $1 AND o.i < $2 ORDER BY o.i")
	nodetest.MustCall(t, a, "POST", "/kv/v1/queries?id=window&q="+q, "", 201)
	nodetest.MustCall(t, b, "POST", "/management/v1/regions/orders/indexes", `{"name":"byI","expression":"o.i","from":"/orders o"}`, 201)
	nodetest.MustCall(t, b, "POST", "/management/v1/regions", `{"name":"parts","type":"PARTITION"}`, 201)
	for i := 0; i < 30; i++ {
		nodetest.MustCall(t, []*node.Node{a, b, c}[i%3], "PUT", fmt.Sprintf("/kv/v1/parts/p%d", i), fmt.Sprintf(`{"i":%d,"g":%d}`, i, i%3), 200)
	}
	for _, node := range []*node.Node{a, b, c} {
		r := nodetest.MustCall(t, node, "POST", "/kv/v1/queries/window", `[{"@type":"int","@value":5},{"@type":"int","@value":9}]`, 200)
		if r.Body != "[5,6,7,8]" {
			t.Fatalf("%s: named query window(5, 9) = %s, want [5,6,7,8]", node.Name(), r.Body)
		}
		r = nodetest.MustCall(t, node, "GET", "/kv/v1/queries/adhoc?q="+url.QueryEscape("SELECT p.g AS g, COUNT(*) AS n FROM /parts p GROUP BY p.g ORDER BY g"), "", 200)
		if r.Body != `[{"g":0,"n":10},{"g":1,"n":10},{"g":2,"n":10}]` {
			t.Fatalf("%s: grouped query over the partitioned region = %s", node.Name(), r.Body)
		}
	}

	// The leader is killed (shut down without leaving): a new leader, no
	// acknowledged write lost, writes resume.
	old := leader.Name()
	ip.Stop(old, false)
	newLeader := ip.Leader()
	if newLeader.Name() == old {
		t.Fatalf("stopped node %s is still leader", old)
	}
	for _, node := range ip.Nodes {
		r := nodetest.MustCall(t, node, "GET", "/kv/v1/orders?limit=ALL", "", 200)
		var got map[string][]json.RawMessage
		if err := json.Unmarshal([]byte(r.Body), &got); err != nil || len(got["orders"]) != n {
			t.Fatalf("%s after leader loss: %d entries (%v), want %d", node.Name(), len(got["orders"]), err, n)
		}
	}
	for _, node := range ip.Nodes {
		nodetest.MustCall(t, node, "PUT", "/kv/v1/orders/after-"+node.Name(), `{"ok":1}`, 200)
	}

	// A 4th node joins as a non-voter and receives all data.
	d := ip.Start("d", 3)
	waitfor.Cond(t, 20*time.Second, "d to hold every entry", func() bool {
		r := nodetest.Call(t, d, "HEAD", "/kv/v1/orders?consistency=stale", "")
		return r.Status == 200 && r.Header.Get("Resource-Count") == fmt.Sprint(n+2)
	})
	// With a voter down, d is promoted to keep three live voters.
	waitfor.Cond(t, 20*time.Second, "d to become a voter", func() bool {
		return nodetest.View(t, newLeader).Suffrage("d") == "voter"
	})

	// The stopped node restarts from its data dir, on new ports: the leader
	// updates its address and it catches up, including the writes made
	// while it was down.
	back := ip.Start(old, 3)
	waitfor.Cond(t, 20*time.Second, old+" to catch up after restart", func() bool {
		r := nodetest.Call(t, back, "GET", "/kv/v1/orders/after-"+d.Name(), "")
		if r.Status == 404 { // d wrote nothing yet; use a survivor's write
			for name := range ip.Nodes {
				if name != old && name != "d" {
					r = nodetest.Call(t, back, "GET", "/kv/v1/orders/after-"+name, "")
					break
				}
			}
		}
		return r.Status == 200
	})
	nodetest.MustCall(t, back, "PUT", "/kv/v1/orders/from-restarted", `{"v":1}`, 200)
	nodetest.MustCall(t, d, "GET", "/kv/v1/orders/from-restarted", "", 200)

	// With all four alive, voters settle at three.
	waitfor.Cond(t, 20*time.Second, "three voters among four live members", func() bool {
		v := nodetest.View(t, ip.Leader())
		voters := 0
		for _, m := range v.Members {
			if m.Suffrage == "voter" {
				voters++
			}
		}
		return voters == 3
	})

	// A graceful shutdown with LeaveOnShutdown leaves Raft and gossip.
	ip.Stop("d", true)
	waitfor.Cond(t, 20*time.Second, "d to be gone from Raft and marked left", func() bool {
		for _, node := range ip.Nodes {
			v := nodetest.View(t, node)
			if v.Suffrage("d") != "" {
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
	for name := range ip.Nodes {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		nodetest.MustCall(t, ip.Nodes[name], "PUT", "/kv/v1/orders/end-"+name, `{}`, 200)
	}
}
