package rest

import (
	"context"
	"encoding/json"
	"time"

	"github.com/kvnode/kvnode/oql"
	"github.com/kvnode/kvnode/region"
)

// Store is the node's data layer as the handlers use it. Every method honours ctx's deadline.
//
// It is declared here, by its caller, so that the handlers can be tested over
// any implementation; package store provides the real one.
type Store interface {
	Regions(ctx context.Context, c region.Consistency) ([]region.Info, error) // sorted by name
	CreateRegion(ctx context.Context, info region.Info) error                 // region.ErrRegionExists
	DestroyRegion(ctx context.Context, name string) error                     // region.ErrRegionNotFound
	// AlterRegion changes a region's default entry time-to-live: ErrRegionNotFound.
	AlterRegion(ctx context.Context, name string, ttl time.Duration) error
	// Get returns values aligned with keys, nil for a missing key; ErrRegionNotFound if the region is unknown.
	Get(ctx context.Context, c region.Consistency, name string, keys []string) ([]json.RawMessage, error)
	// OpenList opens a streamed listing of a region in ascending key order
	// (region.Listing): errors that can still be answered with a status
	// come from it; the caller closes the listing.
	OpenList(ctx context.Context, c region.Consistency, name string, opt region.ListOptions) (region.Listing, error)
	Count(ctx context.Context, c region.Consistency, name string) (int, error)
	// The writes give each entry they write the time-to-live ttl (the
	// region's default when unset).
	Put(ctx context.Context, name string, entries []region.Entry, ttl region.TTL) error                   // upsert all
	PutIfAbsent(ctx context.Context, name string, e region.Entry, ttl region.TTL) (key string, err error) // e.Key=="" → generated; exists → *region.ConflictError{Err: ErrKeyExists}
	Replace(ctx context.Context, name string, entries []region.Entry, ttl region.TTL) error               // missing → ErrKeyAbsent, nothing changes
	CAS(ctx context.Context, name string, pairs []region.CASPair, ttl region.TTL) error                   // missing → ErrKeyAbsent; mismatch → *region.ConflictError{Err: ErrCASMismatch}
	Delete(ctx context.Context, name string, keys []string) error                                         // missing → ErrKeyNotFound, nothing deleted
	Clear(ctx context.Context, name string) error                                                         // PARTITION → ErrNotSupported

	// Ready is nil when the node can serve linearizable requests (GET /ready).
	Ready(ctx context.Context) error

	// Secondary indexes, defined in the control group.
	CreateIndex(ctx context.Context, regionName string, def region.IndexInfo) error // exists → *region.ConflictError
	Indexes(ctx context.Context, c region.Consistency, regionName string) ([]region.IndexInfo, error)
	DeleteIndex(ctx context.Context, regionName, name string) error // unknown → ErrKeyNotFound

	// Named queries (kept in the control group) and query execution.
	Queries(ctx context.Context, c region.Consistency) ([]region.NamedQuery, error)
	NamedQuery(ctx context.Context, c region.Consistency, id string) (region.NamedQuery, error) // unknown → ErrKeyNotFound
	CreateQuery(ctx context.Context, id, text string) error                                     // exists → *region.ConflictError{Current: {"id","oql"}}
	UpdateQuery(ctx context.Context, id, text string) error                                     // unknown → ErrKeyNotFound
	DeleteQuery(ctx context.Context, id string) error                                           // unknown → ErrKeyNotFound
	// CompileQuery parses text (cached per node): *oql.SyntaxError.
	CompileQuery(text string) (*oql.Query, error)
	Query(ctx context.Context, c region.Consistency, q *oql.Query, params []any, opt oql.Options) (*oql.Result, error)

	// Watch opens a stream of a region's changes (GET /kv/v1/watch, package watch).
	Watch(ctx context.Context, name string, opts region.WatchOptions) (region.Watch, error)
}

// Members lists the REST base URLs of live cluster members, for GET /servers.
type Members interface {
	RESTURLs() []string
}

// ClusterInfo describes the cluster for operators: GET
// /management/v1/cluster and GET /management/v1/partitions.
type ClusterInfo interface {
	ClusterView(ctx context.Context) (ClusterView, error)
	PartitionsView(ctx context.Context) (PartitionsView, error)
}

// PartitionsView is the answer of GET /management/v1/partitions: the
// partition table, and what each group's leader reports.
type PartitionsView struct {
	PartitionGroups   int             `json:"partitionGroups"`
	ReplicationFactor int             `json:"replicationFactor"`
	Buckets           int             `json:"buckets"`
	Groups            []PartitionView `json:"groups"`
}

// PartitionView is one partition group.
type PartitionView struct {
	Group   uint64 `json:"group"`
	Buckets []int  `json:"buckets"`
	// Members host the group according to the table; the first is the
	// preferred leader.
	Members []string `json:"members"`
	// Leader, Term, AppliedIndex, Voters and NonVoters are the leader's
	// report; empty when no member answered. Term grows with every
	// election: watching it shows elections nobody asked for.
	Leader       string   `json:"leader"`
	Term         uint64   `json:"term"`
	AppliedIndex uint64   `json:"appliedIndex"`
	Voters       []string `json:"voters"`
	NonVoters    []string `json:"nonVoters"`
}

// ClusterView is the answer of GET /management/v1/cluster: who leads the
// control group, and every member known to gossip or to Raft.
type ClusterView struct {
	Leader string `json:"leader"`
	// Term is the control group's Raft term as the answering node knows it.
	Term    uint64       `json:"term"`
	Members []MemberView `json:"members"`
}

// MemberView is one member as gossip and the control group see it.
type MemberView struct {
	Name         string   `json:"name"`
	RESTURL      string   `json:"restUrl,omitempty"`
	InternalAddr string   `json:"internalAddr,omitempty"`
	GossipAddr   string   `json:"gossipAddr,omitempty"`
	Groups       []string `json:"groups"`
	Version      string   `json:"version,omitempty"`
	// Status is the gossip status: alive, failed, left, or unknown for a
	// Raft member gossip has not heard of.
	Status string `json:"status"`
	// Suffrage is voter or nonvoter in the control group, empty when the
	// member is not part of it.
	Suffrage string `json:"suffrage"`
	// Identity is verified, unverified or refused by the answering
	// member's identity checks (store/admission), Reason why it is not
	// verified, IdentitySince since when (RFC 3339); empty when unchecked.
	Identity      string `json:"identity,omitempty"`
	Reason        string `json:"reason,omitempty"`
	IdentitySince string `json:"identitySince,omitempty"`
}
