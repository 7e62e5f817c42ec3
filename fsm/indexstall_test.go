package fsm

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/kvnode/kvnode/fsm/codec"
	"github.com/kvnode/kvnode/index"
	"github.com/kvnode/kvnode/region"
)

// custValue is the value of entry i in the index build tests: the indexed
// member cust repeats every 5000 entries, as a customer id would.
func custValue(i, cust int) string {
	return fmt.Sprintf(`{"id":%d,"cust":%d,"name":"name-%d","city":"city-%d"}`, i, cust, i, i%50)
}

// load fills region name with count entries k0000000…, 10,000 per command.
func load(n *node, name string, count int) {
	n.t.Helper()
	for start := 0; start < count; start += 10_000 {
		kv := make([]string, 0, 20_000)
		for i := start; i < min(start+10_000, count); i++ {
			kv = append(kv, bigKey(i), custValue(i, i%5000))
		}
		n.put(name, kv...)
	}
}

func bigKey(i int) string { return fmt.Sprintf("k%07d", i) }

// stallSize is how many entries TestIndexBuildDoesNotStallWrites indexes:
// a million in a normal run, fewer under the race detector (which makes
// the load and the build about ten times slower) or with -short.
func stallSize() int {
	if raceEnabled || testing.Short() {
		return 200_000
	}
	return 1_000_000
}

// TestIndexBuildDoesNotStallWrites builds an index over a large region
// while a writer applies one write after another, and checks that no write
// waited for the build: the longest single Apply during the build stays far
// below the build's duration. Building under the write lock (as before)
// makes one Apply wait for the whole build.
func TestIndexBuildDoesNotStallWrites(t *testing.T) {
	n := newNode(t)
	n.create("r", region.Replicate)
	size := stallSize()
	load(n, "r", size)

	// The writer is the only one applying from here on, so it owns n.index.
	type write struct {
		start time.Time
		took  time.Duration
	}
	var (
		mu      sync.Mutex
		writes  []write
		stop    = make(chan struct{})
		started = make(chan struct{})
		wg      sync.WaitGroup
	)
	wg.Add(1)
	go func() {
		defer wg.Done()
		deadline := time.Now().Add(5 * time.Minute) // a bound, never reached
		for i := 0; time.Now().Before(deadline); i++ {
			select {
			case <-stop:
				return
			default:
			}
			// Alternate replacing existing entries (moving them to another
			// customer) and adding new ones.
			key := bigKey((i * 7919) % size)
			if i%2 == 1 {
				key = "new" + strconv.Itoa(i)
			}
			l := n.log(codec.Command{Op: codec.OpPut, Region: "r", Entries: entries(key, custValue(i, 5000+i%100))})
			t0 := time.Now()
			n.f.Apply(l)
			took := time.Since(t0)
			mu.Lock()
			writes = append(writes, write{t0, took})
			mu.Unlock()
			if i == 100 {
				close(started)
			}
			// Pace the writer like a busy client rather than a spin loop,
			// so it leaves the build some of the two cores.
			time.Sleep(200 * time.Microsecond)
		}
	}()
	<-started

	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	begin := time.Now()
	n.f.Indexes().Set(1, map[string][]index.Def{"r": {{Name: "byCust", Path: []string{"cust"}}}})
	if err := n.f.Indexes().Wait(ctx); err != nil {
		t.Fatalf("WaitIndexes: %v", err)
	}
	end := time.Now()
	close(stop)
	wg.Wait()
	build := end.Sub(begin)

	var during int
	var maxStall time.Duration
	for _, w := range writes {
		if w.start.Add(w.took).Before(begin) || w.start.After(end) {
			continue
		}
		during++
		maxStall = max(maxStall, w.took)
	}
	t.Logf("index over %d entries built in %v; %d writes applied during the build, the slowest took %v",
		size, build, during, maxStall)
	if build < 50*time.Millisecond {
		t.Fatalf("the build took only %v: too short to tell a stall from a pause", build)
	}
	if maxStall > build/5 {
		t.Errorf("a write waited %v during a %v build: writes stall while the index builds", maxStall, build)
	}
	if during < 10 {
		t.Errorf("only %d writes were applied during a %v build", during, build)
	}
	checkIndexes(t, n.f)
}
