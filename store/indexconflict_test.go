package store

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/kvnode/kvnode/region"
)

// TestCreateIndexConflict: creating an index under a taken name answers
// the existing definition; when the index is deleted between the conflict
// and the read of that definition, the create is tried again and
// succeeds; when the store closes in that window, the answer is that the
// node is shutting down. (The read used to be the local state machine's
// at once: a deleted index gave a conflict without a definition, and a
// closed store a nil pointer dereference.)
func TestCreateIndexConflict(t *testing.T) {
	tc := newTestCluster(t, 1)
	n := tc.start("solo")
	tc.leader()
	mustCreate(t, n.Store, "orders", region.Replicate)
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
			if err := n.Close(); err != nil {
				t.Errorf("close in the window: %v", err)
			}
		}
		err := n.CreateIndex(ctxT(t, 10*time.Second), "orders", def)
		if !errors.Is(err, region.ErrNoLeader) || !strings.Contains(err.Error(), "shutting down") {
			t.Fatalf("create on a store closed after the conflict = %v, want ErrNoLeader saying the node is shutting down", err)
		}
	})
}
