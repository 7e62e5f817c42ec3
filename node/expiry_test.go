package node_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/kvnode/kvnode/internal/promtest"
	"github.com/kvnode/kvnode/internal/waitfor"
	"github.com/kvnode/kvnode/node"
	"github.com/kvnode/kvnode/node/nodetest"
	"github.com/kvnode/kvnode/region"
)

// TestExpiryOnEveryMember: on a 3-member cluster where every member holds
// a replica of every group, entries that expire (a replicated region's
// default entryTimeToLive, a partitioned region's ?ttl) are removed from
// every member's replica, each of which emits the same expire events,
// while the entries written never to expire stay.
func TestExpiryOnEveryMember(t *testing.T) {
	ip := nodetest.New(t)
	ip.Tune = func(_ string, cfg *node.Config) {
		cfg.PartitionGroups = 2
		cfg.ReplicationFactor = 3
	}
	for _, name := range []string{"a", "b", "c"} {
		ip.Start(name, 3)
	}
	ip.Leader()
	members := []*node.Node{ip.Nodes["a"], ip.Nodes["b"], ip.Nodes["c"]}
	nodetest.MustCall(t, members[0], "POST", "/management/v1/regions", `{"name":"sessions","type":"REPLICATE","entryTimeToLive":1}`, 201)
	nodetest.MustCall(t, members[1], "POST", "/management/v1/regions", `{"name":"carts","type":"PARTITION"}`, 201)

	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	watches := map[string][]region.Watch{}
	for _, r := range []string{"sessions", "carts"} {
		for _, m := range members {
			w, err := node.Regions(m).Watch(ctx, r, region.WatchOptions{})
			if err != nil {
				t.Fatalf("watch %s on %s: %v", r, m.Name(), err)
			}
			defer w.Close()
			watches[r] = append(watches[r], w)
		}
	}

	nodetest.MustCall(t, members[0], "PUT", "/kv/v1/sessions/s1", `{"u":1}`, 200)
	nodetest.MustCall(t, members[1], "PUT", "/kv/v1/sessions/keep?ttl=0", `{"u":2}`, 200)
	nodetest.MustCall(t, members[2], "PUT", "/kv/v1/carts/c1,c2,c3,c4?ttl=1", `[{"n":1},{"n":2},{"n":3},{"n":4}]`, 200)
	nodetest.MustCall(t, members[0], "PUT", "/kv/v1/carts/keep", `{"n":0}`, 200)

	// Removed from every replica: what each member's metrics count is
	// what its state machines hold, expired or not.
	for _, m := range members {
		waitfor.Cond(t, 20*time.Second, "the expired entries to be removed on "+m.Name(), func() bool {
			s := promtest.Parse(t, scrape(t, m))
			return s.Sum("kvnode_region_entries", map[string]string{"region": "sessions"}) == 1 &&
				s.Sum("kvnode_region_entries", map[string]string{"region": "carts"}) == 1
		})
	}
	want := map[string]string{
		"sessions": "keep: create {\"u\":2}\ns1: create {\"u\":1}, expire \n",
		"carts":    "",
	}
	for i := 1; i <= 4; i++ {
		want["carts"] += fmt.Sprintf("c%d: create {\"n\":%d}, expire \n", i, i)
	}
	want["carts"] += "keep: create {\"n\":0}\n"
	counts := map[string]int{"sessions": 3, "carts": 9}
	for r, ws := range watches {
		for i, w := range ws {
			if got := byKey(collect(t, w, counts[r])); got != want[r] {
				t.Errorf("events of %s on %s:\n%s\nwant:\n%s", r, members[i].Name(), got, want[r])
			}
		}
	}
	for _, m := range members {
		nodetest.MustCall(t, m, "GET", "/kv/v1/sessions/s1", "", 404)
		nodetest.MustCall(t, m, "GET", "/kv/v1/carts/c3", "", 404)
		if got := nodetest.MustCall(t, m, "GET", "/kv/v1/carts/keys", "", 200).Body; got != `{"keys":["keep"]}` {
			t.Errorf("keys of carts on %s = %s, want only keep", m.Name(), got)
		}
	}
}

// TestExpiryAcrossFailoverAndRestart: deadlines are part of the replicated
// state. Entries written just before the control group's leader is killed
// expire on time under the new leader (removed, with their expire events);
// an entry with a long time-to-live survives the failover and the restart
// of every member, and one written with a short one before a full restart
// is gone after it, its deadline kept by the log and snapshots, not by a
// member's memory.
func TestExpiryAcrossFailoverAndRestart(t *testing.T) {
	ip := nodetest.New(t)
	for _, name := range []string{"a", "b", "c"} {
		ip.Start(name, 3)
	}
	leader := ip.Leader()
	var rest []*node.Node
	for _, n := range ip.Nodes {
		if n != leader {
			rest = append(rest, n)
		}
	}
	nodetest.MustCall(t, rest[0], "POST", "/management/v1/regions", `{"name":"tokens","type":"REPLICATE"}`, 201)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	w, err := node.Regions(rest[0]).Watch(ctx, "tokens", region.WatchOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	nodetest.MustCall(t, rest[1], "PUT", "/kv/v1/tokens/short?ttl=2", `{"t":1}`, 200)
	nodetest.MustCall(t, rest[1], "PUT", "/kv/v1/tokens/long?ttl=3600", `{"t":2}`, 200)
	ip.Stop(leader.Name(), false)

	// Under the new leader: short expires on time, seen by the watcher.
	evs := collect(t, w, 3)
	if got := fmt.Sprintf("%s %s, %s %s, %s %s", evs[0].Type, evs[0].Key, evs[1].Type, evs[1].Key, evs[2].Type, evs[2].Key); got != "create short, create long, expire short" {
		t.Errorf("events through the failover: %s; want the two creates and short's expiry", got)
	}
	for _, m := range rest {
		nodetest.MustCall(t, m, "GET", "/kv/v1/tokens/short", "", 404)
		nodetest.MustCall(t, m, "GET", "/kv/v1/tokens/long", "", 200)
	}
	// A short-lived entry, then every member down and up again.
	nodetest.MustCall(t, rest[0], "PUT", "/kv/v1/tokens/brief?ttl=2", `{"t":3}`, 200)
	written := time.Now()
	for _, m := range rest {
		ip.Stop(m.Name(), true)
	}
	var up []*node.Node
	for _, name := range []string{"a", "b", "c"} {
		up = append(up, ip.Start(name, 3))
	}
	ip.Leader()
	for _, m := range up {
		waitfor.Cond(t, 30*time.Second, m.Name()+" to serve after the restart", func() bool {
			return nodetest.Call(t, m, "GET", "/kv/v1/tokens/long", "").Status == 200
		})
	}
	if time.Since(written) < 2*time.Second {
		// Still alive before its deadline: the restart kept the entry.
		nodetest.MustCall(t, up[0], "GET", "/kv/v1/tokens/brief", "", 200)
	}
	for _, m := range up {
		waitfor.Cond(t, 20*time.Second, "brief to be gone on "+m.Name(), func() bool {
			return nodetest.Call(t, m, "GET", "/kv/v1/tokens/brief?consistency=stale", "").Status == 404
		})
	}
}
