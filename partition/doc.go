// Package partition is the placement math of partitioned regions, pure and
// deterministic: key → bucket → partition group, the partition table that
// says which members host each group, and the planner that decides how the
// table should change when members come and go.
//
// Keys hash into 113 buckets (fnv64a of the key bytes, modulo 113, as many
// buckets as Geode uses), and bucket b belongs to group 1 + b mod P. P, the
// number of partition groups, is fixed when the cluster is bootstrapped,
// since changing it would move most keys to other groups.
//
// Choosing P: every partition group is a Raft group with its own leader and
// log, so P bounds how many members can lead writes of partitioned regions
// at once and how finely data can be spread. Pick P at least as large as
// the largest cluster you plan (so that every member can lead a group), and
// not much larger: each group costs heartbeats, a log file and a snapshot
// store on each of its RF members. The default, 4, suits clusters of 3 to 5
// members; 8 to 16 suits a dozen.
//
// The planner (Plan) only edits the table. Other code (package store)
// carries it out with Raft membership changes.
package partition
