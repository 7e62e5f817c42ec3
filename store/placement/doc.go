// Package placement decides, as pure functions of what a member knows,
// the next membership step of a Raft group: for a partition group, the
// step that brings its configuration closer to the partition table (add a
// replica as a non-voter, promote a caught-up one, remove one the table
// moved away, hand leadership over: NextGroupStep); for the control group,
// the step that brings it in line with gossip (add joining members, remove
// ones that left or stayed dead, promote and demote toward the voter
// target: NextControlStep); and, before either, the next recorded address
// to mend when members came back at other addresses (NextAddressFix). The
// store runs the step and asks again; one Raft membership change at a
// time, so a replica moves as "add, catch up, promote, remove" and a group
// never loses a quorum of caught-up voters.
//
// Everything a decision needs comes in a view (the table's members, the
// configuration, what gossip says, which members have caught up, the time)
// and everything it remembers between calls lives in a memory the caller
// keeps, so every case is a table test (group_test.go, control_test.go,
// address_test.go).
//
// placement imports hashicorp/raft for its configuration types only; it
// must not import store, fsm, cluster or rest, and does no I/O.
package placement
