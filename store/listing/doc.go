// Package listing streams region listings (GET /kv/v1/{region}?limit=
// and .../keys) without holding a region in memory: a group's part is a
// Source (a local replica's frozen clone, or another member's scan stream
// read as it arrives), and Merge is their k-way merge in key order, which
// is what a partitioned region's listing is. It also owns the scan
// stream's framing, both sides:
//
//	head:  'h' { uvarint(len(key)+1) key }* uvarint(0) all(1 byte: 0|1)
//	entry: 'e' uvarint(len(key)) key uvarint(len(value)) value   ('k' and no value: keys only)
//	end:   'z' uvarint(entries sent)
//	error: 'x' uvarint(len(msg)) msg   (the listing failed part way)
//
// A stream that stops before its end frame (the member died, the
// connection broke) fails the listing: a partial answer is never taken
// for a whole one; and a merge that sees a key out of order fails rather
// than answer wrongly.
//
// The store decides what to read (read barriers, which replica, retries)
// and serves the scan RPC; listing must not import store, rest, cluster or
// memberlist (it reads local replicas through fsm, and imports no Raft).
package listing
