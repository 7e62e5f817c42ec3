// Package e2e holds black-box tests: they build the kvnode binary, run real
// processes on 127.0.0.1, and talk to them only over HTTP and signals, as a
// user or an operator would: through package client (proc.client: one
// member, each request sent once, so that an assertion sees that member's
// answer), or raw HTTP where the test checks the HTTP contract itself
// (statuses, headers and bodies to the byte) or what is not the API's
// (/readyz, /metrics, curl with client certificates).
package e2e
