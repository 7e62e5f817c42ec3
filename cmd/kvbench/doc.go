// Command kvbench is kvnode's load tool for users: it drives a running
// cluster over its REST API and reports throughput and latency
// percentiles, for one concurrency or a sweep, in text, JSON and an SVG
// plot. See "kvbench --help" and the README.
//
// This package is only the wiring: the command line (flags and the
// KVNODE_USER/KVNODE_PASSWORD variables) into a kvbench.Config, the run,
// the plot file, the exit code. The engine is package bench/kvbench. Like
// it, the command speaks REST only and must not import any package of the
// server (imports_test.go checks this).
package main
