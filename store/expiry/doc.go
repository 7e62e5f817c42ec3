// Package expiry removes expired entries. Expiry is decided in the Raft
// log (fsm/expiry.go): an entry past its deadline is already absent to
// every write and hidden from every read, but it stays in memory, and
// watchers learn of it, only once an expire command is applied. Package
// expiry proposes those commands: on every group this member leads, it
// asks the local replica which keys are due (fsm.FSM.Due) and applies an
// OpExpire for them, which every replica then carries out at the same log
// position. Only the leader proposes, so a key is proposed once per
// leader; a duplicate (after a leader change) is harmless, since Apply
// removes only keys still due.
//
// It reaches the groups through Groups (store.Router implements it) and
// must not import store, raftgroup, transport, reconcile, cluster, rest,
// memberlist or Echo.
package expiry
