// Package e2e holds black-box tests: they build the kvnode binary, run real
// processes on 127.0.0.1, and talk to them only over HTTP and signals, as a
// user or an operator would.
package e2e
