// Package etcdjson is etcd as kvbench's target through its v3 JSON
// gateway (POST /v3/kv/put, /v3/kv/range and /v3/kv/txn, keys and values
// in base64), the way a client without gRPC reaches etcd, and the rules
// that every etcd target follows (Check, Key): bench/etcd36's gRPC target
// shares them, so that both carry out the same operations on the same
// keys.
//
// The operations, for a kvbench key k in region r (etcd has no regions:
// the key is "r/k", as the watch workload writes it):
//
//	put            Put r/k
//	get            Range r/k (linearizable; serializable with --consistency stale)
//	put-if-absent  Txn If(CreateRevision(r/k) == 0) Then(Put r/k)
//	multi-put/load Txn Then(Put, Put, ...), at most MaxTxnOps puts
//
// Like kvbench it speaks to a server over the network only, and imports no
// package of kvnode's server (imports_test.go checks this) and no etcd
// package (the gateway is JSON; etcd's client stays out of kvnode's
// go.mod).
package etcdjson
