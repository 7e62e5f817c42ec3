// Package cli is the client half of the kvnode command: the subcommands
// that talk to a running cluster (status, region, get, put, delete, keys,
// query, function, index, backup) over its REST API, and nothing else. It
// owns the HTTP client those commands share (member URLs tried in turn,
// HTTP Basic credentials, TLS), the mapping of the API's answers to
// messages and exit codes, and the table and JSON renderings of what the
// API returned.
//
// It speaks REST only: it must not import any package of the server, not
// even region's vocabulary (imports_test.go checks this), so that what it
// relies on is the API's contract (shared/spec, rest-details.md), the same
// contract every other client has. backup checks the file it saved with
// package backup/archive, the backup format's reader, which is a file
// format and nothing of the server. The server's own command line (serve,
// its flags and config file) is node/nodeflags'; cmd/kvnode wires both
// into one cobra tree.
package cli
