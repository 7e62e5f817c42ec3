package client_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/kvnode/kvnode/client"
	"github.com/kvnode/kvnode/internal/waitfor"
)

// TestEntries runs every entry operation, and each of its errors, on a
// replicated and a partitioned region of a real 3-member cluster.
func TestEntries(t *testing.T) {
	tc := startCluster(t, 3, nil)
	c := tc.c
	for _, kind := range []string{client.Replicate, client.Partition} {
		name := "r" + strings.ToLower(kind)
		t.Run(kind, func(t *testing.T) {
			if err := c.CreateRegion(ctx(t), client.RegionInfo{Name: name, Type: kind}); err != nil {
				t.Fatalf("CreateRegion: %v", err)
			}
			err := c.CreateRegion(ctx(t), client.RegionInfo{Name: name, Type: kind})
			if !errors.Is(err, client.ErrConflict) {
				t.Fatalf("CreateRegion again = %v, want ErrConflict", err)
			}
			info, err := c.RegionInfo(ctx(t), name)
			if err != nil || info.Name != name || info.Type != kind {
				t.Fatalf("RegionInfo = %+v, %v", info, err)
			}
			testEntryOps(t, c.Region(name), kind)
		})
	}
	t.Run("regions", func(t *testing.T) {
		rs, err := c.Regions(ctx(t))
		if err != nil || len(rs) != 2 || rs[0].Name != "rpartition" || rs[0].Type != client.Partition || rs[1].Name != "rreplicate" {
			t.Fatalf("Regions = %+v, %v", rs, err)
		}
		info, err := c.AlterRegion(ctx(t), "rreplicate", 60)
		if err != nil || info.EntryTimeToLive != 60 {
			t.Fatalf("AlterRegion = %+v, %v", info, err)
		}
		if _, err := c.RegionInfo(ctx(t), "nope"); !errors.Is(err, client.ErrNotFound) {
			t.Fatalf("RegionInfo(nope) = %v, want ErrNotFound", err)
		}
		if err := c.DestroyRegion(ctx(t), "rreplicate"); err != nil {
			t.Fatalf("DestroyRegion: %v", err)
		}
		if err := c.DestroyRegion(ctx(t), "rreplicate"); !errors.Is(err, client.ErrNotFound) {
			t.Fatalf("DestroyRegion again = %v, want ErrNotFound", err)
		}
		if _, err := c.Region("rreplicate").Get(ctx(t), "k"); !errors.Is(err, client.ErrNotFound) {
			t.Fatalf("Get in a destroyed region = %v, want ErrNotFound", err)
		}
	})
}

func testEntryOps(t *testing.T, r *client.Region, kind string) {
	order := func(n int) map[string]any { return map[string]any{"@type": "Order", "n": n} }
	same := func(got json.RawMessage, n int) bool {
		var v struct{ N int }
		return json.Unmarshal(got, &v) == nil && v.N == n
	}
	if err := r.Put(ctx(t), "a", order(1)); err != nil {
		t.Fatalf("Put: %v", err)
	}
	if v, err := r.Get(ctx(t), "a"); err != nil || !same(v, 1) {
		t.Fatalf("Get = %s, %v", v, err)
	}
	// A stale read may be served by a replica a little behind.
	waitfor.Cond(t, 10*time.Second, "a stale read to see the put", func() bool {
		v, err := r.Get(ctx(t), "a", client.Stale())
		return err == nil && same(v, 1)
	})
	if _, err := r.Get(ctx(t), "missing"); !errors.Is(err, client.ErrNotFound) {
		t.Fatalf("Get(missing) = %v, want ErrNotFound", err)
	}
	// A key that is the word of the /keys listing, and keys that need
	// escaping, are keys like any other.
	odd := []string{"keys", "a b/c?d", "ü%2F"}
	for i, k := range odd {
		if err := r.Put(ctx(t), k, order(10+i)); err != nil {
			t.Fatalf("Put(%q): %v", k, err)
		}
		if v, err := r.Get(ctx(t), k); err != nil || !same(v, 10+i) {
			t.Fatalf("Get(%q) = %s, %v", k, v, err)
		}
	}
	if err := r.Delete(ctx(t), odd...); err != nil {
		t.Fatalf("Delete(%q): %v", odd, err)
	}

	var batch []client.Entry
	for i := range 50 {
		batch = append(batch, client.Entry{Key: fmt.Sprintf("b%02d", i), Value: order(i)})
	}
	if err := r.PutAll(ctx(t), batch); err != nil {
		t.Fatalf("PutAll: %v", err)
	}
	vs, err := r.GetMany(ctx(t), []string{"b07", "nope", "b49"})
	if err != nil || len(vs) != 3 || !same(vs[0], 7) || vs[1] != nil || !same(vs[2], 49) {
		t.Fatalf("GetMany = %q, %v", vs, err)
	}
	if n, err := r.Count(ctx(t)); err != nil || n != 51 {
		t.Fatalf("Count = %d, %v; want 51", n, err)
	}

	// put-if-absent
	if k, err := r.Create(ctx(t), "c", order(3)); err != nil || k != "c" {
		t.Fatalf("Create = %q, %v", k, err)
	}
	_, err = r.Create(ctx(t), "c", order(4))
	var ae *client.Error
	if !errors.Is(err, client.ErrConflict) || !errors.As(err, &ae) || !same(ae.Current, 3) {
		t.Fatalf("Create of an existing key = %v (current %s), want ErrConflict with the value 3", err, currentOf(err))
	}
	gen, err := r.Create(ctx(t), "", order(5))
	if err != nil || gen == "" {
		t.Fatalf("Create with a generated key = %q, %v", gen, err)
	}
	if v, err := r.Get(ctx(t), gen); err != nil || !same(v, 5) {
		t.Fatalf("Get(generated %q) = %s, %v", gen, v, err)
	}

	// replace and compare-and-set
	if err := r.Replace(ctx(t), "c", order(6)); err != nil {
		t.Fatalf("Replace: %v", err)
	}
	if err := r.Replace(ctx(t), "nope", order(6)); !errors.Is(err, client.ErrNotFound) {
		t.Fatalf("Replace(missing) = %v, want ErrNotFound", err)
	}
	if err := r.CompareAndSet(ctx(t), "c", order(6), order(7)); err != nil {
		t.Fatalf("CompareAndSet: %v", err)
	}
	err = r.CompareAndSet(ctx(t), "c", order(6), order(8))
	if !errors.Is(err, client.ErrConflict) || !same(currentOf(err), 7) {
		t.Fatalf("CompareAndSet with a stale value = %v (current %s), want ErrConflict with the value 7", err, currentOf(err))
	}
	if err := r.CompareAndSet(ctx(t), "nope", order(1), order(2)); !errors.Is(err, client.ErrNotFound) {
		t.Fatalf("CompareAndSet(missing) = %v, want ErrNotFound", err)
	}

	// multi-key replace and compare-and-set: all or nothing
	two := []client.Entry{{Key: "b00", Value: order(100)}, {Key: "b01", Value: order(101)}}
	if err := r.ReplaceAll(ctx(t), two); err != nil {
		t.Fatalf("ReplaceAll: %v", err)
	}
	if err := r.ReplaceAll(ctx(t), []client.Entry{{Key: "b00", Value: order(1)}, {Key: "nope", Value: order(1)}}); !errors.Is(err, client.ErrNotFound) {
		t.Fatalf("ReplaceAll with a missing key = %v, want ErrNotFound", err)
	}
	swaps := []client.Swap{{Key: "b00", Old: order(100), New: order(200)}, {Key: "b01", Old: order(101), New: order(201)}}
	if err := r.CompareAndSetAll(ctx(t), swaps); err != nil {
		t.Fatalf("CompareAndSetAll: %v", err)
	}
	err = r.CompareAndSetAll(ctx(t), []client.Swap{{Key: "b00", Old: order(200), New: order(300)}, {Key: "b01", Old: order(101), New: order(301)}})
	if !errors.Is(err, client.ErrConflict) || !same(currentOf(err), 201) {
		t.Fatalf("CompareAndSetAll with a stale value = %v (current %s), want ErrConflict with the value 201", err, currentOf(err))
	}
	if vs, err := r.GetMany(ctx(t), []string{"b00", "b01"}); err != nil || !same(vs[0], 200) || !same(vs[1], 201) {
		t.Fatalf("after a refused CompareAndSetAll: %q, %v; want 200 and 201 (nothing stored)", vs, err)
	}

	// delete: all or nothing
	if err := r.Delete(ctx(t), "c", "nope"); !errors.Is(err, client.ErrNotFound) {
		t.Fatalf("Delete with a missing key = %v, want ErrNotFound", err)
	}
	if _, err := r.Get(ctx(t), "c"); err != nil {
		t.Fatalf("Get after a refused Delete = %v: the delete was not all or nothing", err)
	}
	if err := r.Delete(ctx(t), "c"); err != nil {
		t.Fatalf("Delete: %v", err)
	}

	// time to live
	if err := r.Put(ctx(t), "ttl", order(9), client.WithTTL(time.Second)); err != nil {
		t.Fatalf("Put with a TTL: %v", err)
	}
	waitfor.Cond(t, 15*time.Second, "the entry to expire", func() bool {
		_, err := r.Get(ctx(t), "ttl")
		return errors.Is(err, client.ErrNotFound)
	})

	// bad input is refused before it is sent, or by the member
	if err := r.Put(ctx(t), "x", json.RawMessage(`{"a":`)); !errors.Is(err, client.ErrInvalidArgument) {
		t.Fatalf("Put of broken JSON = %v, want ErrInvalidArgument", err)
	}
	if err := r.Put(ctx(t), "x", []int{1}); !errors.Is(err, client.ErrInvalid) {
		t.Fatalf("Put of an array = %v, want ErrInvalid (a 400)", err)
	}

	err = r.Clear(ctx(t))
	if kind == client.Partition {
		if err == nil || !strings.Contains(err.Error(), "405") {
			t.Fatalf("Clear of a partitioned region = %v, want a 405", err)
		}
		return
	}
	if err != nil {
		t.Fatalf("Clear: %v", err)
	}
	if n, err := r.Count(ctx(t)); err != nil || n != 0 {
		t.Fatalf("Count after Clear = %d, %v", n, err)
	}
}

// currentOf is the value a conflict carried.
func currentOf(err error) json.RawMessage {
	var ae *client.Error
	if errors.As(err, &ae) {
		return ae.Current
	}
	return nil
}

// TestSingleHop: once the client has the routing document, each key's
// write and linearizable read goes to its group's leader, which serves it
// without asking another member; stale reads go to the members in turn.
func TestSingleHop(t *testing.T) {
	tc := startCluster(t, 3, nil)
	c := tc.c
	for _, kind := range []string{client.Replicate, client.Partition} {
		name := "h" + strings.ToLower(kind)
		if err := c.CreateRegion(ctx(t), client.RegionInfo{Name: name, Type: kind}); err != nil {
			t.Fatal(err)
		}
	}
	rt, err := c.Routing(ctx(t))
	if err != nil {
		t.Fatalf("Routing: %v", err)
	}
	if rt.Buckets != 113 || len(rt.Owners) != 113 || rt.Hash != "fnv1a64" || rt.Version == 0 || len(rt.Groups) != 5 {
		t.Fatalf("routing document = %+v", rt)
	}
	for _, g := range rt.Groups {
		if g.Leader == "" || g.URL == "" {
			t.Fatalf("group %d has no leader in %+v", g.Group, rt)
		}
	}
	tc.seen.take()
	before := c.Stats()
	for _, name := range []string{"hreplicate", "hpartition"} {
		r := c.Region(name)
		for i := range 40 {
			key := fmt.Sprintf("k%d", i)
			if err := r.Put(ctx(t), key, map[string]int{"i": i}); err != nil {
				t.Fatal(err)
			}
			if _, err := r.Get(ctx(t), key); err != nil {
				t.Fatal(err)
			}
		}
	}
	leaders := map[string]bool{}
	for _, ex := range tc.seen.take() {
		if !ex.routed {
			t.Errorf("%s %s was not routed", ex.method, ex.url)
			continue
		}
		if h := ex.header.Get("Kvnode-Hops"); h != "0" {
			t.Errorf("%s %s: Kvnode-Hops %q, want 0 (the leader served it)", ex.method, ex.url, h)
		}
		leaders[ex.url[:strings.Index(ex.url, "/kv/")]] = true
	}
	// Stats counts them: 160 requests, every one routed, none forwarded.
	if s := c.Stats(); s.Requests-before.Requests != 160 || s.Routed-before.Routed != 160 || s.Forwarded != before.Forwarded {
		t.Errorf("Stats went from %+v to %+v; want 160 more requests, all routed, none forwarded", before, s)
	}
	if len(leaders) < 2 {
		t.Errorf("every routed request went to %v: the partition groups' leaders are not used", leaders)
	}
	// A stale read is not routed.
	if _, err := c.Region("hreplicate").Get(ctx(t), "k1", client.Stale()); err != nil {
		t.Fatal(err)
	}
	for _, ex := range tc.seen.take() {
		if ex.routed {
			t.Errorf("stale read %s was routed", ex.url)
		}
	}
	// A request sent to a member that does not lead is forwarded, and the
	// member says so.
	leaderURL := rt.LeaderURL("hreplicate", "k1")
	for _, name := range tc.names {
		n := tc.Nodes[name]
		if n.RESTURL() == leaderURL {
			continue
		}
		req, _ := http.NewRequest(http.MethodGet, n.RESTURL()+"/kv/v1/hreplicate/k1", nil)
		req.Header.Set("Kvnode-Route", "1")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != 200 || resp.Header.Get("Kvnode-Hops") != "1" {
			t.Errorf("linearizable GET on follower %s = %d, Kvnode-Hops %q; want 200 and 1", name, resp.StatusCode, resp.Header.Get("Kvnode-Hops"))
		}
	}
}
