// Package model is what the chaos suite checks a run against: the
// sequential specification of kvnode's REST semantics, the history of
// operations concurrent clients record, and porcupine's linearizability
// check of one against the other.
//
// It owns:
//   - the operations (model.go): Kind, one per REST form, what a client
//     asked (Input) and what came back (Output), and the model porcupine
//     steps through (Porcupine), per family of keys (FamilyOf);
//   - the history (history.go): History records operations (Op) from
//     concurrent clients on one clock; Check runs porcupine over them, and
//     Verdict.Save writes a failed history and porcupine's visualization,
//     which LoadHistory reads back to check again;
//   - the watch check (watch.go): CheckWatch holds the events a watcher
//     of the workload's keys received (GET /kv/v1/watch, across its
//     reconnects) to the history: none missing, none invented, each
//     key's in an order the writes' real times allow, none twice.
//
// The model is per family of keys, and families are checked independently
// (porcupine's partitioning). A family's keys lie in one Raft group, so
// whatever one request does to them is all or nothing; a request over
// several families is checked as one part per family (partsOf), which is
// the promise of a partitioned region: each group's part of a request is
// atomic, the parts are independent. Every value written carries a number
// unique in the run, {"v":N}, so a read names exactly which write it saw.
// An operation whose outcome the client cannot know (a timeout, a 5xx, a
// cut connection) is recorded as indeterminate with a return time at
// Infinity: the checker may then place it anywhere after its invocation,
// which covers both "it took effect" and "it never did" (placed after
// everything else).
//
// Why a package of its own: the model is the suite's definition of
// correct, and it is pure (no network, no processes, no cluster), so the
// histories it must accept and reject, testdata's recorded stale read
// among them, are checked by every `go test ./...` without the chaos build
// tag or anything running. It needs no build tag. It must not import
// anything of kvnode, the server's packages least of all: it states what
// the REST API promises, not how the server keeps the promise. Nor net or
// os/exec: requests and processes are the workload's and the backends'
// (imports_test.go checks).
package model
