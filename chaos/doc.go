// Package chaos checks kvnode the way Jepsen and etcd's robustness tests
// do: concurrent clients record every operation (invocation and return
// times, and what came back) while faults are injected, and the history is
// checked for linearizability with porcupine against a sequential model of
// the REST API's semantics; a ledger of acknowledged writes is checked on
// every member at the end. docs/chaos.md says how to run it and holds the
// results.
//
// The pieces:
//   - model.go, history.go: the per-family model, the history, the check
//     and what is saved when it fails (the history and porcupine's HTML).
//   - workload.go, ledger.go, probe.go: the clients, the ledger writer, and
//     the per-member probes that measure failover.
//   - net.go: the link proxies of the process backend (blackhole, reset,
//     delay, per direction of a link between two members).
//   - backend.go, proc.go, compose.go: one interface over kvnode processes on
//     127.0.0.0/8 and over the docker-compose cluster.
//   - powerfs/, power.go: the FUSE file system under each process member's
//     data that loses, on a power cut, what was not fsynced, and the
//     power-loss nemeses.
//   - run.go, scenarios.go, report.go: a run of one scenario, the nemeses,
//     and the reports and docs/chaos.md tables.
//
// Everything but the scenarios' test (chaos_test.go, build tag chaos,
// which starts clusters and runs for minutes) builds and is unit-tested
// with the rest of the module.
//
// The model (Model) is per family of keys (FamilyOf), and families are
// checked independently (porcupine's partitioning). A family's keys lie in
// one Raft group, so whatever one request does to them is all or nothing;
// a request over several families is checked as one part per family
// (partsOf), which is the promise of a partitioned region: each group's
// part of a request is atomic, the parts are independent. Every value
// written carries a number unique in the run, {"v":N}, so a read names
// exactly which write it saw. An operation whose outcome the client cannot
// know (a timeout, a 5xx, a cut connection) is recorded as indeterminate
// with a return time at infinity: the checker may then place it anywhere
// after its invocation, which covers both "it took effect" and "it never
// did" (placed after everything else).
package chaos
