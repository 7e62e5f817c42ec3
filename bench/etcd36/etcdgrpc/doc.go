// Package etcdgrpc is etcd as kvbench's target through its gRPC API, with
// etcd's own Go client (clientv3), the way etcd's users and its benchmark
// tool reach it: kvbench --target etcd-grpc, in kvbench-etcd. It carries
// out the same operations on the same keys as the JSON gateway's target
// (bench/kvbench/etcdjson, whose Check and Key it follows), so that the
// two differ only in the wire.
//
// It lives in bench/etcd36, a module of its own, so that etcd and gRPC
// stay out of kvnode's go.mod.
package etcdgrpc
