package store

import (
	"testing"
	"time"

	"github.com/kvnode/kvnode/internal/waitfor"
	"github.com/kvnode/kvnode/region"
)

// After a whole-cluster restart in which the members come back at each
// other's addresses (containers and pods get new IPs), every group elects
// a leader, nothing is lost, and the recorded addresses are mended.
func TestRestartWithShuffledAddresses(t *testing.T) {
	tc := partitionCluster(t, 3, 4, 3, nil)
	leader := tc.leader()
	mustCreate(t, leader, "r", region.Replicate)
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
			for _, g := range n.groups.sorted() {
				conf, err := g.Configuration()
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
