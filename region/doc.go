// Package region is the vocabulary every other kvnode package shares: region
// kinds and descriptions, entries, compare-and-set pairs, read consistency,
// the limits on names and keys, and the sentinel errors that travel from the
// state machine through the store to the REST layer.
//
// It imports only the standard library so that every package, pure or not,
// can depend on it without pulling in Raft, gossip or HTTP. The mapping from
// these errors to HTTP statuses lives in one table in package rest.
package region
