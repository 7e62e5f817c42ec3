// Package store owns every Raft group of a kvnode node and is the only way
// data reaches them.
//
// It opens the groups (hashicorp/raft with a raft-boltdb/v2 log and stable
// store and file snapshots under the data dir), serves all of them and the
// node-to-node RPC on the one internal port (package store/transport carries
// the connections, frames and refusal codes; the store defines the calls),
// routes each operation to
// its group, forwards writes to the group leader, and implements
// linearizable reads with the read-index protocol. It also turns the gossip
// view (package cluster) into Raft membership: the one node that bootstraps
// a new cluster (Consul's bootstrap-expect), and the control group leader's
// reconciler that adds joining members, promotes and demotes voters, and
// removes members that left or stayed dead past the dead-member timeout.
//
// Group 0, the control group, holds region definitions and, for now, the
// entries of every region. See DESIGN.md for the subtle parts: the wire
// format of the internal port, forwarding and retry rules, the read barrier,
// bootstrap and reconciliation.
package store
