// Package command is kvbench's command line: its flags and the kvnode
// client's KVNODE_* variables into a kvbench.Config, the run (or the watch
// workload's), the plot file, the exit code. cmd/kvbench runs it with the
// targets of this module (kvnode's REST API, etcd's JSON gateway);
// bench/etcd36's kvbench-etcd adds etcd's gRPC API, whose client is kept
// out of kvnode's go.mod. So one tool, one load loop, measures all three.
//
// Like the engine and its targets it must not import any package of the
// server (imports_test.go checks this).
package command
