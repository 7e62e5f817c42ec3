package store

import (
	"slices"
	"testing"
	"time"
)

// TestReadyMeansEveryPlacedGroupIsLed: a node starting a new cluster
// reports ready only once the partition table is written and every group
// it places on this node is open with a leader, and then stays ready. It
// used to answer ready as soon as the control group had a leader, before
// the partition groups existed, and unready again while they bootstrapped
// (a readiness probe flapping at start; a REST test saw the 503).
func TestReadyMeansEveryPlacedGroupIsLed(t *testing.T) {
	tc := newTestCluster(t, 1)
	n := tc.start("solo")
	ctx := ctxT(t, 20*time.Second)
	for n.Ready(ctx) != nil {
		if ctx.Err() != nil {
			t.Fatalf("not ready after 20 s: %v", n.Ready(ctxT(t, time.Second)))
		}
		time.Sleep(time.Millisecond)
	}
	tbl, _, ok := n.router.view.get()
	if !ok {
		t.Fatal("ready before the partition table was written")
	}
	for i, pg := range tbl.Groups {
		if !slices.Contains(pg.Members, n.name) {
			continue
		}
		g := n.router.view.localFor(uint64(i) + 1)
		if g == nil {
			t.Fatalf("ready while partition group %d, placed here, is not open", i+1)
		}
		if id, _ := g.Leader(); id == "" {
			t.Fatalf("ready while partition group %d has no leader", i+1)
		}
	}
	for end := time.Now().Add(time.Second); time.Now().Before(end); time.Sleep(5 * time.Millisecond) {
		if err := n.Ready(ctxT(t, time.Second)); err != nil {
			t.Fatalf("ready, then not ready again: %v", err)
		}
	}
}
