// Package fsm is the state machine of one Raft group (hashicorp/raft): the
// replicated regions and their entries, and everything that must be exactly
// the same on every replica.
//
// It owns:
//
//   - Apply and ApplyBatch, which decide every write deterministically —
//     put-if-absent, replace, compare-and-set (with JSON equality as Geode's
//     REST API has it), generated keys — and report refusals as region
//     sentinel errors in a *codec.Result; a committed entry it cannot decode or
//     apply halts it (Halted) instead of panicking, so one bad entry stops
//     one group, not the node;
//   - snapshots: an O(1)-per-region copy-on-write capture, a streamed,
//     checksummed Persist, and a Restore that swaps in fully built state;
//   - local reads with no consistency barrier, and the applied index
//     (AppliedIndex, WaitApplied) that the store's read-index protocol waits
//     on;
//   - each replica's secondary indexes as the store sees them (SetIndexes,
//     IndexVersion, IndexScan, IndexLen, WaitIndexes). Keeping a region's
//     indexes exact and building them in the background is package
//     indexset's (fsm/indexset): the FSM tells it every write, under its
//     lock, and when a region leaves the state.
//
// Entries of a region live in a copy-on-write B-tree (google/btree), so reads
// are ordered and snapshots cheap. Values are the exact JSON bytes the caller
// sent; the package never re-serializes them.
//
// The commands it applies and the results it answers with are package
// codec's (fsm/codec): their types, their encodings (on disk in Raft logs
// forever, pinned by codec's golden files) and the checks of their
// structure. fsm decodes committed entries with it and decides what each
// command means, but owns no byte of either format.
//
// It imports no other kvnode package but region, index and its own codec
// and indexset. DESIGN.md describes the snapshot format, the determinism
// rules, the applied index and how the FSM keeps indexset's contract.
package fsm
