package store

import (
	"fmt"
	"testing"
	"time"

	"github.com/kvnode/kvnode/region"
	"github.com/kvnode/kvnode/store/regions"
)

// TestCreateIndexReturnsOnceBuiltHere: an index over a region too large to
// be indexed on the spot (state machines build those in the background)
// is complete on the creating node's replicas when CreateIndex returns,
// for a replicated region (group 0) and a partitioned one (every group).
func TestCreateIndexReturnsOnceBuiltHere(t *testing.T) {
	tc := partitionCluster(t, 1, 2, 1, nil)
	n := tc.leader()
	mustCreate(t, n, "r", region.Replicate)
	const count = 12_000 // > 2 × fsm's inline budget, also per partition group
	for _, name := range []string{"r", "p"} {
		for start := 0; start < count; start += 2000 {
			var entries []region.Entry
			for i := start; i < start+2000; i++ {
				entries = append(entries, region.Entry{Key: fmt.Sprintf("k%05d", i), Value: val(fmt.Sprintf(`{"cust":%d}`, i%100))})
			}
			if err := n.Put(ctxT(t, 20*time.Second), name, entries, region.TTL{}); err != nil {
				t.Fatal(err)
			}
		}
	}
	for _, name := range []string{"r", "p"} {
		def := region.IndexInfo{Name: "byCust", Expression: "o.cust", From: "/" + name + " o"}
		if err := n.CreateIndex(ctxT(t, 20*time.Second), name, def); err != nil {
			t.Fatalf("create index on %s: %v", name, err)
		}
		ref, ok := regions.Lookup(n.groups.control().FSM(), name)
		if !ok {
			t.Fatalf("region %s not found", name)
		}
		indexed := 0
		for _, g := range n.groups.sorted() {
			id := uint64(0)
			if ref.Kind == region.Partition {
				if g.ID() == controlGroup {
					continue
				}
				id = ref.ID
			} else if g.ID() != controlGroup {
				continue
			}
			l := g.FSM().Indexes().Len(name, id, "byCust")
			if l < 0 {
				t.Fatalf("region %s: group %d has no index byCust right after CreateIndex returned", name, g.ID())
			}
			indexed += l
		}
		if indexed != count {
			t.Fatalf("region %s: the indexes hold %d entries, want %d", name, indexed, count)
		}
	}
}
