// Package backend runs the clusters the chaos suite injects faults into,
// behind one interface (Cluster): what a nemesis may do to a member (kill,
// stop, start, pause, isolate, cut or slow one direction of a link, cut
// its power) whatever runs it.
//
// It owns two backends:
//   - processes (proc.go, ProcCluster): kvnode processes on 127.0.0.0/8,
//     each on its own IP, their member-to-member links through
//     chaos/netproxy's proxies and their data directories on chaos/powerfs
//     mounts, so that every fault of the interface works, power cuts
//     included; BuildKvnode builds the binary they run;
//   - docker-compose (compose.go, ComposeCluster): the cluster of the
//     repository's docker-compose.yml, with docker kill, pause and network
//     disconnect; it cannot cut one direction of a link nor the power
//     (ErrUnsupported, LinkFaults, PowerFaults).
//
// Why a package of its own: starting, faulting and tearing down a cluster
// is a concern apart from what a run does with it (the workload, the
// nemeses' choices, the checks), and the two backends share only the
// interface and the readiness wait. It reaches kvnode only as a program
// (a binary, an image) and through HTTP, and must not import kvnode's
// server packages (store, fsm, rest, cluster, node, ...) nor chaos/model:
// it knows nothing of histories (imports_test.go checks). No build tag:
// it builds and is unit-tested with the rest of the module; only the
// scenarios' test (chaos, build tag chaos) starts real clusters for
// minutes.
package backend
