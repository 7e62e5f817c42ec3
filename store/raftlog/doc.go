// Package raftlog is the Raft log of every group a member hosts, in one
// file: a raft.LogStore per group (GroupLog) over one bbolt database, with
// a bucket per group.
//
// It exists because each group keeping its own log file made every group
// pay for its own commits: with four partition groups on a member, a
// write load spread over them cost four times the bbolt commits (and
// fsyncs) per member of the same load on one group, and partitioned
// writes ran at half the speed of replicated ones (docs/performance.md
// has the measurements). Here the writes of all groups that arrive while a
// commit is under way go into the next one together (committer), so a
// member commits once per batch whatever the number of groups; a lone
// write is committed at once.
//
// It owns the log's invariants: an entry is durable (fsynced) when
// StoreLogs returns; FirstIndex and LastIndex always describe what is
// committed, in the order the writes were committed, whichever goroutine
// of raft made them; a group's log is deleted durably when the group
// leaves the member (Drop), so a group that comes back starts empty. Each
// group keeps its term and vote (raft's StableStore) apart, in its own dir.
//
// raftlog must not import store, fsm, cluster, rest, memberlist or Echo.
package raftlog
