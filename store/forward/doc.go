// Package forward carries the writes a member forwards to the leaders of
// Raft groups it does not lead, in batches.
//
// One RPC per forwarded write made the forwarding hop the largest cost of
// a write sent to a follower: an HTTP request and answer on both members
// for some 200 bytes of command (with 64 concurrent writers spread over
// three members, the leader spent a quarter of its CPU serving them). A
// Forwarder sends at most two RPCs at once to a group's leader; commands
// that arrive meanwhile wait and go together in the next one, and the
// leader applies them concurrently (ServeBatch), so its own batcher puts
// them into Raft together. An idle forwarder sends a command at once, by
// the store's single apply RPC: a lone writer pays nothing.
//
// It keeps each command's outcome its own: every command of a batch gets
// its result or its refusal (with the error's code), a failure of the
// whole RPC is every command's with what it says (refused or unreachable:
// not applied; an answer lost or cut short: unknown from that command on),
// and a command whose caller gave up while it waited is never sent.
//
// forward must not import store, cluster, rest, oql, memberlist or Echo.
package forward
