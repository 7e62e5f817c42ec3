package node

import (
	"context"
	"time"

	"github.com/kvnode/kvnode/rest/operations"
	"github.com/kvnode/kvnode/store/rebalance"
)

// rebalances is rest's operations.Rebalances over package
// store/rebalance's records (the control leader's Runner carries them
// out).
type rebalances struct{ ops *rebalance.Operations }

func (r rebalances) Start(ctx context.Context, groups int) (operations.Operation, error) {
	op, err := r.ops.Start(ctx, groups)
	return operationView(op), err
}

func (r rebalances) Get(ctx context.Context, id string) (operations.Operation, error) {
	op, _, err := r.ops.Get(ctx, id)
	return operationView(op), err
}

func (r rebalances) List(ctx context.Context) ([]operations.Operation, error) {
	ops, err := r.ops.List(ctx)
	out := make([]operations.Operation, len(ops))
	for i, op := range ops {
		out[i] = operationView(op)
	}
	return out, err
}

// operationView is a record as the REST API tells it.
func operationView(op rebalance.Operation) operations.Operation {
	out := operations.Operation{ID: op.ID, Status: op.Status, Start: op.Start, End: op.End, Message: op.Message, Groups: op.Groups,
		BucketsMoved: op.BucketsMoved, LeadershipsMoved: op.LeadershipsMoved, BytesMoved: op.BytesMoved, Took: millis(op.Millis)}
	for _, m := range op.Regions {
		out.Regions = append(out.Regions, operations.Region{Name: m.Region, BucketsMoved: m.BucketsMoved, EntriesMoved: m.EntriesMoved, BytesMoved: m.BytesMoved, Took: millis(m.Millis)})
	}
	return out
}

func millis(ms int64) time.Duration { return time.Duration(ms) * time.Millisecond }

// initialGroups is the partition groups a new cluster starts with: the
// flag's count, or with --partition-groups auto one per member it is
// bootstrapped with (more are added as members join).
func initialGroups(cfg Config) int {
	if cfg.PartitionGroupsAuto {
		return min(max(cfg.BootstrapExpect, 1), 113)
	}
	return cfg.PartitionGroups
}

// controlMembers counts the members in the control group's configuration.
func (n *Node) controlMembers() int {
	_, servers, err := n.store.Configuration()
	if err != nil {
		return 0
	}
	return len(servers)
}
