// Package nodetest starts kvnode clusters inside a test process: complete
// nodes (REST, gossip, store) on loopback, wired exactly as the binary
// wires them, with Raft and gossip timings shortened so a cluster forms in
// well under a second. It is for tests only, of node and of programs built
// on it (cmd/kvnode); it must not be imported by non-test code.
package nodetest
