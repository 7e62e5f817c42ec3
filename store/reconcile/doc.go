// Package reconcile runs the loops that converge this member's Raft groups
// to what the cluster wants; package placement decides each step, this
// package carries it out. Gossip observes, Raft decides: only two actors
// ever change the control group's membership, the one member that
// bootstraps a new cluster and the control group's leader reconciling it
// with gossip (RunControl). Who hosts which partition group is the
// partition table in the control group, and three actors converge the
// cluster to it, each changing only what it owns (RunPartitions):
//
//   - the control group's leader plans: it edits the table (partition.Plan
//     over the control group's members), never a Raft configuration;
//   - every member opens the groups the table gives it, bootstraps a group
//     it is the named bootstrapper of, and closes and deletes a group it no
//     longer hosts once that group's committed configuration no longer has
//     it;
//   - every partition group's leader converges its own Raft configuration
//     to the table: it adds new members as non-voters, promotes them once
//     they have caught up (by snapshot), then removes members the table
//     dropped, and hands leadership to the table's preferred leader.
//
// A replica thus moves as "add, catch up, promote, remove", one Raft
// membership change at a time, and never leaves a group without a quorum
// of caught-up voters. A member that leaves waits until its partition
// replicas have moved away (Drain); one that stops first hands the
// leadership of every group it leads to the most up-to-date live voter
// (HandOver).
//
// The store (package store) owns the groups, the partition table's storage
// and the internal RPCs; it starts the loops and reaches them through
// Host. reconcile must not import store, rest, oql or Echo.
package reconcile
