// Package store owns every Raft group of a kvnode member and is the only
// way data reaches them.
//
// It owns:
//   - the groups' lifecycle: the data dir and who owns it (datadir.go), the
//     control group opened at start, the partition groups reopened from
//     their dirs, opened when the table places them here and closed and
//     deleted when they moved away (groups.go; package store/raftgroup is
//     one group, package store/reconcile decides when);
//   - the internal port's calls (rpc.go; package store/transport carries the
//     connections, frames and refusal codes): apply, read index, term,
//     leave, status, scan, and the group RPCs the packages above register
//     (Router.Serve);
//   - the apply path: a command goes to its group's leader from any member,
//     forwarded once by a member that hosts the group when this one does
//     not; failures that certainly appended nothing are retried until a
//     leader answers or LeaderWait passes, an unknown outcome never is
//     (Router.Apply);
//   - the read path: linearizable reads by read index with the leader's own
//     leadership confirmation (confirm.go), followers that catch up to the
//     leader's index or hand the read to another replica, stale reads
//     (Router.Visit, OpenPart, Control);
//   - the partition table's storage and cache, where a group is hosted,
//     and the operator's view of groups and leaders (table.go,
//     partstatus.go); readiness (Ready), HandOver before a stop, a graceful Leave.
//
// The data API (package store/regions), queries (store/query) and the
// catalog (store/catalog) reach the store only through Router, each over
// an interface of its own, and package node wires them; the store imports
// none of them but the catalog's key layout. See DESIGN.md for the subtle
// parts: the wire format of the internal port, forwarding and retry rules,
// the read barrier, bootstrap and reconciliation.
//
// store must not import rest, regions, query or Echo.
package store
