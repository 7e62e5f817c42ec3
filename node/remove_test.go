package node_test

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/kvnode/kvnode/node"
	"github.com/kvnode/kvnode/node/nodetest"
)

// TestFunctionRemoveIsAtomic: the functions' region.remove, raced by
// writers and other removers on one key, returns exactly the values it
// removed. Writers create values with put-if-absent, so no value is ever
// overwritten: every value created must come back from exactly one remove
// or still be there at the end. A read followed by a plain delete broke
// this: remover A reads v1, remover B removes v1, a writer creates v2,
// and A's delete removes v2 while returning v1 (v1 returned twice, v2
// lost).
func TestFunctionRemoveIsAtomic(t *testing.T) {
	ip := nodetest.New(t)
	n := ip.Start("a", 1)
	ip.Leader()
	nodetest.MustCall(t, n, "POST", "/management/v1/regions", `{"name":"rep","type":"REPLICATE"}`, 201)
	nodetest.MustCall(t, n, "POST", "/management/v1/regions", `{"name":"par","type":"PARTITION"}`, 201)
	d := node.FunctionData(n)

	for _, region := range []string{"rep", "par"} {
		t.Run(region, func(t *testing.T) {
			// Until the writers have created target values (bounded by ctx).
			const writers, removers, target = 2, 3, 200
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			var ncreated atomic.Int64
			var (
				mu       sync.Mutex
				created  = map[string]bool{}
				returned = map[string]int{}
				failures []error
				wg       sync.WaitGroup
			)
			fail := func(err error) {
				mu.Lock()
				failures = append(failures, err)
				mu.Unlock()
			}
			for w := range writers {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for i := 0; ctx.Err() == nil && ncreated.Load() < target; i++ {
						v := fmt.Sprintf(`{"w":%d,"i":%d}`, w, i)
						cur, err := d.PutIfAbsent(ctx, region, "k", json.RawMessage(v))
						if err != nil {
							fail(fmt.Errorf("put-if-absent %s: %w", v, err))
							return
						}
						if cur == nil {
							ncreated.Add(1)
							mu.Lock()
							created[v] = true
							mu.Unlock()
						}
					}
				}()
			}
			for range removers {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for ctx.Err() == nil && ncreated.Load() < target {
						old, err := d.Remove(ctx, region, "k")
						if err != nil {
							fail(fmt.Errorf("remove: %w", err))
							return
						}
						if old != nil {
							mu.Lock()
							returned[string(old)]++
							mu.Unlock()
						}
					}
				}()
			}
			wg.Wait()
			if err := ctx.Err(); err != nil {
				t.Fatalf("the writers created %d of %d values before the deadline", ncreated.Load(), target)
			}
			for _, err := range failures {
				t.Fatal(err)
			}
			left, err := d.Get(ctx, region, "k")
			if err != nil {
				t.Fatalf("get: %v", err)
			}
			if left != nil {
				returned[string(left)]++ // still there counts as its one fate
			}
			var unknown, twice, lost []string
			for v, c := range returned {
				switch {
				case !created[v]:
					unknown = append(unknown, v)
				case c > 1:
					twice = append(twice, v)
				}
			}
			for v := range created {
				if returned[v] == 0 {
					lost = append(lost, v)
				}
			}
			t.Logf("%d values created, %d returned by removes or left", len(created), len(returned))
			if len(unknown)+len(twice)+len(lost) > 0 {
				first := func(vs []string) []string { return vs[:min(3, len(vs))] }
				t.Errorf("returned though never created: %d %q; returned more than once: %d, e.g. %q; created, never returned and gone: %d, e.g. %q",
					len(unknown), first(unknown), len(twice), first(twice), len(lost), first(lost))
			}
		})
	}
}
