// Package operations is the answers of Geode's management operations
// that kvnode runs (rebalance: POST, GET /management/v1/operations/
// rebalances[/{id}]) and of PATCH /management/v1/partitions, which grows
// the partition groups through one. Geode's shapes: a started operation
// is a 202 with its id and links.self; an operation's record has
// operationStatus (IN_PROGRESS, SUCCESS, ERROR), operationStart and
// operationEnd, and a result with each region's bucket transfers.
//
// Package rest routes the requests here; node implements Rebalances over
// package store/rebalance. operations must not import Echo or any kvnode
// package but region.
package operations

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/kvnode/kvnode/region"
)

// Rebalances runs rebalance operations.
type Rebalances interface {
	// Start records a rebalance (groups > 0: grow the partition groups
	// to that many first) and returns it; it runs in the background.
	Start(ctx context.Context, groups int) (Operation, error)
	// Get is one operation; region.ErrKeyNotFound when unknown.
	Get(ctx context.Context, id string) (Operation, error)
	// List is every operation, oldest first.
	List(ctx context.Context) ([]Operation, error)
}

// Operation is a rebalance as its record has it.
type Operation struct {
	ID      string
	Status  string // IN_PROGRESS, SUCCESS or ERROR
	Start   time.Time
	End     time.Time // zero while in progress
	Message string
	Groups  int // the partition groups it grows to first (0: none)
	Regions []Region
	// Totals.
	BucketsMoved, LeadershipsMoved int
	BytesMoved                     int64
	Took                           time.Duration
}

// Region is what an operation moved of one region.
type Region struct {
	Name         string
	BucketsMoved int
	EntriesMoved int
	BytesMoved   int64
	Took         time.Duration
}

// Path is where the operations are, under the management API's prefix.
const Path = "/operations/rebalances"

// Started is the 202 answer to a start: the operation's id and where to
// follow it (base: the management API's prefix, as the client used it).
func Started(op Operation, base string) any {
	return struct {
		StatusCode    string `json:"statusCode"`
		StatusMessage string `json:"statusMessage"`
		OperationID   string `json:"operationId"`
		Links         links  `json:"links"`
	}{"ACCEPTED", "rebalance started", op.ID, links{Self: base + Path + "/" + op.ID, List: base + Path}}
}

type links struct {
	Self string `json:"self"`
	List string `json:"list,omitempty"`
}

type regionResult struct {
	Region       string `json:"regionName"`
	BucketsMoved int    `json:"bucketTransfersCompleted"`
	EntriesMoved int    `json:"entriesMoved"`
	BytesMoved   int64  `json:"bucketTransferBytes"`
	Millis       int64  `json:"bucketTransferTimeInMilliseconds"`
}

type result struct {
	StatusMessage    string         `json:"statusMessage"`
	PartitionGroups  int            `json:"partitionGroups,omitempty"`
	Regions          []regionResult `json:"rebalanceRegionResults"`
	BucketsMoved     int            `json:"bucketTransfersCompleted"`
	BytesMoved       int64          `json:"bucketTransferBytes"`
	LeadershipsMoved int            `json:"primaryTransfersCompleted"`
	Millis           int64          `json:"timeInMilliseconds"`
}

type record struct {
	StatusCode      string     `json:"statusCode"`
	OperationID     string     `json:"operationId"`
	OperationStatus string     `json:"operationStatus"`
	OperationStart  time.Time  `json:"operationStart"`
	OperationEnd    *time.Time `json:"operationEnd,omitempty"`
	Result          result     `json:"result"`
	Links           links      `json:"links"`
}

func view(op Operation, base string) record {
	r := record{StatusCode: "OK", OperationID: op.ID, OperationStatus: op.Status, OperationStart: op.Start,
		Result: result{StatusMessage: op.Message, PartitionGroups: op.Groups, Regions: []regionResult{},
			BucketsMoved: op.BucketsMoved, BytesMoved: op.BytesMoved, LeadershipsMoved: op.LeadershipsMoved, Millis: op.Took.Milliseconds()},
		Links: links{Self: base + Path + "/" + op.ID}}
	if !op.End.IsZero() {
		end := op.End
		r.OperationEnd = &end
	}
	for _, m := range op.Regions {
		r.Result.Regions = append(r.Result.Regions, regionResult{m.Name, m.BucketsMoved, m.EntriesMoved, m.BytesMoved, m.Took.Milliseconds()})
	}
	return r
}

// One is the answer to GET of one operation.
func One(op Operation, base string) any { return view(op, base) }

// All is the answer to GET of the list, oldest first.
func All(ops []Operation, base string) any {
	out := struct {
		StatusCode string   `json:"statusCode"`
		Result     []record `json:"result"`
	}{"OK", make([]record, 0, len(ops))}
	for _, op := range ops {
		out.Result = append(out.Result, view(op, base))
	}
	return out
}

// GroupsRequest reads the body of PATCH /management/v1/partitions:
// {"groups": N}, N from current (a smaller one is refused: partition
// groups are not removed, see the message) to region.Buckets.
func GroupsRequest(body []byte, current int) (int, error) {
	var req struct {
		Groups *int `json:"groups"`
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&req); err != nil || req.Groups == nil {
		return 0, fmt.Errorf("%w: the body must be {\"groups\": N}, the partition group count wanted (%v)", region.ErrInvalid, err)
	}
	n := *req.Groups
	switch {
	case n < current:
		return 0, fmt.Errorf("%w: %d partition groups: the cluster has %d, and partition groups are not removed (a group's buckets would have to move out and its Raft group be retired); add groups, or leave them", region.ErrInvalid, n, current)
	case n > region.Buckets:
		return 0, fmt.Errorf("%w: %d partition groups: at most %d, one bucket each", region.ErrInvalid, n, region.Buckets)
	}
	return n, nil
}
