// Command kvbench-etcd is kvbench with one more target: etcd's gRPC API
// (--target etcd-grpc, package etcdgrpc), beside kvnode's REST API and
// etcd's JSON gateway. It is built in bench/etcd36, a module of its own,
// so that etcd's client stays out of kvnode's go.mod; its flags, workloads
// and results are kvbench's (bench/kvbench/command).
package main

import (
	"github.com/kvnode/kvnode/bench/etcd36/etcdgrpc"
	"github.com/kvnode/kvnode/bench/kvbench/command"
)

func main() {
	command.Main(append(command.Targets(), command.Target{Name: etcdgrpc.Name, Dial: etcdgrpc.Dial}))
}
