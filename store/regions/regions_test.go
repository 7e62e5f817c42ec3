package regions

import (
	"context"
	"encoding/json"
	"errors"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/kvnode/kvnode/internal/waitfor"
	"github.com/kvnode/kvnode/region"
	"github.com/kvnode/kvnode/store"
)

// These tests run the regions over a real store (package store does not
// import regions; the layering forbids the converse only outside tests).

func ctxT(t *testing.T, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

// soloNode starts a single-member store (no gossip: it is its own
// cluster) and returns it with the regions over it, once it leads.
func soloNode(t *testing.T) (*store.Store, *API) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s, err := store.New(store.Config{NodeName: "solo", DataDir: t.TempDir(), Listener: ln, Advertise: ln.Addr().String()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	r := New(s.Router(), nil)
	s.Start()
	if err := s.WaitLeader(ctxT(t, 20*time.Second)); err != nil {
		t.Fatal(err)
	}
	return s, r
}

// TestCreateIndexConflict: creating an index under a taken name answers
// the existing definition; when the index is deleted between the conflict
// and the read of that definition, the create is tried again and
// succeeds; when the store closes in that window, the answer is that the
// node is shutting down. (The read used to be the local state machine's
// at once: a deleted index gave a conflict without a definition, and a
// closed store a nil pointer dereference.)
func TestCreateIndexConflict(t *testing.T) {
	s, n := soloNode(t)
	if err := n.CreateRegion(ctxT(t, 10*time.Second), region.Info{Name: "orders", Kind: region.Replicate}); err != nil {
		t.Fatal(err)
	}
	def := region.IndexInfo{Name: "byCustomer", Expression: "o.customerId", From: "/orders o"}
	// exists makes sure an index named def.Name exists, so that each case
	// starts with a conflict whatever the previous one left.
	exists := func(t *testing.T) {
		t.Helper()
		if err := n.CreateIndex(ctxT(t, 10*time.Second), "orders", def); err != nil && !errors.Is(err, region.ErrKeyExists) {
			t.Fatalf("create index: %v", err)
		}
	}

	t.Run("taken", func(t *testing.T) {
		exists(t)
		err := n.CreateIndex(ctxT(t, 10*time.Second), "orders", def)
		var ce *region.ConflictError
		if !errors.As(err, &ce) || !errors.Is(err, region.ErrKeyExists) {
			t.Fatalf("second create = %v, want a *region.ConflictError with ErrKeyExists", err)
		}
		var got region.IndexInfo
		if err := json.Unmarshal(ce.Current, &got); err != nil || got.Name != def.Name || got.Expression != def.Expression {
			t.Fatalf("conflict carries %s (%v), want the definition of %s", ce.Current, err, def.Name)
		}
	})

	t.Run("deleted after the conflict", func(t *testing.T) {
		exists(t)
		n.conflictHook = func() {
			n.conflictHook = nil
			if err := n.DeleteIndex(ctxT(t, 10*time.Second), "orders", def.Name); err != nil {
				t.Errorf("delete index in the window: %v", err)
			}
		}
		defer func() { n.conflictHook = nil }()
		other := def
		other.Expression = "o.email"
		if err := n.CreateIndex(ctxT(t, 10*time.Second), "orders", other); err != nil {
			t.Fatalf("create over an index deleted after the conflict = %v, want it created", err)
		}
		idx, err := n.Indexes(ctxT(t, 10*time.Second), region.Linearizable, "orders")
		if err != nil || len(idx) != 1 || idx[0].Expression != "o.email" {
			t.Fatalf("indexes = %+v, %v; want the new byCustomer on o.email", idx, err)
		}
	})

	t.Run("closed after the conflict", func(t *testing.T) {
		exists(t)
		n.conflictHook = func() {
			n.conflictHook = nil
			if err := s.Close(); err != nil {
				t.Errorf("close in the window: %v", err)
			}
		}
		err := n.CreateIndex(ctxT(t, 10*time.Second), "orders", def)
		if !errors.Is(err, region.ErrNoLeader) || !strings.Contains(err.Error(), "shutting down") {
			t.Fatalf("create on a store closed after the conflict = %v, want ErrNoLeader saying the node is shutting down", err)
		}
	})
}

// TestSpansGroupsWaitsForTheTable: before this node knows the partition
// table, whether keys span groups is unknown; it used to answer "no", and a
// multi-group REPLACE, CAS or DELETE then skipped the precheck that keeps it
// all-or-nothing. Now it waits for the table like any partitioned
// operation, and fails (503) when none comes.
func TestSpansGroupsWaitsForTheTable(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	// Not started: no bootstrap, so no partition table, for as long as the
	// test needs.
	s, err := store.New(store.Config{NodeName: "n1", DataDir: t.TempDir(), Listener: ln, Advertise: ln.Addr().String(), LeaderWait: 200 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	r := New(s.Router(), nil)
	keys := []string{"a", "b", "c", "d", "e", "f"}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	spans, err := r.parts.spansGroups(ctx, keys)
	if !errors.Is(err, region.ErrNoLeader) {
		t.Fatalf("spansGroups without a partition table = %v, %v; want an ErrNoLeader error (503), not an answer", spans, err)
	}
}

// TestTimeToLiveBounds: a time-to-live is refused below 0 and above
// region.MaxTTL, a region's default in whole seconds only, and nothing is
// written or changed then; a positive time-to-live under a millisecond
// still expires (it is not 0, never).
func TestTimeToLiveBounds(t *testing.T) {
	_, n := soloNode(t)
	ctx := ctxT(t, 20*time.Second)
	for _, ttl := range []int64{-1, int64(region.MaxTTL/time.Second) + 1} {
		if err := n.CreateRegion(ctx, region.Info{Name: "bad", Kind: region.Replicate, EntryTimeToLive: ttl}); !errors.Is(err, region.ErrInvalid) {
			t.Errorf("create with entryTimeToLive %d: got %v, want ErrInvalid", ttl, err)
		}
	}
	if err := n.CreateRegion(ctx, region.Info{Name: "r", Kind: region.Partition, EntryTimeToLive: 60}); err != nil {
		t.Fatal(err)
	}
	for _, ttl := range []time.Duration{-time.Second, 1500 * time.Millisecond, region.MaxTTL + time.Second} {
		if err := n.AlterRegion(ctx, "r", ttl); !errors.Is(err, region.ErrInvalid) {
			t.Errorf("alter to %v: got %v, want ErrInvalid", ttl, err)
		}
	}
	for _, ttl := range []time.Duration{-time.Nanosecond, region.MaxTTL + time.Millisecond} {
		v := []region.Entry{{Key: "k", Value: json.RawMessage(`{}`)}}
		if err := n.Put(ctx, "r", v, region.TTL{Duration: ttl, Set: true}); !errors.Is(err, region.ErrInvalid) {
			t.Errorf("put with ttl %v: got %v, want ErrInvalid", ttl, err)
		}
		if _, err := n.PutIfAbsent(ctx, "r", v[0], region.TTL{Duration: ttl, Set: true}); !errors.Is(err, region.ErrInvalid) {
			t.Errorf("put-if-absent with ttl %v: got %v, want ErrInvalid", ttl, err)
		}
	}
	if err := n.AlterRegion(ctx, "nope", time.Second); !errors.Is(err, region.ErrRegionNotFound) {
		t.Errorf("alter an unknown region: got %v, want ErrRegionNotFound", err)
	}
	if info, err := n.Region(ctx, region.Linearizable, "r"); err != nil || info.EntryTimeToLive != 60 {
		t.Errorf("after the refusals: got %+v, %v; want entryTimeToLive 60", info, err)
	}
	if got, err := n.Keys(ctx, region.Linearizable, "r"); err != nil || len(got) != 0 {
		t.Errorf("after the refused puts: keys %q, %v; want none", got, err)
	}
	if err := n.AlterRegion(ctx, "r", 2*time.Hour); err != nil {
		t.Fatal(err)
	}
	if info, _ := n.Region(ctx, region.Linearizable, "r"); info.EntryTimeToLive != 7200 {
		t.Errorf("after alter to 2h: entryTimeToLive %d, want 7200", info.EntryTimeToLive)
	}
	if err := n.Put(ctx, "r", []region.Entry{{Key: "brief", Value: json.RawMessage(`{}`)}}, region.TTL{Duration: time.Microsecond, Set: true}); err != nil {
		t.Fatal(err)
	}
	waitfor.Cond(t, 10*time.Second, "the entry written with a 1 µs time-to-live to expire", func() bool {
		vals, err := n.Get(ctx, region.Linearizable, "r", []string{"brief"})
		return err == nil && vals[0] == nil
	})
}
