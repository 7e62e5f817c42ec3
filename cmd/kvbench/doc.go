// Command kvbench is kvnode's load tool for users: it drives a running
// cluster over its REST API (or, with --target etcd, an etcd cluster
// through its JSON gateway) and reports throughput and latency
// percentiles, for one concurrency or a sweep, in text, JSON and an SVG
// plot. See "kvbench --help" and the README.
//
// This package is only main: the command line is package
// bench/kvbench/command, the engine bench/kvbench, the targets
// bench/kvbench/kvrest and bench/kvbench/etcdjson. bench/etcd36 builds the
// same command with etcd's gRPC target added (kvbench-etcd). Like them,
// the command must not import any package of the server (imports_test.go
// checks this).
package main
