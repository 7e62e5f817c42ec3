// Package query runs OQL queries on a member, over the regions as package
// regions routes them: the scatter-gather beside package oql, which parses,
// plans, evaluates and merges but never reads a replica itself.
//
// A query over replicated regions runs here after one read barrier on the
// control group (none for a stale read). A query whose first FROM iterator
// is a partitioned region scatters: one replica of each partition group
// runs the query's partial (WHERE, projection, DISTINCT, per-group ORDER
// BY/LIMIT or partial aggregates) over its share, after a read barrier on
// its group, here when this member hosts a usable replica or on a member
// that does (the query RPC this package serves), and this member merges
// the partials. Compiled queries are cached by text.
//
// It reaches the store only through Groups (store.Router implements it)
// and the regions through regions.Parts. It must not import store,
// raftgroup, transport, reconcile, cluster, rest, memberlist or Echo.
package query
