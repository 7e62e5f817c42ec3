// Package kvbench is the engine of cmd/kvbench, kvnode's load tool for
// users (as etcd's benchmark is etcd's): it drives a running cluster and
// measures what the clients see.
//
// It owns what makes two systems' numbers comparable: the workloads (put,
// get, put-if-absent, CAS, mixed, multi-key put, load, OQL query), the
// choice of keys (uniform or zipf) and values, the preload, the load loops
// (closed loop with N clients, or fixed rate with latency measured from
// each operation's intended send time, so that a stalled server is not
// hidden by coordinated omission), warm-up and the concurrency sweep, the
// progress line, HDR-histogram latencies, and the results as text and as
// JSON. What a system does for one operation is a Target's (target.go):
// kvnode's REST API is package kvrest (over kvnode's Go client: endpoints
// in turn or each key's group leader, the region's setup), etcd's JSON gateway
// package etcdjson, etcd's gRPC API bench/etcd36/etcdgrpc, a module of its
// own; package command is the command line over any of them. What the
// HTTP targets share (TLS files, credentials, the loopback guard) is here.
// Sub-package svgplot draws a sweep's throughput and p99; sub-package
// watchbench runs the watch workload (SSE watchers while writes flow),
// which needs watchers, not a load loop, and so is not run by Run.
//
// It imports no target, and like them no package of the server, not even
// region's vocabulary, nor node, nor internal (imports_test.go checks
// this).
package kvbench
