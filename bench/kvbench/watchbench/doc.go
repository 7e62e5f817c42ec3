// Package watchbench is kvbench's watch workload (issue 21): many
// Server-Sent-Events watchers of one member while writes flow at a fixed
// rate, measuring how long each change takes to reach every watcher, that
// every watcher gets every write, and what the watched member's memory
// does meanwhile.
//
// It owns the SSE reading of GET /kv/v1/watch (events, ids, comments, the
// `ready` that says a watcher is live), the watchers' delivery-latency
// accounting (receive time minus the send time the written value carries,
// into merged HDR histograms) and their per-write bookkeeping (missing,
// duplicate, unacknowledged), the fixed-rate writer, the sampling of the
// member's /metrics, and the result as text and JSON. The connection,
// credentials, region, keys and rate come from kvbench.Config, whose
// transport it reuses; kvbench does not import it (cmd/kvbench chooses).
//
// What differs between the systems measured is a target: kvnode's SSE
// watch and PUT, or etcd's v3 JSON gateway (POST /v3/watch on a key
// prefix, POST /v3/kv/put), so that the project's rule, every
// performance claim beside etcd on the same machine in the same run, holds
// for watchers too, without a gRPC dependency. Everything else (the rate,
// the stamps, the accounting, /metrics, which etcd exposes under the same
// names) is shared, which is what makes the two numbers comparable.
//
// Its kvnode watchers and writers are package client's (Watch, Put), as
// every other client of the API in the repository (issue 31), with one
// client.Client per member and connection pool; a watch stream that ends
// ends its watcher (client.Watch would resume it: a benchmark reports
// it). The watches are Undecoded: the stamp is found in an event's data
// by a byte search, and decoding a million events a second would take
// the member's CPU on a machine they share. BenchmarkReadEvent is what a
// watcher costs per event.
//
// Like kvbench it is a client of the REST API only: it must not import
// any package of the server, not even region's vocabulary, nor node, nor
// internal (imports_test.go checks this).
package watchbench
