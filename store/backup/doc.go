// Package backup takes a running cluster's backup and turns an archive,
// or a survivor's data dir, into a member that starts alone.
//
//   - Take (online): every group's state-machine snapshot, each at a
//     linearizable point after the call began (the read barrier of a
//     linearizable read, on this member's replica or on a member that
//     hosts the group: Snapshots, which *store.Router implements). The
//     FSM's snapshot is a copy-on-write clone, so writes are never
//     paused. The archive is consistent per group: there is no global
//     point across Raft groups (a write to two groups may be in one
//     group's snapshot and not the other's). The format is package
//     backup/archive's.
//   - Restore (offline, like `etcdctl snapshot restore`): verifies the
//     whole archive first, refuses a data dir that is not empty, then
//     seeds it so that the named member is the only voter of every group
//     of the archive, at each group's archived index and term.
//   - Recover (offline, on a stopped survivor when a majority is lost for
//     good): rebuilds each group it holds from its snapshot and log (as
//     hashicorp/raft's RecoverCluster, over the member-wide log of
//     store/raftlog) and makes the member its only voter; refuses a data
//     dir a running member holds (its stable store's file lock).
//
// Both end the same way (seed.go): one member holding every group it can,
// the partition table rewritten so that it alone hosts them (the groups
// it cannot hold start over empty: no member, not bootstrapped, so the
// planner places them like new groups), and the cluster re-grows as
// fresh members join: the control group's reconciliation adds them, the
// planner gives them replicas, and partition groups' leaders add them,
// which catch up by Raft snapshot. docs/operations.md ("Backup, restore
// and disaster recovery") is the operator's side.
//
// backup must not import store (it is reached through Snapshots), rest,
// cluster, memberlist or Echo.
package backup
