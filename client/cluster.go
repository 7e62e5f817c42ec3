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

// Ping asks a member whether its REST service is up (no credentials
// needed); a member without a leader answers too.
func (c *Client) Ping(ctx context.Context) error {
	_, err := c.do(ctx, &request{method: http.MethodGet, path: "/kv/v1/ping", idempotent: true})
	return err
}

// Servers is the live members' REST base URLs, sorted (CLUSTER:READ).
func (c *Client) Servers(ctx context.Context) ([]string, error) {
	var urls []string
	err := c.getJSON(ctx, "/kv/v1/servers", nil, "servers", &urls)
	return urls, err
}

// Cluster is the handle on the cluster's operations (the management API:
// CLUSTER:MANAGE), a type of its own to keep Client a short list.
type Cluster struct{ c *Client }

// Cluster returns the handle on the cluster's operations.
func (c *Client) Cluster() *Cluster { return &Cluster{c: c} }

// ClusterStatus is the control group's leader and Raft term, as the
// answering member knows them, and every member known to gossip or Raft
// (GET /management/v1/cluster).
type ClusterStatus struct {
	Leader  string   `json:"leader"`
	Term    uint64   `json:"term"`
	Members []Member `json:"members"`
}

// Member is one member as gossip and the control group see it. Groups are
// its member groups (Target.Groups). Status is gossip's: alive, failed,
// left, or unknown for a Raft member gossip has not heard of. Suffrage is
// voter or nonvoter in the control group, "" outside it. Identity is
// verified, unverified or refused by the answering member's identity
// checks (Reason why not verified, IdentitySince since when, RFC 3339);
// "" when unchecked.
type Member struct {
	Name          string   `json:"name"`
	RESTURL       string   `json:"restUrl,omitempty"`
	InternalAddr  string   `json:"internalAddr,omitempty"`
	GossipAddr    string   `json:"gossipAddr,omitempty"`
	Groups        []string `json:"groups"`
	Version       string   `json:"version,omitempty"`
	Status        string   `json:"status"`
	Suffrage      string   `json:"suffrage"`
	Identity      string   `json:"identity,omitempty"`
	Reason        string   `json:"reason,omitempty"`
	IdentitySince string   `json:"identitySince,omitempty"`
}

// Status reads the cluster's status.
func (cl *Cluster) Status(ctx context.Context) (*ClusterStatus, error) {
	return getAs[ClusterStatus](ctx, cl.c, "/management/v1/cluster", "cluster status")
}

// getAs GETs path and decodes the answer into a new T; nil on error.
func getAs[T any](ctx context.Context, c *Client, path, what string) (*T, error) {
	v := new(T)
	if err := c.getJSON(ctx, path, nil, what, v); err != nil {
		return nil, err
	}
	return v, nil
}

// Partitions is the partition table and each partition group's state
// (GET /management/v1/partitions).
type Partitions struct {
	PartitionGroups   int              `json:"partitionGroups"`
	ReplicationFactor int              `json:"replicationFactor"`
	Buckets           int              `json:"buckets"`
	Groups            []PartitionGroup `json:"groups"`
}

// PartitionGroup is one partition group. Members host it according to
// the table, the first the preferred leader. Leader, Term, AppliedIndex,
// Voters and NonVoters are its leader's report, empty when no member
// answered; Term grows with every election, so watching it shows
// elections nobody asked for.
type PartitionGroup struct {
	Group        uint64   `json:"group"`
	Buckets      []int    `json:"buckets"`
	Members      []string `json:"members"`
	Leader       string   `json:"leader"`
	Term         uint64   `json:"term"`
	AppliedIndex uint64   `json:"appliedIndex"`
	Voters       []string `json:"voters"`
	NonVoters    []string `json:"nonVoters"`
}

// Partitions reads the partition table.
func (cl *Cluster) Partitions(ctx context.Context) (*Partitions, error) {
	return getAs[Partitions](ctx, cl.c, "/management/v1/partitions", "partitions")
}

// RemoveMember removes a member gone for good now rather than after the
// dead-member timeout; its partition replicas move to the others.
// ErrNotFound when the cluster has no such member; ErrConflict while it
// still answers gossip (stop it first: it would join again); ErrInvalid
// when the member asked is that member. A second removal answers
// ErrNotFound, so one whose outcome is unknown is not sent again.
func (cl *Cluster) RemoveMember(ctx context.Context, name string) error {
	_, err := call(ctx, cl.c, "member name", name, &request{method: http.MethodDelete, path: "/management/v1/members/" + url.PathEscape(name)})
	return err
}

// Operation is a rebalance's record, in Geode's shape. Status is
// OperationInProgress, OperationSucceeded or OperationFailed; End is zero
// while it runs.
type Operation struct {
	ID     string          `json:"operationId"`
	Status string          `json:"operationStatus"`
	Start  time.Time       `json:"operationStart"`
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
// StatusMessage says how it ended, or why it failed; PartitionGroups is
// the count it grew the partition groups to first (0: none).
type RebalanceResult struct {
	StatusMessage    string            `json:"statusMessage"`
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

// ErrRebalanceFailed: a rebalance Wait followed ended in OperationFailed.
var ErrRebalanceFailed = errors.New("rebalance failed")

const rebalancesPath = "/management/v1/operations/rebalances"

// Rebalance starts a rebalance (buckets and leaderships move so that every
// member carries its share) and returns its id for Wait. One whose outcome
// is unknown is not sent again: that could start a second.
func (cl *Cluster) Rebalance(ctx context.Context) (string, error) {
	return cl.start(ctx, &request{method: http.MethodPost, path: rebalancesPath})
}

// GrowPartitions starts a rebalance that first grows the partition groups
// to groups (PATCH /management/v1/partitions) and returns its id. Fewer
// than the cluster has is ErrInvalid: partition groups are not removed.
func (cl *Cluster) GrowPartitions(ctx context.Context, groups int) (string, error) {
	body := []byte(fmt.Sprintf(`{"groups":%d}`, groups))
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

// Operation reads the rebalance id; ErrNotFound when unknown.
func (cl *Cluster) Operation(ctx context.Context, id string) (*Operation, error) {
	if err := named("operation id", id); err != nil {
		return nil, err
	}
	return getAs[Operation](ctx, cl.c, rebalancesPath+"/"+url.PathEscape(id), "operation")
}

// Operations is every rebalance the cluster remembers, oldest first.
func (cl *Cluster) Operations(ctx context.Context) ([]Operation, error) {
	var doc struct {
		Result []Operation `json:"result"`
	}
	err := cl.c.getJSON(ctx, rebalancesPath, nil, "operations", &doc)
	return doc.Result, err
}

// Wait polls the rebalance id until it ends (every 100 ms at first, at
// most every 2 s: it takes seconds to hours) and returns its record, with
// an error wrapping ErrRebalanceFailed if it failed, or ctx's if ctx ends.
func (cl *Cluster) Wait(ctx context.Context, id string) (*Operation, error) {
	for wait := 100 * time.Millisecond; ; wait = min(2*wait, 2*time.Second) {
		op, err := cl.Operation(ctx, id)
		switch {
		case err != nil:
			return nil, err
		case op.Status == OperationSucceeded:
			return op, nil
		case op.Status == OperationFailed:
			return op, fmt.Errorf("rebalance %s: %w: %s", id, ErrRebalanceFailed, op.Result.StatusMessage)
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return op, fmt.Errorf("waiting for rebalance %s: %w", id, ctx.Err())
		case <-t.C:
		}
	}
}
