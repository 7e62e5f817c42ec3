// Package node runs one kvnode member inside a program: it is what
// cmd/kvnode starts, and what tests and other programs embed, in the
// spirit of etcd's embed package.
//
// A Config (Default, then fields set, checked by Validate) goes to Start,
// which opens the listeners, starts the store (Raft groups and the
// internal port), gossip and the REST server, and returns a *Node that
// serves until Shutdown (graceful, as SIGTERM) or Close (abrupt, as a
// crash).
//
// node owns the wiring and what only exists once the pieces are wired:
// TLS and the gossip key from files, the advertised addresses, the
// adapters that give package function the store and gossip (functions.go)
// and the cluster view that joins gossip with the control group's Raft
// configuration (clusterview.go).
//
// It may import every kvnode package; none may import it except programs
// under cmd/ and its test harness node/nodetest (imports_test.go checks
// this). node takes a Config, not a command line: the flags and KVNODE_*
// variables are node/nodeflags', which cmd/kvnode calls.
package node
