// Package metrics is a kvnode member's Prometheus metrics: one registry
// per node (never client_golang's global default registry, so several
// nodes live in one process, as the tests run them), its instruments, and
// the /metrics handler (docs/metrics.md lists every metric).
//
// It owns:
//   - the registry and its handler (Registry, Handler), with Go runtime and
//     process metrics and kvnode_build_info;
//   - the instruments the rest of the node reports to as things happen:
//     HTTP requests by route template (HTTP, the rest.Observer), change
//     streams (Watch, the rest/watch Observer), one Raft
//     group's timings and events (Group, the raftgroup.Observer), queries,
//     function executions, failed logins, the reloads of a member's files
//     and the peer certificates its internal port refuses (the
//     internal/reload Observer);
//   - what is read only when Prometheus scrapes (collect.go): every Raft
//     group's state, term and indexes, the entries and bytes of each
//     region, gossip members and health, the data dir's free space. These
//     come from Sources, functions package node builds over the store and
//     gossip, so a scrape costs a walk over the groups and regions this
//     member holds (counts the state machines keep as entries change),
//     never a scan of a region.
//
// Only this package imports github.com/prometheus/client_golang
// (imports_test.go checks it); the packages it observes declare the small
// interfaces they call (rest.Observer, raftgroup.Observer) in plain Go
// types, and node wires them. It imports no package of kvnode, nor Raft,
// memberlist or Echo.
//
// The hot paths are kept cheap: an HTTP request costs one lookup in a map
// that is only read (copy-on-write; the series of a route, method and
// status are resolved once, when first seen) and two atomic updates; a
// Raft group's instruments are resolved once per group, when it opens.
// Neither allocates.
//
// hashicorp/raft (1.7.3) reports its own metrics through
// github.com/hashicorp/go-metrics's package-level functions (go-metrics'
// global sink): a raft.Config has no sink of its own, and the names carry
// no group, so the raft instances of one member (and of the several members
// a test runs in one process) would be mixed into one series. Bridging
// them would need that global. kvnode measures what it needs itself
// instead, around raft's interfaces (store/raftgroup's observe.go): the
// log store's StoreLogs (append and fsync), the state machine's
// ApplyBatch (apply time, and on the leader the time since each entry was
// appended: commit latency), the snapshot store's sinks (count, duration,
// size, failures) and raft's leader observations.
package metrics
