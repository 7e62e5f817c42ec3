// Package chaos checks kvnode the way Jepsen and etcd's robustness tests
// do: concurrent clients record every operation (invocation and return
// times, and what came back) while faults are injected, and the history is
// checked for linearizability with porcupine against a sequential model of
// the REST API's semantics; a ledger of acknowledged writes is checked on
// every member at the end. docs/chaos.md says how to run it and holds the
// results.
//
// The pieces:
//   - model/ (package model): the per-family model, the history, the
//     check and what is saved when it fails (the history and porcupine's
//     HTML); its doc.go says how families and indeterminate outcomes are
//     checked.
//   - workload/ (package workload): the clients whose operations are
//     recorded and checked, the REST form of each, and the ledger writer.
//   - probe.go, cluster.go: the per-member probes that measure failover,
//     and who leads what, read from the management views, for the
//     nemeses to aim at.
//   - netproxy/ (package netproxy): the link proxies of the process
//     backend (blackhole, reset, delay, per direction of a link between
//     two members).
//   - backend/ (package backend): one interface (backend.Cluster) over
//     kvnode processes on 127.0.0.0/8 and over the docker-compose cluster.
//   - powerfs/ (package powerfs), power.go: the FUSE file system under
//     each process member's data that loses, on a power cut, what was not
//     fsynced, and the power-loss nemeses.
//   - run.go, scenarios.go, report.go: a run of one scenario, the nemeses,
//     and the reports and docs/chaos.md tables.
//
// Everything but the scenarios' test (chaos_test.go, build tag chaos,
// which starts clusters and runs for minutes) builds and is unit-tested
// with the rest of the module.
package chaos
