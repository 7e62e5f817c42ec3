// Package chaos checks kvnode the way Jepsen and etcd's robustness tests
// do: concurrent clients record every operation (invocation and return
// times, and what came back) while faults are injected, and the history is
// checked for linearizability with porcupine against a sequential model of
// the REST API's semantics.
//
// This file set holds the model and the history format; it has no build
// tag, so its unit tests run with the rest. The fault scenarios, which
// start clusters and run for a long time, are behind the build tag chaos.
//
// The model (Model) is per key, and keys are checked independently
// (porcupine's partitioning). Every value written carries a number unique
// in the run, {"v":N}, so a read names exactly which write it saw. An
// operation whose outcome the client cannot know (a timeout, a 5xx, a cut
// connection) is recorded as indeterminate with a return time at infinity:
// the checker may then place it anywhere after its invocation, which covers
// both "it took effect" and "it never did" (placed after everything else).
package chaos
