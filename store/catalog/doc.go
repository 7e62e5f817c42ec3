// Package catalog keeps the cluster's definitions that live as metadata
// in the control group (Raft group 0): named queries and deployed
// functions. It owns their key layout ("query/<id>", "function/<id>"),
// their validation, and the compare-and-set loops that make creating,
// replacing and deleting a definition safe when members race: a create
// that loses to another reports the winner's definition, a replace or
// delete that loses to another change retries against the newer version,
// and a definition deleted between a conflict and its read is created.
//
// It reaches the metadata only through Meta, which *store.Store
// implements, so it is tested over an in-memory one. Region and index
// definitions, and the partition table, are the store's own metadata
// (the store refuses writes to their keys from here).
//
// catalog must not import store, fsm, rest, cluster, raft or memberlist.
package catalog
