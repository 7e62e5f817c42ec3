package etcdjson

import (
	"errors"
	"fmt"

	"github.com/kvnode/kvnode/bench/kvbench"
)

// MaxTxnOps is etcd's default bound on the operations of one transaction
// (its --max-txn-ops): a multi-put or a load batch is one transaction, so
// at most this many keys. etcd's own benchmark tool has the same default.
const MaxTxnOps = 128

// Check refuses what no etcd target can do: kvnode's region management,
// leader routing and HTTP Basic credentials, and a transaction larger
// than MaxTxnOps.
func Check(cfg *kvbench.Config) error {
	switch {
	case cfg.CreateRegion != "":
		return errors.New("etcd has no regions to create: its keys are prefixed with the region's name")
	case cfg.Route == kvbench.Leader:
		return errors.New("--route leader is kvnode's: an etcd member forwards writes to its leader itself")
	case cfg.User != "":
		return errors.New("etcd takes no HTTP Basic credentials: run it without authentication")
	case (cfg.Workload == kvbench.MultiPut || cfg.Workload == kvbench.Load) && cfg.Batch > MaxTxnOps:
		return fmt.Errorf("batch %d: etcd allows at most %d operations in a transaction (--max-txn-ops)", cfg.Batch, MaxTxnOps)
	}
	return nil
}

// Key is the etcd key of kvbench's key in region: "region/key".
func Key(region, key string) string { return region + "/" + key }

// The kinds of the failures that are etcd's answers rather than errors: a
// get of a key that is not there, a put-if-absent of one that is.
const (
	KindNotFound = "not-found"
	KindExists   = "exists"
)
