package store

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/kvnode/kvnode/region"
	"github.com/kvnode/kvnode/store/raftgroup"
)

// orderValue is a ~220-byte order, the size the load generator in
// ../shared/bench uses.
var orderValue = json.RawMessage(`{"@type":"org.example.Order","purchaseOrderNo":1112,"customerId":101,"description":"Purchase order for company - B","orderDate":"02/10/2017","deliveryDate":"02/20/2017","contact":"Jane Doe","totalPrice":225.5}`)

// benchCluster starts a 3-node cluster on loopback with a region "r". The
// Raft timings are the production defaults: batching depends on them.
func benchCluster(b *testing.B) []*testNode {
	tc := newTestCluster(b, 3)
	tc.tune = func(c *Config) { c.Raft = raftgroup.Config{} }
	for _, name := range names("n", 3) {
		tc.start(name)
	}
	leader := tc.leader()
	for _, info := range []region.Info{{Name: "r", Kind: region.Replicate}, {Name: "p", Kind: region.Partition}} {
		if err := leader.CreateRegion(ctxT(b, 10*time.Second), info); err != nil {
			b.Fatal(err)
		}
	}
	tc.waitGroupsLed(4)
	nodes := []*testNode{tc.nodes["n0"], tc.nodes["n1"], tc.nodes["n2"]}
	// Warm the forwarding connections.
	for _, n := range nodes {
		for i := range 8 {
			for _, reg := range []string{"r", "p"} {
				if err := n.Put(ctxT(b, 10*time.Second), reg, []region.Entry{{Key: fmt.Sprintf("warm%d", i), Value: orderValue}}, region.TTL{}); err != nil {
					b.Fatal(err)
				}
			}
		}
	}
	return nodes
}

// BenchmarkClusterWrite measures acknowledged writes (committed on a quorum,
// fsynced) through a 3-node loopback cluster, with clients spread over all
// nodes (two thirds of the writes are forwarded to the leader). Raft must
// batch concurrent writes: 64 writers should reach many times the
// throughput of one.
func BenchmarkClusterWrite(b *testing.B) {
	for _, writers := range []int{1, 64} {
		b.Run("writers="+strconv.Itoa(writers), func(b *testing.B) {
			benchWrites(b, benchCluster(b), "r", writers)
		})
	}
}

// BenchmarkClusterWriteKinds compares 64 writers on a replicated region (one
// Raft group) and on a partitioned one (4 groups committing in parallel) on
// the same 3 nodes.
func BenchmarkClusterWriteKinds(b *testing.B) {
	for _, reg := range []struct{ name, region string }{{"replicated", "r"}, {"partitioned", "p"}} {
		b.Run(reg.name, func(b *testing.B) {
			benchWrites(b, benchCluster(b), reg.region, 64)
		})
	}
}

func benchWrites(b *testing.B, nodes []*testNode, reg string, writers int) {
	var next atomic.Int64
	var failed atomic.Int64
	b.ResetTimer()
	start := time.Now()
	var wg sync.WaitGroup
	for w := 0; w < writers; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			n := nodes[w%len(nodes)]
			for {
				i := next.Add(1)
				if i > int64(b.N) {
					return
				}
				ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
				err := n.Put(ctx, reg, []region.Entry{{Key: fmt.Sprintf("k%d", i%1000), Value: orderValue}}, region.TTL{})
				cancel()
				if err != nil {
					failed.Add(1)
				}
			}
		}(w)
	}
	wg.Wait()
	elapsed := time.Since(start)
	b.StopTimer()
	if f := failed.Load(); f > 0 {
		b.Fatalf("%d of %d writes failed", f, b.N)
	}
	b.ReportMetric(float64(b.N)/elapsed.Seconds(), "writes/s")
}

// BenchmarkClusterRead measures linearizable reads (read index) through all
// three nodes with 64 readers.
func BenchmarkClusterRead(b *testing.B) {
	nodes := benchCluster(b)
	var next atomic.Int64
	b.ResetTimer()
	start := time.Now()
	var wg sync.WaitGroup
	for w := 0; w < 64; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			n := nodes[w%len(nodes)]
			for next.Add(1) <= int64(b.N) {
				ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
				_, err := n.Get(ctx, region.Linearizable, "r", []string{"warm"})
				cancel()
				if err != nil {
					b.Error(err)
					return
				}
			}
		}(w)
	}
	wg.Wait()
	b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "reads/s")
}
