// Command etcd is etcd 3.6 built from its Go module, the reference
// kvnode's performance is measured against (bench/compare.sh): the same
// binary as etcd's release, nothing added.
package main

import (
	"os"

	"go.etcd.io/etcd/server/v3/etcdmain"
)

func main() { etcdmain.Main(os.Args) }
