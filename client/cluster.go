package client

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"time"
)

// Ping asks a member whether its REST service is up (GET /kv/v1/ping,
// no credentials needed). It says nothing of the cluster's state: a member
// without a leader answers too.
func (c *Client) Ping(ctx context.Context) error {
	_, err := c.do(ctx, &request{method: http.MethodGet, path: "/kv/v1/ping", idempotent: true})
	return err
}

// Servers is the REST base URLs of the live members, sorted, as gossip
// knows them (GET /kv/v1/servers: CLUSTER:READ).
func (c *Client) Servers(ctx context.Context) ([]string, error) {
	var urls []string
	if err := c.getJSON(ctx, "/kv/v1/servers", nil, "servers", &urls); err != nil {
		return nil, err
	}
	return urls, nil
}

// Cluster is the handle on the cluster's operations: its status, the
// partition table, members, rebalancing and backups (the management API:
// CLUSTER:MANAGE).
type Cluster struct{ c *Client }

// Cluster returns the handle on the cluster's operations.
func (c *Client) Cluster() *Cluster { return &Cluster{c: c} }

// ClusterStatus is who leads the control group and every member known to
// gossip or to Raft (GET /management/v1/cluster).
type ClusterStatus struct {
	// Leader is the control group's leader's name; Term its Raft term as
	// the answering member knows it.
	Leader  string   `json:"leader"`
	Term    uint64   `json:"term"`
	Members []Member `json:"members"`
}

// Member is one member as gossip and the control group see it.
type Member struct {
	Name         string   `json:"name"`
	RESTURL      string   `json:"restUrl,omitempty"`
	InternalAddr string   `json:"internalAddr,omitempty"`
	GossipAddr   string   `json:"gossipAddr,omitempty"`
	Groups       []string `json:"groups"` // its member groups (Target.Groups)
	Version      string   `json:"version,omitempty"`
	// Status is the gossip status: alive, failed, left, or unknown for a
	// Raft member gossip has not heard of.
	Status string `json:"status"`
	// Suffrage is voter or nonvoter in the control group, empty when the
	// member is not part of it.
	Suffrage string `json:"suffrage"`
	// Identity is verified, unverified or refused by the answering
	// member's identity checks, Reason why it is not verified,
	// IdentitySince since when (RFC 3339); empty when unchecked.
	Identity      string `json:"identity,omitempty"`
	Reason        string `json:"reason,omitempty"`
	IdentitySince string `json:"identitySince,omitempty"`
}

// Status reads the cluster's status.
func (cl *Cluster) Status(ctx context.Context) (*ClusterStatus, error) {
	var s ClusterStatus
	if err := cl.c.getJSON(ctx, "/management/v1/cluster", nil, "cluster status", &s); err != nil {
		return nil, err
	}
	return &s, nil
}

// Partitions is the partition table and each partition group's state
// (GET /management/v1/partitions).
type Partitions struct {
	PartitionGroups   int              `json:"partitionGroups"`
	ReplicationFactor int              `json:"replicationFactor"`
	Buckets           int              `json:"buckets"`
	Groups            []PartitionGroup `json:"groups"`
}

// PartitionGroup is one partition group: its buckets and replicas.
type PartitionGroup struct {
	Group   uint64 `json:"group"`
	Buckets []int  `json:"buckets"`
	// Members host the group according to the table; the first is the
	// preferred leader.
	Members []string `json:"members"`
	// Leader, Term, AppliedIndex, Voters and NonVoters are the leader's
	// report, empty when no member answered. Term grows with every
	// election: watching it shows elections nobody asked for.
	Leader       string   `json:"leader"`
	Term         uint64   `json:"term"`
	AppliedIndex uint64   `json:"appliedIndex"`
	Voters       []string `json:"voters"`
	NonVoters    []string `json:"nonVoters"`
}

// Partitions reads the partition table.
func (cl *Cluster) Partitions(ctx context.Context) (*Partitions, error) {
	var p Partitions
	if err := cl.c.getJSON(ctx, "/management/v1/partitions", nil, "partitions", &p); err != nil {
		return nil, err
	}
	return &p, nil
}

// RemoveMember removes a member that is gone for good (DELETE
// /management/v1/members/{name}) now rather than after the dead-member
// timeout; its partition replicas move to the others. ErrNotFound when the
// cluster has no such member; ErrConflict while the member still answers
// gossip (stop it first: it would join again). It is not sent again when
// its outcome is unknown, since a second removal answers ErrNotFound.
func (cl *Cluster) RemoveMember(ctx context.Context, name string) error {
	if name == "" {
		return fmt.Errorf("%w: no member name", ErrInvalidArgument)
	}
	_, err := cl.c.do(ctx, &request{method: http.MethodDelete, path: "/management/v1/members/" + url.PathEscape(name)})
	return err
}

// Operation is a rebalance operation's record, in Geode's shape.
type Operation struct {
	ID string `json:"operationId"`
	// Status is OperationInProgress, OperationSucceeded or
	// OperationFailed.
	Status string    `json:"operationStatus"`
	Start  time.Time `json:"operationStart"`
	// End is zero while the operation runs.
	End    time.Time       `json:"operationEnd"`
	Result RebalanceResult `json:"result"`
}

// Statuses of an Operation.
const (
	OperationInProgress = "IN_PROGRESS"
	OperationSucceeded  = "SUCCESS"
	OperationFailed     = "ERROR"
)

// RebalanceResult is what a rebalance did, in total and per region.
type RebalanceResult struct {
	// StatusMessage says how it ended, or why it failed.
	StatusMessage string `json:"statusMessage"`
	// PartitionGroups is the count it grew the partition groups to first
	// (0: none).
	PartitionGroups  int               `json:"partitionGroups,omitempty"`
	Regions          []RegionRebalance `json:"rebalanceRegionResults"`
	BucketsMoved     int               `json:"bucketTransfersCompleted"`
	BytesMoved       int64             `json:"bucketTransferBytes"`
	LeadershipsMoved int               `json:"primaryTransfersCompleted"`
	Millis           int64             `json:"timeInMilliseconds"`
}

// RegionRebalance is what a rebalance moved of one region.
type RegionRebalance struct {
	Region       string `json:"regionName"`
	BucketsMoved int    `json:"bucketTransfersCompleted"`
	EntriesMoved int    `json:"entriesMoved"`
	BytesMoved   int64  `json:"bucketTransferBytes"`
	Millis       int64  `json:"bucketTransferTimeInMilliseconds"`
}

// ErrRebalanceFailed: a rebalance ended in OperationFailed (Wait); the
// Operation's Result.StatusMessage says why.
var ErrRebalanceFailed = errors.New("rebalance failed")

const rebalancesPath = "/management/v1/operations/rebalances"

// Rebalance starts a rebalance, which moves buckets and leaderships so
// that every member carries its share, and returns its id; it runs in the
// background (Wait follows it). It is not sent again when its outcome is
// unknown: that could start a second one.
func (cl *Cluster) Rebalance(ctx context.Context) (string, error) {
	return cl.start(ctx, &request{method: http.MethodPost, path: rebalancesPath})
}

// GrowPartitions starts a rebalance that first grows the partition groups
// to groups (PATCH /management/v1/partitions), and returns its id. Fewer
// groups than the cluster has are refused with ErrInvalid: partition
// groups are not removed.
func (cl *Cluster) GrowPartitions(ctx context.Context, groups int) (string, error) {
	body, err := json.Marshal(map[string]int{"groups": groups})
	if err != nil {
		return "", fmt.Errorf("%w: %w", ErrInvalidArgument, err)
	}
	return cl.start(ctx, &request{method: http.MethodPatch, path: "/management/v1/partitions", body: body})
}

// start sends a request that starts an operation and reads its id.
func (cl *Cluster) start(ctx context.Context, r *request) (string, error) {
	resp, err := cl.c.do(ctx, r)
	if err != nil {
		return "", err
	}
	var doc struct {
		ID string `json:"operationId"`
	}
	if err := json.Unmarshal(resp.body, &doc); err != nil || doc.ID == "" {
		return "", &decodeError{what: "started operation", err: fmt.Errorf("no operationId in %.200s (%v)", resp.body, err)}
	}
	return doc.ID, nil
}

// Operation reads the rebalance operation id; ErrNotFound when unknown.
func (cl *Cluster) Operation(ctx context.Context, id string) (*Operation, error) {
	if id == "" {
		return nil, fmt.Errorf("%w: no operation id", ErrInvalidArgument)
	}
	var op Operation
	if err := cl.c.getJSON(ctx, rebalancesPath+"/"+url.PathEscape(id), nil, "operation", &op); err != nil {
		return nil, err
	}
	return &op, nil
}

// Operations is every rebalance operation the cluster remembers, oldest
// first.
func (cl *Cluster) Operations(ctx context.Context) ([]Operation, error) {
	var doc struct {
		Result []Operation `json:"result"`
	}
	if err := cl.c.getJSON(ctx, rebalancesPath, nil, "operations", &doc); err != nil {
		return nil, err
	}
	return doc.Result, nil
}

// Wait follows the rebalance operation id until it ends or ctx does, and
// returns its record: an error wrapping ErrRebalanceFailed when it
// failed, ctx's error when ctx ended first. It polls, every 100 ms at
// first and every 2 s at most, since a rebalance takes seconds to hours.
func (cl *Cluster) Wait(ctx context.Context, id string) (*Operation, error) {
	wait := 100 * time.Millisecond
	for {
		op, err := cl.Operation(ctx, id)
		if err != nil {
			return nil, err
		}
		switch op.Status {
		case OperationSucceeded:
			return op, nil
		case OperationFailed:
			return op, fmt.Errorf("rebalance %s: %w: %s", id, ErrRebalanceFailed, op.Result.StatusMessage)
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return op, fmt.Errorf("waiting for rebalance %s: %w", id, ctx.Err())
		case <-t.C:
		}
		wait = min(2*wait, 2*time.Second)
	}
}
