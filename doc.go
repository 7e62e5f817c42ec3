// Package kvnode is a clustered, Raft-replicated key-value data node that
// serves Apache Geode's developer REST API under /kv/v1.
//
// The code is organised as design.md describes:
//
//	cmd/kvnode  the binary: serve (flags, environment and config file into a node.Config, signals) and the client commands
//	cli         the client commands (status, region, get, put, query, ...): REST only
//	node        one running member (Config, Start, Shutdown): the wiring
//	region      shared vocabulary: region kinds, entries, sentinel errors
//	fsm         the state machine of one Raft group, its command codec and snapshots
//	store       every Raft group of a node: transport, forwarding, read barriers, membership
//	cluster     gossip (memberlist): who is alive, where, in which member groups
//	rest        the HTTP API (Echo): routes, handlers, the error → status table
//
// This package holds no code; its test enforces the import rules between
// those packages.
package kvnode
