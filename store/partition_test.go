package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"sort"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/kvnode/kvnode/cluster"
	"github.com/kvnode/kvnode/fsm/codec"
	"github.com/kvnode/kvnode/internal/waitfor"
	"github.com/kvnode/kvnode/partition"
	"github.com/kvnode/kvnode/region"
)

// partitionCluster starts n nodes with P partition groups and RF replicas
// and a PARTITION region "p", and waits until every group has a leader.
func partitionCluster(t *testing.T, n, p, rf int, tune func(*Config)) *testCluster {
	t.Helper()
	tc := newTestCluster(t, min(n, 3))
	tc.tune = func(c *Config) {
		c.PartitionGroups, c.ReplicationFactor = p, rf
		if tune != nil {
			tune(c)
		}
	}
	for _, name := range names("n", n) {
		tc.start(name)
	}
	leader := tc.leader()
	mustCreate(t, leader, "p", region.Partition)
	tc.waitGroupsLed(p)
	return tc
}

// waitGroupsLed waits until every partition group has a leader among the
// running nodes.
func (tc *testCluster) waitGroupsLed(p int) {
	tc.t.Helper()
	waitfor.Cond(tc.t, 20*time.Second, "every partition group to have a leader", func() bool {
		led := map[uint64]bool{}
		for _, n := range tc.nodes {
			if n.Store == nil {
				continue
			}
			for _, g := range n.groups.sorted() {
				if g.ID() != controlGroup && g.IsLeader() {
					led[g.ID()] = true
				}
			}
		}
		return len(led) == p
	})
}

func (tc *testCluster) running() []*testNode {
	tc.mu.Lock()
	defer tc.mu.Unlock()
	var out []*testNode
	for _, n := range tc.nodes {
		if n.Store != nil {
			out = append(out, n)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].name < out[j].name })
	return out
}

// putKeys writes n keys k0000.. through the running nodes in batches of
// put-all (which split over groups).
func putKeys(t *testing.T, tc *testCluster, reg string, n int) {
	t.Helper()
	nodes := tc.running()
	for start := 0; start < n; start += 50 {
		var entries []region.Entry
		for i := start; i < min(start+50, n); i++ {
			entries = append(entries, region.Entry{Key: fmt.Sprintf("k%04d", i), Value: val(fmt.Sprintf(`{"i":%d}`, i))})
		}
		node := nodes[(start/50)%len(nodes)]
		if err := node.Put(ctxT(t, 20*time.Second), reg, entries, region.TTL{}); err != nil {
			t.Fatalf("put-all %d.. via %s: %v", start, node.name, err)
		}
	}
}

// checkKeys reads every key through one multi-key GET on every running node.
func checkKeys(t *testing.T, tc *testCluster, reg string, n int) {
	t.Helper()
	keys := make([]string, n)
	for i := range keys {
		keys[i] = fmt.Sprintf("k%04d", i)
	}
	for _, node := range tc.running() {
		vals, err := node.Get(ctxT(t, 20*time.Second), region.Linearizable, reg, keys)
		if err != nil {
			t.Fatalf("%s: get %d keys: %v", node.name, n, err)
		}
		for i, v := range vals {
			if want := fmt.Sprintf(`{"i":%d}`, i); string(v) != want {
				t.Fatalf("%s: %s = %s, want %s", node.name, keys[i], v, want)
			}
		}
		c, err := node.Count(ctxT(t, 20*time.Second), region.Linearizable, reg)
		if err != nil || c != n {
			t.Fatalf("%s: count = %d, %v; want %d", node.name, c, err, n)
		}
	}
}

// hostedCounts is, per running node, how many partition groups its Raft
// instances are voters of (as the groups' leaders see it).
func (tc *testCluster) hostedCounts(t *testing.T) map[string]int {
	t.Helper()
	counts := map[string]int{}
	for _, n := range tc.running() {
		counts[n.name] = 0
	}
	for _, n := range tc.running() {
		for _, g := range n.groups.sorted() {
			if g.ID() == controlGroup || !g.IsLeader() {
				continue
			}
			for _, v := range g.Status().Voters {
				counts[v]++
			}
		}
	}
	return counts
}

func TestPartitionedRegionOnThreeNodes(t *testing.T) {
	const n = 1000
	tc := partitionCluster(t, 3, 4, 3, nil)
	putKeys(t, tc, "p", n)
	checkKeys(t, tc, "p", n)

	// Entries are spread: each group holds a part of them.
	leader := tc.leader()
	pt, err := leader.Partitions(ctxT(t, 5*time.Second))
	if err != nil || pt.PartitionGroups != 4 || len(pt.Groups) != 4 {
		t.Fatalf("partitions = %+v, %v", pt, err)
	}
	for _, g := range pt.Groups {
		if len(g.Members) != 3 || g.Leader == "" {
			t.Fatalf("group %d: members %v leader %q, want 3 members and a leader", g.Group, g.Members, g.Leader)
		}
	}
	keys, err := tc.nodes["n1"].Keys(ctxT(t, 5*time.Second), region.Linearizable, "p")
	if err != nil || len(keys) != n || !slices.IsSorted(keys) {
		t.Fatalf("keys: %d, sorted %v, %v", len(keys), slices.IsSorted(keys), err)
	}
	first, err := tc.nodes["n2"].List(ctxT(t, 5*time.Second), region.Linearizable, "p", 5)
	if err != nil || len(first) != 5 || first[0].Key != "k0000" || first[4].Key != "k0004" {
		t.Fatalf("list 5 = %v, %v", first, err)
	}

	// Kill one member: every key stays readable and writable once the
	// groups it led have new leaders.
	tc.crash("n1")
	tc.waitGroupsLed(4)
	checkKeys(t, tc, "p", n)
	for _, node := range tc.running() {
		mustPut(t, node, "p", "after-"+node.name, `{"ok":1}`)
	}
	// It comes back and catches up.
	back := tc.start("n1")
	waitfor.Cond(t, 20*time.Second, "n1 to catch up its partition groups", func() bool {
		c, err := back.Count(ctxT(t, 5*time.Second), region.Stale, "p")
		return err == nil && c == n+2
	})
}

func TestPartitionedMultiKeySemantics(t *testing.T) {
	tc := partitionCluster(t, 3, 4, 3, nil)
	s := tc.nodes["n0"]
	ctx := ctxT(t, 30*time.Second)
	// Keys chosen to span groups.
	keys := []string{"a", "b", "c", "d", "e", "f", "g", "h"}
	if slices.IndexFunc(keys, func(k string) bool { return partition.GroupForKey(k, 4) != partition.GroupForKey(keys[0], 4) }) < 0 {
		t.Fatal("test keys all fall into one group")
	}
	var entries []region.Entry
	for i, k := range keys {
		entries = append(entries, region.Entry{Key: k, Value: val(fmt.Sprintf(`{"v":%d}`, i))})
	}
	if err := s.Put(ctx, "p", entries, region.TTL{}); err != nil {
		t.Fatal(err)
	}
	snapshot := func() string {
		t.Helper()
		vals, err := s.Get(ctx, region.Linearizable, "p", keys)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := json.Marshal(vals)
		return string(b)
	}
	before := snapshot()

	// REPLACE with one missing key: 400-class refusal, nothing changes.
	bad := append(slices.Clone(entries), region.Entry{Key: "zz-missing", Value: val(`{}`)})
	for i := range bad[:len(keys)] {
		bad[i].Value = val(`{"changed":true}`)
	}
	if err := s.Replace(ctx, "p", bad, region.TTL{}); !errors.Is(err, region.ErrKeyAbsent) {
		t.Fatalf("replace with a missing key: %v, want ErrKeyAbsent", err)
	}
	// CAS with one mismatch: conflict naming that key, nothing changes.
	var pairs []region.CASPair
	for i, k := range keys {
		pairs = append(pairs, region.CASPair{Key: k, Old: val(fmt.Sprintf(`{"v":%d}`, i)), New: val(`{"cas":1}`)})
	}
	pairs[5].Old = val(`{"v":"wrong"}`)
	var ce *region.ConflictError
	if err := s.CAS(ctx, "p", pairs, region.TTL{}); !errors.As(err, &ce) || ce.Key != "f" || string(ce.Current) != `{"v":5}` {
		t.Fatalf("cas with a mismatch: %v, want a conflict on f with {\"v\":5}", err)
	}
	// DELETE with a missing key: not found, nothing deleted.
	if err := s.Delete(ctx, "p", append(slices.Clone(keys), "zz-missing")); !errors.Is(err, region.ErrKeyNotFound) {
		t.Fatalf("delete with a missing key: %v, want ErrKeyNotFound", err)
	}
	if after := snapshot(); after != before {
		t.Fatalf("refused multi-key writes changed the region:\nbefore %s\nafter  %s", before, after)
	}
	// The same requests, valid, apply everywhere.
	pairs[5].Old = val(`{"v":5}`)
	if err := s.CAS(ctx, "p", pairs, region.TTL{}); err != nil {
		t.Fatalf("cas: %v", err)
	}
	if err := s.Delete(ctx, "p", keys[:4]); err != nil {
		t.Fatalf("delete: %v", err)
	}
	vals, err := s.Get(ctx, region.Linearizable, "p", keys)
	if err != nil {
		t.Fatal(err)
	}
	for i, v := range vals {
		if (i < 4) != (v == nil) || (v != nil && string(v) != `{"cas":1}`) {
			t.Fatalf("after cas+delete: %s = %s", keys[i], v)
		}
	}
	// Clearing a partitioned region is refused.
	if err := s.Clear(ctx, "p"); !errors.Is(err, region.ErrNotSupported) {
		t.Fatalf("clear partitioned: %v, want ErrNotSupported", err)
	}
}

func TestPartitionedGeneratedKeysAreUnique(t *testing.T) {
	tc := partitionCluster(t, 3, 4, 3, nil)
	var mu sync.Mutex
	seen := map[string]bool{}
	var wg sync.WaitGroup
	for w, node := range tc.running() {
		for j := 0; j < 3; j++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := 0; i < 30; i++ {
					key, err := node.PutIfAbsent(ctxT(t, 10*time.Second), "p", region.Entry{Value: val(fmt.Sprintf(`{"w":%d}`, w))}, region.TTL{})
					if err != nil {
						t.Errorf("generated put via %s: %v", node.name, err)
						return
					}
					mu.Lock()
					if seen[key] {
						t.Errorf("generated key %q twice", key)
					}
					seen[key] = true
					mu.Unlock()
				}
			}()
		}
	}
	wg.Wait()
	c, err := tc.nodes["n0"].Count(ctxT(t, 5*time.Second), region.Linearizable, "p")
	if err != nil || c != len(seen) || c != 270 {
		t.Fatalf("count = %d (%v), distinct keys %d, want 270", c, err, len(seen))
	}
}

func TestPartitionedRegionDestroyAndRecreate(t *testing.T) {
	tc := partitionCluster(t, 3, 4, 3, nil)
	s := tc.nodes["n2"]
	ctx := ctxT(t, 30*time.Second)
	putKeys(t, tc, "p", 100)
	oldRef, err := s.Parts().Resolve(ctx, "p", region.Linearizable)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.DestroyRegion(ctx, "p"); err != nil {
		t.Fatalf("destroy: %v", err)
	}
	if _, err := s.Count(ctx, region.Linearizable, "p"); !errors.Is(err, region.ErrRegionNotFound) {
		t.Fatalf("count after destroy: %v, want ErrRegionNotFound", err)
	}
	mustCreate(t, s, "p", region.Partition)
	if c, err := s.Count(ctx, region.Linearizable, "p"); err != nil || c != 0 {
		t.Fatalf("recreated region has %d entries (%v), want 0", c, err)
	}
	// A write still carrying the destroyed incarnation's ID (as from a node
	// whose copy of group 0 is behind) must not land anywhere.
	_, err = s.Router().Apply(ctx, partition.GroupForKey("k0001", 4), &codec.Command{Op: codec.OpPut, Region: "p", RegionID: oldRef.ID,
		Entries: []region.Entry{{Key: "k0001", Value: val(`{"late":true}`)}}})
	if !errors.Is(err, region.ErrRegionNotFound) {
		t.Fatalf("late write with the destroyed region's ID: %v, want ErrRegionNotFound", err)
	}
	if c, err := s.Count(ctx, region.Linearizable, "p"); err != nil || c != 0 {
		t.Fatalf("after a late write the recreated region has %d entries (%v), want 0", c, err)
	}
}

func TestRebalanceOnJoinKeepsKeysReadable(t *testing.T) {
	const n, p, rf = 300, 6, 3
	tc := partitionCluster(t, 3, p, rf, nil)
	putKeys(t, tc, "p", n)

	// Read continuously while members join and replicas move.
	stop := make(chan struct{})
	var reads, failures atomic.Int64
	var firstFailure atomic.Value
	var wg sync.WaitGroup
	for r := 0; r < 3; r++ {
		wg.Add(1)
		go func(r int) {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(r), 7))
			for {
				select {
				case <-stop:
					return
				default:
				}
				nodes := tc.running()
				node := nodes[rng.IntN(len(nodes))]
				i := rng.IntN(n)
				key := fmt.Sprintf("k%04d", i)
				ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
				vals, err := node.Get(ctx, region.Linearizable, "p", []string{key})
				cancel()
				reads.Add(1)
				if err != nil || string(vals[0]) != fmt.Sprintf(`{"i":%d}`, i) {
					failures.Add(1)
					firstFailure.CompareAndSwap(nil, fmt.Sprintf("%s via %s: %v %v", key, node.name, vals, err))
				}
			}
		}(r)
	}
	tc.start("n3")
	tc.start("n4")
	limit := (p*rf + 4) / 5 // ceil(P·RF/members)
	waitfor.Cond(t, 60*time.Second, "replicas to spread over 5 members", func() bool {
		counts := tc.hostedCounts(t)
		if len(counts) != 5 {
			return false
		}
		total := 0
		for _, c := range counts {
			if c > limit {
				return false
			}
			total += c
		}
		return total == p*rf
	})
	close(stop)
	wg.Wait()
	if f := failures.Load(); f > 0 {
		t.Fatalf("%d of %d reads failed while replicas moved; first: %v", f, reads.Load(), firstFailure.Load())
	}
	t.Logf("%d reads during the move, none failed; hosted groups per member: %v", reads.Load(), tc.hostedCounts(t))
	checkKeys(t, tc, "p", n)
}

func TestDeadMemberReplicasRePlaced(t *testing.T) {
	const p, rf = 4, 3
	tc := partitionCluster(t, 4, p, rf, func(c *Config) { c.DeadMemberTimeout = 2 * time.Second })
	putKeys(t, tc, "p", 200)
	victim := "n2"
	if tc.leader().name == victim {
		victim = "n3"
	}
	tc.crash(victim)
	waitfor.Cond(t, 60*time.Second, "RF restored on the survivors", func() bool {
		counts := tc.hostedCounts(t)
		total := 0
		for name, c := range counts {
			if name == victim {
				return false
			}
			total += c
		}
		return total == p*rf
	})
	checkKeys(t, tc, "p", 200)
}

// TestScaleDownTwoAtOnce is a StatefulSet scaled from 5 to 3 with
// podManagementPolicy Parallel: two members leave at the same time and
// their volumes are deleted once they are gone. Leaving waits until their
// partition replicas have moved, so no group loses two of its three voters
// and no acknowledged write goes with them.
func TestScaleDownTwoAtOnce(t *testing.T) {
	const n, p, rf = 300, 6, 3
	tc := partitionCluster(t, 5, p, rf, nil)
	putKeys(t, tc, "p", n)
	leaving := []string{"n3", "n4"}
	var wg sync.WaitGroup
	errs := make([]error, len(leaving))
	for i, name := range leaving {
		node := tc.nodes[name]
		tc.world.setStatus(name, cluster.StatusLeft) // gossip first, as a node's shutdown does
		wg.Go(func() { errs[i] = node.Leave(ctxT(t, 30*time.Second)) })
	}
	wg.Wait()
	for i, name := range leaving {
		if errs[i] != nil {
			t.Fatalf("%s: leave: %v", name, errs[i])
		}
		node := tc.nodes[name]
		tc.mu.Lock()
		st := node.Store
		node.Store = nil
		tc.mu.Unlock()
		_ = st.Close()
		if err := os.RemoveAll(node.dir); err != nil { // the PVC goes
			t.Fatal(err)
		}
	}
	checkKeys(t, tc, "p", n)
	waitfor.Cond(t, 30*time.Second, "every group to have three voters among the remaining members", func() bool {
		counts := tc.hostedCounts(t)
		total := 0
		for name, c := range counts {
			if slices.Contains(leaving, name) {
				return false
			}
			total += c
		}
		return total == p*rf
	})
}
