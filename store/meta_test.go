package store

import (
	"errors"
	"testing"
	"time"

	"github.com/kvnode/kvnode/region"
	"github.com/kvnode/kvnode/store/catalog"
)

// TestSetMetaKeepsTheStoresKeys: the catalog's writes cannot reach the
// partition table or index definitions, which only the store changes.
func TestSetMetaKeepsTheStoresKeys(t *testing.T) {
	tc := newTestCluster(t, 1)
	n := tc.start("solo")
	tc.leader()
	ctx := ctxT(t, 20*time.Second)
	for _, key := range []string{tableKey, indexKey("orders", "byId")} {
		_, before, _, err := n.Meta(ctx, region.Linearizable, key)
		if err != nil {
			t.Fatal(err)
		}
		if err := n.SetMeta(ctx, key, before, []byte(`{}`)); !errors.Is(err, region.ErrInvalid) {
			t.Errorf("SetMeta(%q) = %v, want ErrInvalid", key, err)
		}
		// The table may be written meanwhile by the store itself, never
		// to what the refused call carried.
		if v, _, _, err := n.Meta(ctx, region.Linearizable, key); err != nil || string(v) == `{}` {
			t.Errorf("after the refused SetMeta, %q = %s (%v)", key, v, err)
		}
	}
	if err := n.SetMeta(ctx, catalog.QueryPrefix+"q", 0, []byte("SELECT 1 FROM /r")); err != nil {
		t.Fatalf("SetMeta of a catalog key: %v", err)
	}
	list, err := n.MetaList(ctx, region.Linearizable, catalog.QueryPrefix)
	if err != nil || len(list) != 1 || list[0].Key != "query/q" || list[0].Version == 0 {
		t.Errorf("MetaList = %+v, %v; want query/q with its version", list, err)
	}
}
