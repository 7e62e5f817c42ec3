// Package cli is the client half of the kvnode command, on top of package
// client: the subcommands that talk to a running cluster (status, region,
// get, put, delete, keys, query, function, index, backup, member, watch,
// rebalance, partitions) over its REST API, and nothing else. It has no
// HTTP client of its own: it turns the connection flags into a
// client.Config, each command into the client's calls, the client's
// errors into messages and exit codes, and what the API returned into
// tables, or with -o json into the answer as it came (client.WithAnswer).
//
// It speaks REST only, through package client: it must not import any
// package of the server, not even region's vocabulary (imports_test.go
// checks this), so that what it relies on is the API's contract
// (shared/spec, rest-details.md), the same contract every other client
// has. backup checks the file it saved with package backup/archive, the
// backup format's reader, which is a file format and nothing of the
// server. The server's own command line (serve,
// its flags and config file) is node/nodeflags'; cmd/kvnode wires both
// into one cobra tree.
package cli
