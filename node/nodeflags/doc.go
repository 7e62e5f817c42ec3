// Package nodeflags is the command line of a kvnode member: every flag,
// its KVNODE_* environment variable, the YAML file --config names, and
// their parsing into a node.Config (defaults, then the file, then the
// environment, then flags; the last wins). cmd/kvnode parses with it, and
// the Kubernetes manifests' test (deploy/k8stest) checks the manifests'
// arguments and variables against it, so the command-line contract of
// design.md §4 is written down once.
//
// It imports node, region and a YAML decoder only; nothing but programs
// and their tests imports it.
package nodeflags
