// Package regions is a member's data API, what package rest calls: region
// definitions (create, destroy, list), entries (get, put, put-if-absent,
// REPLACE, CAS, delete, clear, remove), streamed listings, secondary index
// definitions, and the data-aware access server-side functions use on the
// parts a member hosts.
//
// It owns the rules of a region's data that do not depend on Raft:
//   - routing: a REPLICATE region lives in the control group; a PARTITION
//     region's entries live in partition groups 1..P, a key in group
//     partition.GroupForKey(key, P); single-key operations go to the key's
//     group, region-wide reads fan out and merge, multi-key writes split
//     by group (Parts, route.go);
//   - what is atomic: a multi-key write is one command per group, each all
//     or nothing; a multi-group REPLACE, CAS or DELETE is prechecked by a
//     linearizable read so that a request that would be refused changes
//     nothing; its answer is a refusal only when every part was applied,
//     refused or never sent, and 503 while any part's outcome is unknown
//     (splitwrite.go);
//   - a destroyed region's ID: partition commands carry the region's ID, and
//     a refusal for an ID the control group no longer has is looked up
//     again and retried once with the fresh one (withRegion);
//   - index definitions: created only on an existing region whose FROM
//     clause they name, and waited for until built here.
//
// It reaches the store only through Groups (store.Router implements it):
// apply a command through a group, read the control group's copy or a
// group's replica here or on a member, and the read RPC it serves. So it
// must not import store (its tests run it over a real one), raftgroup,
// transport, reconcile, cluster, rest, memberlist or Echo.
package regions
