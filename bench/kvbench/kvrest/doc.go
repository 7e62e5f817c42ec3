// Package kvrest is kvnode's REST API as kvbench's target (--target
// kvnode, the default): what each operation sends (requests.go: PUT
// /kv/v1/{region}/{key} for a put, GET [?consistency=stale] for a get,
// POST ?key= for put-if-absent, PUT k1,k2,... with an array body for a
// multi-key put, GET then PUT ?op=CAS for a CAS, GET /queries/adhoc or POST
// /queries/{id} for a query), which member it goes to (the endpoints in
// turn, each client starting at its own, or with --route leader the member
// leading the key's group, from the management API), and the setup of a
// run (the region created or looked up, the named query stored), each step
// retried while the cluster elects a leader.
//
// It speaks REST only, as any client of the API does: it must not import
// any package of the server, not even region's vocabulary or partition's
// hash (route.go re-states fnv64a mod buckets from the API's contract), nor
// node, nor internal (imports_test.go checks this). What it relies on is
// shared/spec/rest-api.md, rest-details.md and the management API. Issue 31
// moves it onto kvnode's Go client package.
package kvrest
