// Package raftlog is the Raft log of every group a member hosts: one
// write-ahead log (a directory of segment files, wal.go) whose records
// name their group, and a raft.LogStore per group (GroupLog) that knows
// where each of its entries lies.
//
// It replaced a raft-boltdb file per group, for two measured reasons
// (docs/performance.md). Each group paid for its own commits: with four
// partition groups on a member, a write load spread over them cost four
// times the commits of the same load on one group. And a bbolt commit is
// expensive for an append: it writes the changed pages and a meta page
// and fsyncs twice, where a log needs one write and one fdatasync; on this
// project's VMs every disk I/O is a VM exit, and two fsyncs sit on the
// path of every write on the leader and again on each follower. Here the
// writes of all groups that arrive while a commit is under way go into the
// next one together (committer): one write and one fdatasync per batch,
// whatever the number of groups; a lone write is committed at once.
//
// It owns the log's invariants:
//   - an entry is durable (fdatasynced) when StoreLogs returns; a record
//     is whole or absent after a crash (a checksum over each record; a
//     torn write at the end of the last segment is cut off at the next
//     open, damage anywhere else refuses to open: ErrDamaged);
//   - FirstIndex and LastIndex describe what is committed, in commit
//     order, whichever goroutine of raft wrote;
//   - a segment file is deleted only when it and every older one hold no
//     entry a group still has, oldest first and each durably, so a
//     deletion record never outlives the older records it undoes; the few
//     live entries of a group that writes little are moved to the head
//     rather than keep every later segment on disk;
//   - a group's log is deleted durably when the group leaves the member
//     (Drop), so a group that comes back starts empty;
//   - an applied mark (applied.go) never covers an entry written after it:
//     marks go with the next commit, after the entries they cover, and a
//     deletion of a suffix below a mark lowers it.
//
// Open reads each segment through one reused window and keeps, per entry,
// only where it lies and its type (Holds); GetLog reads an entry into a
// buffer of its own, which the entry's Data then aliases.
//
// Each group keeps its term and vote (raft's StableStore) apart, in its
// own dir (raft-boltdb).
//
// raftlog must not import store, fsm, cluster, rest, memberlist or Echo.
package raftlog
