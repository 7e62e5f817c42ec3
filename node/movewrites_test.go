package node_test

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/kvnode/kvnode/node/nodetest"
)

// TestWritesDuringMovesAreKept: buckets are copied while their source
// still takes writes, and only what changed meanwhile is copied once
// sealed (store/rebalance). A writer that updates and deletes keys of
// every bucket throughout a rebalance from 4 to 8 groups must find, once
// it is done, exactly what it was told: each key's last acknowledged
// value, or no key where the last acknowledged operation deleted it, by
// key and in the region's count.
func TestWritesDuringMovesAreKept(t *testing.T) {
	ip := nodetest.New(t)
	n := ip.Start("a", 1)
	ip.Leader()
	nodetest.MustCall(t, n, "POST", "/management/v1/regions", `{"name":"mv","type":"PARTITION"}`, 201)
	const keys = 3000
	// Seed every key, 500 a request, so that pages take a while to copy.
	pad := strings.Repeat("x", 150)
	for from := 0; from < keys; from += 500 {
		var ks, vs []string
		for i := from; i < from+500; i++ {
			ks = append(ks, fmt.Sprintf("m%d", i))
			vs = append(vs, fmt.Sprintf(`{"v":0,"pad":%q}`, pad))
		}
		nodetest.MustCall(t, n, "PUT", "/kv/v1/mv/"+strings.Join(ks, ","), "["+strings.Join(vs, ",")+"]", 200)
	}
	model := make([]string, keys) // the last acknowledged value, "" when deleted
	for i := range model {
		model[i] = fmt.Sprintf(`{"v":0,"pad":%q}`, pad)
	}
	uncertain := map[int]bool{}

	var stop atomic.Bool
	done := make(chan int)
	go func() {
		ops := 0
		rng := rand.New(rand.NewPCG(1, 2))
		for deadline := time.Now().Add(2 * time.Minute); !stop.Load() && time.Now().Before(deadline); ops++ {
			i := rng.IntN(keys)
			path := fmt.Sprintf("/kv/v1/mv/m%d", i)
			if rng.IntN(4) == 0 {
				r := nodetest.Call(t, n, "DELETE", path, "")
				switch r.Status {
				case 200, 404:
					model[i] = ""
				default:
					uncertain[i] = true
				}
				continue
			}
			v := fmt.Sprintf(`{"v":%d}`, ops+1)
			if r := nodetest.Call(t, n, "PUT", path, v); r.Status == 200 {
				model[i] = v
			} else {
				uncertain[i] = true
			}
		}
		done <- ops
	}()

	moved := growAndWait(t, n, 8)
	stop.Store(true)
	ops := <-done
	t.Logf("%d writes and deletes during the rebalance (%d uncertain): %s", ops, len(uncertain), moved)
	if groups, owners := owners(t, n); groups != 8 || len(owners[8]) == 0 {
		t.Fatalf("after the rebalance: %d groups, owners %v", groups, owners)
	}
	live, bad := 0, 0
	for i, want := range model {
		if uncertain[i] {
			continue
		}
		r := nodetest.Call(t, n, "GET", fmt.Sprintf("/kv/v1/mv/m%d", i), "")
		got := map[bool]string{true: r.Body}[r.Status == 200]
		if r.Status != 200 && r.Status != 404 {
			t.Fatalf("GET m%d: %d %s", i, r.Status, r.Body)
		}
		if want != "" {
			live++
		}
		if got != want {
			if bad++; bad <= 5 {
				t.Errorf("m%d = %q (status %d), the last acknowledged write left %q", i, got, r.Status, want)
			}
		}
	}
	if bad > 5 {
		t.Errorf("... %d keys differ from their last acknowledged write", bad)
	}
	if len(uncertain) == 0 {
		r := nodetest.MustCall(t, n, "GET", "/kv/v1/queries/adhoc?q=SELECT+COUNT(*)+FROM+/mv", "", 200)
		if want := fmt.Sprintf("[%d]", live); r.Body != want {
			t.Errorf("COUNT(*) = %s, want %s", r.Body, want)
		}
	}
}
