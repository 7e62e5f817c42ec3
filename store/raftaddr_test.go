package store

import (
	"fmt"
	"testing"
	"time"

	"github.com/hashicorp/raft"

	"github.com/kvnode/kvnode/internal/waitfor"
	"github.com/kvnode/kvnode/region"
)

// applyFixes runs nextAddressFix to a fixpoint the way the reconcile loops
// do (one change at a time), checking after every change that no two
// servers share an address, as Raft would insist.
func applyFixes(t *testing.T, conf raft.Configuration, current map[string]string, joining []string) (raft.Configuration, int) {
	t.Helper()
	lookup := func(id string) (string, bool) { a, ok := current[id]; return a, ok }
	steps := 0
	for {
		fix, ok := nextAddressFix(conf, lookup, joining)
		if !ok {
			return conf, steps
		}
		steps++
		if steps > 3*len(conf.Servers)+len(joining) {
			t.Fatalf("no fixpoint after %d changes: %+v", steps, conf.Servers)
		}
		seen := map[raft.ServerAddress]raft.ServerID{}
		for i, srv := range conf.Servers {
			if srv.ID == fix.server.ID {
				conf.Servers[i].Address = fix.to
			}
		}
		for _, srv := range conf.Servers {
			if other, dup := seen[srv.Address]; dup {
				t.Fatalf("change %+v gives %s and %s the same address %s", fix, other, srv.ID, srv.Address)
			}
			seen[srv.Address] = srv.ID
		}
	}
}

func servers(addrs ...string) raft.Configuration {
	var c raft.Configuration
	for i, a := range addrs {
		c.Servers = append(c.Servers, raft.Server{ID: raft.ServerID(fmt.Sprintf("n%d", i)), Address: raft.ServerAddress(a), Suffrage: raft.Voter})
	}
	return c
}

func TestNextAddressFix(t *testing.T) {
	cases := []struct {
		name    string
		conf    raft.Configuration
		current map[string]string
		joining []string
		want    []string // final addresses of n0, n1, ...
	}{
		{"nothing moved", servers("a", "b", "c"), map[string]string{"n0": "a", "n1": "b", "n2": "c"}, nil, []string{"a", "b", "c"}},
		{"one moved", servers("a", "b", "c"), map[string]string{"n0": "a", "n1": "x", "n2": "c"}, nil, []string{"a", "x", "c"}},
		{"dead member keeps its record", servers("a", "b", "c"), map[string]string{"n0": "a", "n2": "c"}, nil, []string{"a", "b", "c"}},
		{"two swapped", servers("a", "b", "c"), map[string]string{"n0": "b", "n1": "a", "n2": "c"}, nil, []string{"b", "a", "c"}},
		{"three rotated", servers("a", "b", "c"), map[string]string{"n0": "b", "n1": "c", "n2": "a"}, nil, []string{"b", "c", "a"}},
		{"moved onto a dead member's record", servers("a", "b", "c"), map[string]string{"n0": "b", "n2": "c"}, nil, []string{"b", "n1.moved.invalid:0", "c"}},
		{"a joining member takes a dead member's address", servers("a", "b"), map[string]string{"n0": "a", "n9": "b"}, []string{"n9"}, []string{"a", "n1.moved.invalid:0"}},
		{"gossip gives two members one address", servers("a", "b"), map[string]string{"n0": "a", "n1": "a"}, nil, []string{"a", "b"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			conf, steps := applyFixes(t, tc.conf, tc.current, tc.joining)
			for i, want := range tc.want {
				if got := string(conf.Servers[i].Address); got != want {
					t.Errorf("n%d: address %s after %d changes, want %s", i, got, steps, want)
				}
				if conf.Servers[i].Suffrage != raft.Voter {
					t.Errorf("n%d lost its vote", i)
				}
			}
		})
	}
}

// After a whole-cluster restart in which the members come back at each
// other's addresses (containers and pods get new IPs), every group elects
// a leader, nothing is lost, and the recorded addresses are mended.
func TestRestartWithShuffledAddresses(t *testing.T) {
	tc := partitionCluster(t, 3, 4, 3, nil)
	leader := tc.leader()
	mustCreate(t, leader.Store, "r", region.Replicate)
	putKeys(t, tc, "p", 200)
	putKeys(t, tc, "r", 200)

	nodes := tc.running()
	old := make([]string, len(nodes))
	for i, n := range nodes {
		old[i] = n.addr
		tc.crash(n.name)
	}
	// n0 comes back at n1's address, n1 at n2's, n2 at n0's.
	for i, n := range nodes {
		n.addr = old[(i+1)%len(nodes)]
	}
	for _, n := range nodes {
		tc.start(n.name)
		if n.addr != old[(indexOf(nodes, n)+1)%len(nodes)] {
			t.Fatalf("%s could not take its new address %s", n.name, old[(indexOf(nodes, n)+1)%len(nodes)])
		}
	}
	waitfor.Cond(t, 30*time.Second, "every member ready", func() bool {
		for _, n := range tc.running() {
			if n.Ready(ctxT(t, 2*time.Second)) != nil {
				return false
			}
		}
		return true
	})
	checkKeys(t, tc, "p", 200)
	checkKeys(t, tc, "r", 200)
	putKeys(t, tc, "p", 250)

	want := map[string]string{}
	for _, n := range nodes {
		want[n.name] = n.addr
	}
	waitfor.Cond(t, 30*time.Second, "every group's recorded addresses to be mended", func() bool {
		for _, n := range tc.running() {
			for _, g := range n.localGroups() {
				conf, err := g.configuration()
				if err != nil {
					return false
				}
				for _, srv := range conf.Servers {
					if string(srv.Address) != want[string(srv.ID)] {
						return false
					}
				}
			}
		}
		return true
	})
}

func indexOf(nodes []*testNode, n *testNode) int {
	for i, m := range nodes {
		if m == n {
			return i
		}
	}
	return -1
}
