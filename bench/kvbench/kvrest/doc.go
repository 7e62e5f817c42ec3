// Package kvrest is kvnode's REST API as kvbench's target (--target
// kvnode, the default), through kvnode's Go client (package client, issue
// 31): each operation is one call of the client (Region.Put; Region.Get,
// with client.Stale() for --consistency stale; Region.Create for
// put-if-absent; Region.PutAll for a multi-key put; Region.Get then
// Region.CompareAndSet for a CAS; Client.QueryWith or Queries.RunWith for
// a query, with client.Stale() too), and the setup of a run is the
// client's too (the region created or looked up, the routing document, the
// named query stored), each step retried while the cluster elects a
// leader.
//
// Where a request goes is the client's business: with --route
// round-robin (the default) the members in turn (client.Config's
// DisableSingleHop), with --route leader its key's group leader as the
// routing document names it (single hop). Each operation is sent once
// (client.Config.RetryFor < 0): kvbench counts a 503 or a broken answer
// rather than hide it in a retry's latency, and a write whose outcome the
// client could not tell is counted as such (OutcomeUnknown). The routed
// requests of a point are the client's Stats.
//
// It speaks REST only, as any client of the API does: it must not import
// any package of the server, not even region's vocabulary, nor node, nor
// internal (imports_test.go checks this).
package kvrest
