package route

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/kvnode/kvnode/region"
)

// TestBucketIsTheMembers: the client hashes every key as the members do.
func TestBucketIsTheMembers(t *testing.T) {
	for i := range 5000 {
		k := fmt.Sprintf("key-%d-é/%d", i, i*7919)
		if got, want := Bucket(k, region.Buckets), region.Bucket(k); got != want {
			t.Fatalf("Bucket(%q) = %d, the members' %d", k, got, want)
		}
	}
}

func TestTable(t *testing.T) {
	owners := make([]uint64, region.Buckets)
	for b := range owners {
		owners[b] = uint64(1 + b%2)
	}
	leaders := map[uint64]string{0: "http://c", 1: "http://one", 2: "http://two"}
	tb := NewTable(7, region.Buckets, owners, []string{"p"}, leaders)
	for _, k := range []string{"a", "b", "c", "d"} {
		u, v := tb.Leader("p", k)
		if want := leaders[owners[region.Bucket(k)]]; u != want || v != 7 {
			t.Errorf("Leader(p, %s) = %s, %d; want %s, 7", k, u, v, want)
		}
		if u, _ := tb.Leader("replicated", k); u != "http://c" {
			t.Errorf("Leader(replicated, %s) = %s, want the control group's", k, u)
		}
	}
	// Owners of the wrong length: every region goes to the control group.
	if u, _ := NewTable(1, region.Buckets, owners[:3], []string{"p"}, leaders).Leader("p", "a"); u != "http://c" {
		t.Errorf("with a short owner list, Leader = %s", u)
	}
	if u, v := NewTable(0, 0, nil, nil, map[uint64]string{}).Leader("r", "k"); u != "" || v != 0 {
		t.Errorf("an empty table names %q, %d", u, v)
	}
}

// TestRouter: a newer table wins, an older one is ignored; reads of the
// document are spaced by RefreshEvery, one at a time, and stop for OffFor
// once refused.
func TestRouter(t *testing.T) {
	var reads atomic.Int32
	refuse := atomic.Bool{}
	r := NewRouter(func(context.Context) bool { reads.Add(1); return refuse.Load() })
	if u, _ := r.Leader("r", "k"); u != "" {
		t.Fatalf("a router without a table names %q", u)
	}
	r.Install(NewTable(5, 0, nil, nil, map[uint64]string{0: "http://new"}))
	r.Install(NewTable(4, 0, nil, nil, map[uint64]string{0: "http://old"}))
	if u, v := r.Leader("r", "k"); u != "http://new" || v != 5 {
		t.Fatalf("Leader = %s, %d; want the newer table's", u, v)
	}
	for range 100 {
		r.Stale()
	}
	time.Sleep(50 * time.Millisecond)
	if n := reads.Load(); n != 1 {
		t.Fatalf("%d reads after a burst of Stale (one before it, from Leader), want 1", n)
	}
	time.Sleep(RefreshEvery)
	refuse.Store(true)
	r.Stale()
	time.Sleep(50 * time.Millisecond)
	time.Sleep(RefreshEvery)
	r.Stale()
	time.Sleep(50 * time.Millisecond)
	if n := reads.Load(); n != 2 {
		t.Fatalf("%d reads, want 2: a refused read stops them for OffFor", n)
	}
}
