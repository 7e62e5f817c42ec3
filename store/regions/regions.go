package regions

import (
	"context"
	"log/slog"
	"sync/atomic"

	"github.com/kvnode/kvnode/fsm"
	"github.com/kvnode/kvnode/fsm/codec"
	"github.com/kvnode/kvnode/partition"
	"github.com/kvnode/kvnode/region"
	"github.com/kvnode/kvnode/store/catalog"
	"github.com/kvnode/kvnode/store/listing"
)

// Groups is the store as the regions use it: the apply and read paths of
// the cluster's Raft groups (store.Router implements it). Group 0 is the
// control group; partition groups are 1..P.
type Groups interface {
	// Meta reads and writes the control group's metadata without a guard
	// (index definitions live there: catalog.IndexKey).
	catalog.Meta
	// Apply replicates cmd through group gid (forwarded to its leader
	// from any member) and returns the state machine's result; a refusal
	// the state machine decided comes back as the error, with the result.
	Apply(ctx context.Context, gid uint64, cmd *codec.Command) (*codec.Result, error)
	// Control is this member's copy of the control group's state machine,
	// once a read at consistency c may be served from it.
	Control(ctx context.Context, c region.Consistency) (*fsm.FSM, error)
	// ControlState is this member's copy of the control group's state
	// machine as it is, without a barrier: for lookups whose miss is
	// confirmed after ControlBarrier.
	ControlState() (*fsm.FSM, error)
	// ControlBarrier makes ControlState reflect every write acknowledged
	// before the call.
	ControlBarrier(ctx context.Context) error
	// Placement is the partition table (P groups, the owner of each
	// bucket), waiting (as for a leader) while the partition
	// table is not created yet.
	Placement(ctx context.Context) (partition.Table, error)
	// Leads reports whether this member leads group gid now.
	Leads(gid uint64) bool
	// Visit runs local on this member's replica of group gid once a read
	// at c may be served from it, or remote with the internal address of
	// a member that hosts the group; errors a read may retry are tried
	// again (against whichever replica then fits) until the store's
	// leader wait or ctx ends. what names the operation in the error.
	Visit(ctx context.Context, gid uint64, c region.Consistency, what string, local func(*fsm.FSM) error, remote func(addr string) error) error
	// LocalPart is this member's replica of partition group gid, once a
	// read at c may be served from it; an error when it does not host it
	// (any more) or is behind.
	LocalPart(ctx context.Context, gid uint64, c region.Consistency) (*fsm.FSM, error)
	// Call sends body to the group RPC name of group gid on the member at
	// addr (served there by Serve) and returns the answer.
	Call(ctx context.Context, addr string, gid uint64, name string, body []byte) ([]byte, error)
	// Serve answers the group RPC name on this member: h gets the
	// request's body and a way to this member's replica of the group at a
	// consistency; its answer (what names it in a refusal) is sent as
	// JSON, or refused whole when it exceeds the frame limit.
	Serve(name, what string, h func(ctx context.Context, replica func(region.Consistency) (*fsm.FSM, error), body []byte) ([]byte, error))
	// OpenPart opens group gid's part of region name (ID id) as a
	// listing source, from a local replica or a member's stream.
	OpenPart(ctx context.Context, gid uint64, c region.Consistency, name string, id uint64, opt region.ListOptions) (listing.Source, error)
	// AwaitIndexes waits, as long as ctx allows, until this member's
	// replicas have built the indexes defined as of the control group's
	// log index version.
	AwaitIndexes(ctx context.Context, version uint64)
}

// API is the data API of a member (what package rest calls): region
// definitions, entries, multi-key operations, streamed listings and
// indexes, routed to the groups that hold them.
type API struct {
	groups Groups
	parts  *Parts
	logger *slog.Logger
	// conflictHook, when set (tests only), runs in CreateIndex between a
	// name conflict and the read of the definition that caused it, so a
	// test can delete it or close the store in that window.
	conflictHook func()
}

// controlGroup is the group of region definitions and replicated regions.
const controlGroup = partition.ControlGroup

// New returns the regions over groups and serves their read RPC there.
func New(groups Groups, logger *slog.Logger) *API {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	r := &API{groups: groups, parts: &Parts{groups: groups}, logger: logger}
	groups.Serve(readRPC, "the read's answer", r.parts.serveRead)
	groups.Serve(watchRPC, "the watch's answer", r.parts.serveWatch)
	groups.Serve(bucketRPC, "the bucket's page", r.parts.serveBucket)
	return r
}

// Parts routes region operations to the groups that hold a region's
// entries: it resolves a region's name to its Ref (kind and ID), reads a
// partitioned region's parts from their groups (here or on members) and
// merges them, and splits multi-key writes by group (route.go, read.go).
// Package store/query reads regions through it.
type Parts struct {
	groups Groups
	// rr spreads generated keys of partitioned regions over groups.
	rr atomic.Uint64
}

// Parts is the routing under the API, for package store/query.
func (r *API) Parts() *Parts { return r.parts }
