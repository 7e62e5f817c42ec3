package store

import (
	"context"

	"github.com/kvnode/kvnode/store/catalog"
)

// Index definitions live in the control group's metadata (package
// catalog's layout; package store/regions creates and deletes them);
// every replica builds its own indexes from its entries. The store
// installs the definitions into its local state machines on every round
// of its partition loop and before every query.

// AwaitIndexes waits, as long as ctx allows, until this node's replicas
// have built the indexes defined as of the control group's log index
// version: then queries on this node use a new index as soon as its
// creation is acknowledged, as they did when indexes were built in the
// query's path. Other members build theirs from their partition loops and
// scan meanwhile. The definition is committed whatever happens here, so a
// wait cut short is not an error (the builds go on).
func (r *Router) AwaitIndexes(ctx context.Context, version uint64) {
	g0 := r.groups.control()
	if g0 == nil || g0.FSM().WaitApplied(ctx, version) != nil {
		return
	}
	r.SyncIndexes()
	for _, g := range r.groups.sorted() {
		if g.FSM().Indexes().Wait(ctx) != nil {
			return
		}
	}
}

// SyncIndexes installs the current index definitions into every local
// state machine whose set is older (catalog.Indexes gives the set a
// version that any create or delete changes). SetIndexes takes the
// definitions and returns: a state machine reports the new version at
// once, while large indexes still build in the background, so later calls
// neither wait for nor restart those builds.
func (r *Router) SyncIndexes() {
	g0 := r.groups.control()
	if g0 == nil {
		return
	}
	set := catalog.Indexes(metaEntries(g0.FSM().MetaList(catalog.IndexPrefix)))
	for _, err := range set.Bad {
		r.logger.Warn("index definition does not decode", "error", err)
	}
	for _, g := range r.groups.sorted() {
		if g.FSM().Indexes().Version() != set.Version {
			g.FSM().Indexes().Set(set.Version, set.Defs)
		}
	}
}
