// Package cluster is kvnode's gossip layer, built on hashicorp/memberlist and
// nothing else. It owns joining and leaving the gossip cluster, the metadata
// each node advertises (name, REST URL, internal Raft/RPC address, member
// groups, bootstrap-expect, version), the members view with each member's
// status and since-when, and the signals that the view changed.
//
// # Gossip observes, Raft decides
//
// Gossip is fast and eventually consistent; it can be wrong for a while and
// two nodes can disagree. So nothing here changes Raft: this package does not
// import Raft, the store or the state machine. It reports what it sees, and
// the store (group 0's leader) reads the view and decides what to do about
// it: add a joining member as a voter or non-voter, remove a member that has
// been failed longer than the dead-member timeout. A member that left
// gracefully can be removed at once; a failed one may come back with its
// data, which is why the two statuses differ.
//
// # The members view
//
// The view is fed by memberlist's events. A member is alive (memberlist's
// "suspect" counts as alive: suspicion settles within seconds and should not
// move data), failed (declared dead by failure detection) or left (announced
// its own departure). Since records when this node saw the member enter its
// status. memberlist forgets dead nodes after GossipToTheDeadTime, seconds
// after the fact, while the store's dead-member timeout is days, so the view
// never forgets: failed and left members stay until they come back, alive and
// with a fresh Since. A member whose metadata cannot be decoded (a foreign
// memberlist, an incompatible version) is logged and ignored; memberlist
// itself rejects a second node claiming a known name at another address,
// which is logged as a name conflict.
//
// # Joining
//
// New starts listening; Start runs the join loop. Every attempt resolves each
// seed afresh (DNS names re-resolved, every address used), skips the node's
// own addresses, since a StatefulSet hands every pod the same list, and
// joins the addresses that are not alive members. Until another member is
// alive it retries every RetryInterval; afterwards it keeps re-joining absent
// seeds every fifteen intervals (30s by default), which merges the sides of
// a partition even after memberlist has stopped gossiping to the nodes it
// declared dead.
//
// A crashed node that returns at a new address (a rescheduled pod) takes its
// name back once its old entry has been dead for DeadNodeReclaimTime (30s on
// the "lan" profile, as in Consul); one that left gracefully can return at
// once.
//
// # Leave or failure
//
// memberlist knows whether a node left or failed but does not say: the Node
// it hands to NotifyLeave carries no state (Node.State is never set in
// v0.5.4). So Leave first gossips its metadata again with a "leaving" flag,
// waits for that to spread, and only then announces the departure; whoever
// sees the departure reads the flag from the last metadata it has. A member
// that missed the flag (a relay dropped it when the departure overtook it)
// records a failure, and is corrected by its peers: every push/pull exchange
// carries the members each node saw leave, keyed by a boot id that is new on
// every run of a node, so old news never applies to a node's later run.
// Missing the flag is the safe mistake: a failed member is removed only
// after the dead-member timeout.
//
// # Metadata
//
// Meta rides in every alive message, within memberlist's 512-byte limit, so
// it is a compact versioned binary encoding (see meta.go) rather than JSON;
// New rejects metadata that does not fit.
package cluster
