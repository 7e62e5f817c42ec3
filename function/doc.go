// Package function owns kvnode's server-side functions: the registry (Go
// functions, the built-ins among them, and JavaScript deployed at run
// time), argument decoding as the REST API defines it, target resolution
// (the whole cluster, a region's data holders, members, member groups,
// filter keys → partition groups → their leaders) and execution, here or
// on other members through a Transport, gathering the results in member
// order.
//
// It knows the cluster only through small interfaces (Cluster, Transport,
// Data) that package node wires to the store and to gossip, so it imports
// neither hashicorp/raft nor package fsm.
//
// Execution model. Without a target a function runs on every live member;
// onMembers and onGroups pick members by name or member group. With
// onRegion a replicated region runs on one member (the one that received
// the request: every member holds the region); a partitioned region runs
// on the leader of each partition group, narrowed by filter keys to the
// groups that own them, each member receiving the groups (and keys) it
// runs for. A member that fails makes the whole call fail with a
// MemberError naming it.
//
// Deployed functions are JavaScript run by goja (see js.go for why, and
// for the sandbox and the API a script sees).
package function
