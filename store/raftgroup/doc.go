// Package raftgroup is one Raft group hosted on this member: a
// hashicorp/raft instance over a raft-boltdb/v2 log and stable store, file
// snapshots whose directories survive a power cut, a log cache, the
// group's state machine (package fsm), and what a leader does with them.
//
// It owns the group's invariants that do not depend on other groups or
// members:
//   - nothing enters the log that does not decode (Apply checks every
//     command, whatever brought it), so a committed entry never halts the
//     replicas that apply it; a state machine that halts anyway stops the
//     group's Raft on this member (the member serves its other groups);
//   - entry commands are group-committed (batch.go), commands over a few
//     MiB travel staged in chunks (stage.go), and an unknown outcome is
//     reported as region.ErrIndeterminate, never retried here;
//   - the leader's half of a linearizable read: a read index taken after
//     the read began, leadership confirmed by voters asked after it
//     (readindex.go; the asking is the store's, through ConfirmFunc);
//   - hashicorp/raft's errors translated into the region vocabulary
//     (FromRaft), and one bound for an internal step (InternalTimeout);
//   - what the member's metrics measure of the group, around the
//     interfaces raft calls (Observer, observe.go);
//   - a restarted member applies the committed tail of its log (what its
//     state machine had applied before, by the log's applied marks) while
//     raft elects, and raft starts from where that replay ends, so the
//     entries are read once and applied without waiting for a leader
//     (replay.go).
//
// The store (package store) opens and closes groups, forwards commands to
// the leader, routes keys to groups and runs membership changes through
// Raft; this package knows nothing of other groups, of gossip or of the
// internal RPCs.
//
// raftgroup must not import store, cluster, rest, memberlist or Echo.
package raftgroup
