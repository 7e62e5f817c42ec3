// Package k8stest checks the Kubernetes manifests of deploy/k8s against
// kvnode itself: every document decodes strictly into the Kubernetes API's
// own types (a misspelt field fails), and the StatefulSet's arguments,
// environment, ports, probes and mounted secrets are what the kvnode of
// this tree accepts and serves.
//
// It is its own Go module so that k8s.io stays out of kvnode's go.mod; it
// builds against the kvnode of this checkout through a replace directive.
// Run it with `make test-k8s` (or `cd deploy/k8stest && go test ./...`).
package k8stest
