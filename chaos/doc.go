// Package chaos checks kvnode the way Jepsen and etcd's robustness tests
// do: concurrent clients record every operation (invocation and return
// times, and what came back) while faults are injected, and the history is
// checked for linearizability with porcupine against a sequential model of
// the REST API's semantics; a ledger of acknowledged writes is checked on
// every member at the end, and a watcher's stream of changes against the
// history. docs/chaos.md says how to run it and holds the
// results.
//
// chaos itself owns the run of a scenario, and the packages under it the
// parts a run is made of (each one's doc.go says what it owns):
//   - run.go, scenarios.go, power.go: a run of one scenario (Execute):
//     the load and the nemesis side by side, then the cluster restored, the
//     final reads, and the checks; the nemeses, power-loss ones included.
//   - rebalance.go: the rebalance nemesis, which grows the partition
//     groups and moves buckets through the management API while faults
//     hit the members, and checks at the end that the cluster did what
//     it accepted (RebalanceReport).
//   - probe.go, cluster.go: the per-member probes that measure failover
//     (following the partition table when buckets move), and who leads
//     what, read from the management views, for the nemeses to aim at.
//   - watch.go: the run's watcher of each region's workload keys, live
//     before the load and given time to catch up after it, and its
//     verdict (WatchReport) from model.CheckWatch.
//   - report.go: the reports, and the docs/chaos.md tables made from them.
//   - model/: the per-family model of the REST semantics, the history, the
//     check and what is saved when it fails (the history and porcupine's
//     HTML).
//   - workload/: the clients whose operations are recorded and checked
//     (package client, each operation's call and the reading of its
//     answer), the ledger writer, and the watcher (client.Watch, which
//     resumes on another member whenever its stream ends).
//   - backend/: one interface (backend.Cluster) over kvnode processes on
//     127.0.0.0/8 and over the docker-compose cluster.
//   - netproxy/: the link proxies of the process backend (blackhole,
//     reset, delay, per direction of a link between two members).
//   - powerfs/: the FUSE file system under each process member's data
//     that loses, on a power cut, what was not fsynced.
//
// chaos depends on the parts, never the reverse: workload on model,
// backend on netproxy and powerfs. None of them may import kvnode's server
// packages (store, fsm, rest, cluster, node, ...): the suite tests kvnode
// from outside, through HTTP and its processes (imports_test.go checks).
//
// Everything but the scenarios' test (chaos_test.go, build tag chaos,
// which starts clusters and runs for minutes) builds and is unit-tested
// with the rest of the module.
package chaos
