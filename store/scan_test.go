package store

import (
	"bytes"
	"errors"
	"fmt"
	"runtime/pprof"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/kvnode/kvnode/internal/waitfor"
	"github.com/kvnode/kvnode/region"
	"github.com/kvnode/kvnode/store/regions"
)

// drain reads a listing to its end and closes it; a listing that ends with
// an error fails the test.
func drain(t *testing.T, ls region.Listing) []region.Entry {
	t.Helper()
	defer ls.Close()
	var out []region.Entry
	for {
		e, ok := ls.Next()
		if !ok {
			break
		}
		// A value is valid until the next call of Next.
		e.Value = bytes.Clone(e.Value)
		out = append(out, e)
	}
	if err := ls.Err(); err != nil {
		t.Fatalf("listing ended with %v after %d entries", err, len(out))
	}
	return out
}

func entryKeysOf(list []region.Entry) []string {
	out := make([]string, len(list))
	for i, e := range list {
		out[i] = e.Key
	}
	return out
}

func sameEntries(a, b []region.Entry) bool {
	return slices.EqualFunc(a, b, func(x, y region.Entry) bool {
		return x.Key == y.Key && bytes.Equal(x.Value, y.Value)
	})
}

// remoteCluster starts 3 nodes with 4 partition groups of two replicas
// each, so that every node reads some groups through the scan RPC and
// others from a local replica (a follower's needs the read barrier), with
// a PARTITION region "p" and a REPLICATE region "r".
func remoteCluster(t *testing.T) *testCluster {
	t.Helper()
	return remoteClusterRF(t, 2)
}

func remoteClusterRF(t *testing.T, rf int) *testCluster {
	t.Helper()
	tc := partitionCluster(t, 3, 4, rf, nil)
	mustCreate(t, tc.leader(), "r", region.Replicate)
	waitfor.Cond(t, 20*time.Second, "every node to host only some partition groups", func() bool {
		for _, n := range tc.running() {
			remote := 0
			for _, gid := range regions.AllGroups(4) {
				if n.router.view.localFor(gid) == nil {
					remote++
				}
			}
			if remote == 0 {
				return false
			}
		}
		return true
	})
	return tc
}

// The streamed listing answers exactly what the non-streamed reads answer,
// on every node (replicated from group 0; partitioned merged from local
// and remote groups), for every limit, keys only, and linearizable or
// stale.
func TestListingEqualsList(t *testing.T) {
	const n = 600
	tc := remoteCluster(t)
	for _, reg := range []string{"r", "p"} {
		putKeys(t, tc, reg, n)
	}
	for _, node := range tc.running() {
		for _, reg := range []string{"r", "p"} {
			t.Run(node.name+"/"+reg, func(t *testing.T) {
				ctx := ctxT(t, 30*time.Second)
				want, err := node.List(ctx, region.Linearizable, reg, -1)
				if err != nil || len(want) != n {
					t.Fatalf("List = %d entries, %v; want %d", len(want), err, n)
				}
				for _, limit := range []int{-1, 0, 1, 5, n - 1, n, n + 1} {
					ls, err := node.OpenList(ctx, region.Linearizable, reg, region.ListOptions{Limit: limit})
					if err != nil {
						t.Fatalf("OpenList(limit %d): %v", limit, err)
					}
					got := drain(t, ls)
					w := want
					if limit >= 0 && limit < len(w) {
						w = w[:limit]
					}
					if !sameEntries(got, w) {
						t.Errorf("limit %d: listed %d entries (first %v), want the %d of List", limit, len(got), entryKeysOf(got[:min(3, len(got))]), len(w))
					}
				}
				keys, err := node.Keys(ctx, region.Linearizable, reg)
				if err != nil {
					t.Fatal(err)
				}
				ls, err := node.OpenList(ctx, region.Linearizable, reg, region.ListOptions{Limit: -1, KeysOnly: true})
				if err != nil {
					t.Fatal(err)
				}
				got := drain(t, ls)
				if !slices.Equal(entryKeysOf(got), keys) {
					t.Errorf("keys only: listed %d keys, want the %d of Keys", len(got), len(keys))
				}
				for _, e := range got {
					if e.Value != nil {
						t.Fatalf("keys only: %q came with value %s", e.Key, e.Value)
					}
				}
				// Stale reads come from the local replica where there is
				// one: once it has caught up, the same answer.
				waitfor.Cond(t, 10*time.Second, "the stale listing to hold every entry", func() bool {
					ls, err := node.OpenList(ctx, region.Stale, reg, region.ListOptions{Limit: -1})
					return err == nil && sameEntries(drain(t, ls), want)
				})
			})
		}
	}
	t.Run("unknown region", func(t *testing.T) {
		_, err := tc.nodes["n0"].OpenList(ctxT(t, 10*time.Second), region.Linearizable, "nope", region.ListOptions{Limit: -1})
		if !errors.Is(err, region.ErrRegionNotFound) {
			t.Errorf("OpenList(nope) = %v, want ErrRegionNotFound", err)
		}
	})
}

// Peek names the listing's first keys before any entry is read: all of
// them when they fit the budget, else the ones up to the first that passes
// it, merged across groups.
func TestListingPeek(t *testing.T) {
	const n = 300
	tc := remoteCluster(t)
	for _, reg := range []string{"r", "p"} {
		putKeys(t, tc, reg, n)
	}
	all := make([]string, n)
	for i := range all {
		all[i] = fmt.Sprintf("k%04d", i)
	}
	node := tc.nodes["n1"]
	for _, reg := range []string{"r", "p"} {
		for _, tt := range []struct {
			limit, budget int
			want          []string
			wantAll       bool
		}{
			{-1, 1 << 20, all, true},
			{3, 1 << 20, all[:3], true},
			// Each key counts 6 bytes: the 4th passes 20.
			{-1, 20, all[:4], false},
			{4, 20, all[:4], false},
			{3, 20, all[:3], true},
			{-1, 6 * n, all, true},
			{-1, 6*n - 1, all, false},
		} {
			ls, err := node.OpenList(ctxT(t, 20*time.Second), region.Linearizable, reg, region.ListOptions{Limit: tt.limit, PeekBytes: tt.budget})
			if err != nil {
				t.Fatal(err)
			}
			keys, gotAll := ls.Peek()
			if !slices.Equal(keys, tt.want) || gotAll != tt.wantAll {
				t.Errorf("%s limit %d budget %d: Peek = %d keys (%v...), all %v; want %d keys, all %v",
					reg, tt.limit, tt.budget, len(keys), keys[:min(5, len(keys))], gotAll, len(tt.want), tt.wantAll)
			}
			// Peeking does not consume the listing.
			want := n
			if tt.limit >= 0 {
				want = tt.limit
			}
			if got := drain(t, ls); !slices.Equal(entryKeysOf(got), all[:want]) {
				t.Errorf("%s limit %d: listed %d entries after Peek, want %d", reg, tt.limit, len(got), want)
			}
		}
	}
}

// While writes go on, every listing is strictly ascending (each key once),
// holds every key whose write was acknowledged before it was opened, and
// every value it shows is one that was written under its key. Once the
// writes stop it equals the non-streamed answer.
func TestListingDuringWrites(t *testing.T) {
	const n = 400
	tc := remoteCluster(t)
	for _, reg := range []string{"r", "p"} {
		putKeys(t, tc, reg, n)
	}
	nodes := tc.running()
	for _, reg := range []string{"r", "p"} {
		t.Run(reg, func(t *testing.T) {
			var (
				mu    sync.Mutex
				acked []string // new keys, in the order their writes returned
			)
			stop := make(chan struct{})
			var wg sync.WaitGroup
			var writes atomic.Int64
			for w, node := range nodes[:2] {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for i := 0; i < 200; i++ {
						select {
						case <-stop:
							return
						default:
						}
						key := fmt.Sprintf("w%d-%04d", w, i)
						old := fmt.Sprintf("k%04d", (i*7+w)%n)
						err := node.Put(ctxT(t, 20*time.Second), reg, []region.Entry{
							{Key: key, Value: val(fmt.Sprintf(`{"w":"%s"}`, key))},
							{Key: old, Value: val(fmt.Sprintf(`{"i":%d,"by":"%s"}`, (i*7+w)%n, key))},
						}, region.TTL{})
						if errors.Is(err, region.ErrIndeterminate) || errors.Is(err, region.ErrNoLeader) {
							// A leader change (this machine is shared and
							// slow): the key may or may not be there, so it
							// is not counted as acknowledged.
							continue
						}
						if err != nil {
							t.Errorf("put %s: %v", key, err)
							return
						}
						writes.Add(1)
						mu.Lock()
						acked = append(acked, key)
						mu.Unlock()
					}
				}()
			}
			listings := 0
			deadline := time.Now().Add(20 * time.Second)
			for writes.Load() < 300 && time.Now().Before(deadline) {
				node := nodes[listings%len(nodes)]
				mu.Lock()
				before := slices.Clone(acked)
				mu.Unlock()
				ls, err := node.OpenList(ctxT(t, 20*time.Second), region.Linearizable, reg, region.ListOptions{Limit: -1})
				if err != nil {
					t.Fatalf("OpenList on %s: %v", node.name, err)
				}
				checkListing(t, drain(t, ls), n, before)
				listings++
			}
			close(stop)
			wg.Wait()
			if listings < 3 || writes.Load() == 0 {
				t.Fatalf("%d listings during %d writes; want several during writes", listings, writes.Load())
			}
			t.Logf("%d listings during %d writes", listings, writes.Load())
			for _, node := range nodes {
				want, err := node.List(ctxT(t, 20*time.Second), region.Linearizable, reg, -1)
				if err != nil {
					t.Fatal(err)
				}
				ls, err := node.OpenList(ctxT(t, 20*time.Second), region.Linearizable, reg, region.ListOptions{Limit: -1})
				if err != nil {
					t.Fatal(err)
				}
				if got := drain(t, ls); !sameEntries(got, want) {
					t.Errorf("%s after the writes: listed %d entries, List has %d", node.name, len(got), len(want))
				}
			}
		})
	}
}

// checkListing checks one listing taken during TestListingDuringWrites.
func checkListing(t *testing.T, got []region.Entry, n int, acked []string) {
	t.Helper()
	seen := make(map[string]bool, len(got))
	for i, e := range got {
		if i > 0 && e.Key <= got[i-1].Key {
			t.Fatalf("entry %d: key %q after %q, want strictly ascending keys", i, e.Key, got[i-1].Key)
		}
		seen[e.Key] = true
		v := string(e.Value)
		switch {
		case strings.HasPrefix(e.Key, "w"):
			if want := fmt.Sprintf(`{"w":"%s"}`, e.Key); v != want {
				t.Fatalf("%s = %s, want %s", e.Key, v, want)
			}
		default:
			var i int
			if _, err := fmt.Sscanf(e.Key, "k%04d", &i); err != nil {
				t.Fatalf("unexpected key %q", e.Key)
			}
			if v != fmt.Sprintf(`{"i":%d}`, i) && !strings.HasPrefix(v, fmt.Sprintf(`{"i":%d,"by":"w`, i)) {
				t.Fatalf("%s = %s, a value never written under it", e.Key, v)
			}
		}
	}
	for i := range n {
		if k := fmt.Sprintf("k%04d", i); !seen[k] {
			t.Fatalf("listing of %d entries lacks %s", len(got), k)
		}
	}
	for _, k := range acked {
		if !seen[k] {
			t.Fatalf("listing lacks %s, whose write was acknowledged before the listing began", k)
		}
	}
}

// scanGoroutines counts goroutines serving the scan RPC in this process.
func scanGoroutines() int {
	var buf bytes.Buffer
	_ = pprof.Lookup("goroutine").WriteTo(&buf, 1)
	return strings.Count(buf.String(), "store.(*rpcServer).scan")
}

// A listing closed part way stops the members' scans at once (their next
// write fails), and one whose member dies part way ends with an error, not
// as if the region ended there.
func TestListingRemoteStreamsStop(t *testing.T) {
	// One replica per group: the member that dies certainly served part
	// of the listing.
	tc := remoteClusterRF(t, 1)
	// Enough data per group that its scan cannot finish into the socket
	// buffers while nobody reads: it must be blocked when we stop reading.
	const entries, size = 6000, 8 << 10
	big := `{"pad":"` + strings.Repeat("x", size) + `"}`
	nodes := tc.running()
	for start := 0; start < entries; start += 50 {
		var batch []region.Entry
		for i := start; i < start+50; i++ {
			batch = append(batch, region.Entry{Key: fmt.Sprintf("k%05d", i), Value: val(big)})
		}
		// An upsert may be sent again when its outcome is unknown (a
		// leader change on this shared, slow machine).
		for attempt := 0; ; attempt++ {
			err := nodes[(start/50+attempt)%3].Put(ctxT(t, 30*time.Second), "p", batch, region.TTL{})
			if err == nil {
				break
			}
			if attempt == 5 || !errors.Is(err, region.ErrIndeterminate) && !errors.Is(err, region.ErrNoLeader) {
				t.Fatalf("put %d..: %v", start, err)
			}
		}
	}
	node := tc.nodes["n0"]

	t.Run("close", func(t *testing.T) {
		ls, err := node.OpenList(ctxT(t, 60*time.Second), region.Linearizable, "p", region.ListOptions{Limit: -1})
		if err != nil {
			t.Fatal(err)
		}
		for range 10 {
			if _, ok := ls.Next(); !ok {
				t.Fatalf("listing ended early: %v", ls.Err())
			}
		}
		// Nobody reads now: the remote scans fill the buffers and block.
		waitfor.Cond(t, 10*time.Second, "remote scans in flight", func() bool { return scanGoroutines() > 0 })
		ls.Close()
		waitfor.Cond(t, 5*time.Second, "every remote scan to stop after Close", func() bool { return scanGoroutines() == 0 })
	})

	t.Run("member dies", func(t *testing.T) {
		ls, err := node.OpenList(ctxT(t, 60*time.Second), region.Linearizable, "p", region.ListOptions{Limit: -1})
		if err != nil {
			t.Fatal(err)
		}
		defer ls.Close()
		if _, ok := ls.Next(); !ok {
			t.Fatalf("listing ended early: %v", ls.Err())
		}
		waitfor.Cond(t, 10*time.Second, "remote scans in flight", func() bool { return scanGoroutines() > 0 })
		tc.crash("n1")
		got := 1
		for {
			if _, ok := ls.Next(); !ok {
				break
			}
			got++
		}
		if ls.Err() == nil {
			t.Fatalf("listing ended after %d of %d entries with no error, though a member serving it died", got, entries)
		}
		if got >= entries {
			t.Fatalf("listing returned all %d entries and then failed (%v); the test needs the member to die mid-stream", got, ls.Err())
		}
		t.Logf("listing failed after %d entries: %v", got, ls.Err())
	})
}
