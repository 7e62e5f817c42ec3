// Package kvbench is the engine of cmd/kvbench, kvnode's load tool for
// users (as etcd's benchmark is etcd's): it drives a running cluster over
// its REST API (/kv/v1, and /management/v1 to create a region or to find
// the leaders) and measures what the clients see.
//
// It owns the workloads and the exact requests each sends (put, get,
// put-if-absent, CAS, mixed, multi-key put, OQL query), the choice of keys
// (uniform or zipf) and values, the HTTP client (endpoints in turn or each
// key's group leader, HTTP Basic credentials, TLS, the loopback guard), the
// setup of a run (region creation, named query, preload), the load loops
// (closed loop with N clients, or fixed rate with latency measured from each
// operation's intended send time, so that a stalled server is not hidden by
// coordinated omission), warm-up and the concurrency sweep, the progress
// line, HDR-histogram latencies, and the results as text and as JSON.
// Sub-package svgplot draws a sweep's throughput and p99; sub-package
// watchbench runs the watch workload (SSE watchers while writes flow),
// which needs watchers, not a load loop, and so is not run by Run.
//
// It speaks REST only, as any client of the API does: it must not import
// any package of the server, not even region's vocabulary or partition's
// hash (it re-states fnv64a mod buckets from the API's contract), nor
// node, nor internal (imports_test.go checks this). What it relies on is
// shared/spec/rest-api.md, rest-details.md and the management API.
package kvbench
