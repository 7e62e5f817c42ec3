package rest

import (
	"context"
	"net"
	"path/filepath"
	"testing"
	"time"

	"github.com/kvnode/kvnode/store"
	"github.com/kvnode/kvnode/store/catalog"
	"github.com/kvnode/kvnode/store/query"
	"github.com/kvnode/kvnode/store/raftgroup"
	"github.com/kvnode/kvnode/store/regions"
)

// newTestStore is the one constructor every test of real handlers goes
// through: a real single-node store (Raft with its boltdb log on disk, the
// state machine, the read barrier) with the regions, the query engine and
// the catalog over it, standalone,
// without gossip. Handlers are tested over exactly what production runs
// (package node joins the two the same way).
func newTestStore(tb testing.TB) Store {
	tb.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatalf("listen: %v", err)
	}
	st, err := store.New(store.Config{
		NodeName:  "rest-test",
		DataDir:   filepath.Join(tb.TempDir(), "data"),
		Listener:  ln,
		Advertise: ln.Addr().String(),
		Raft: raftgroup.Config{
			HeartbeatTimeout:   100 * time.Millisecond,
			ElectionTimeout:    100 * time.Millisecond,
			LeaderLeaseTimeout: 100 * time.Millisecond,
		},
	})
	if err != nil {
		tb.Fatalf("open store: %v", err)
	}
	tb.Cleanup(func() {
		if err := st.Close(); err != nil {
			tb.Errorf("close store: %v", err)
		}
	})
	regs := regions.New(st.Router(), nil)
	queries := query.New(st.Router(), regs.Parts())
	st.Start()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := st.WaitLeader(ctx); err != nil {
		tb.Fatalf("single-node store has no leader: %v", err)
	}
	// Serve as a real node does once its readiness probe passes: with the
	// partition table written and its partition groups led.
	for st.Ready(ctx) != nil {
		if ctx.Err() != nil {
			tb.Fatalf("single-node store is not ready after 10 s: %v", st.Ready(context.Background()))
		}
		time.Sleep(5 * time.Millisecond)
	}
	return testData{Store: st, API: regs, Engine: queries, Catalog: catalog.New(st.Router())}
}

// testData is the store, its regions, queries and catalog as one Store.
type testData struct {
	*store.Store
	*regions.API
	*query.Engine
	*catalog.Catalog
}
