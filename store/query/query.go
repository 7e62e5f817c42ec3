package query

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"

	"github.com/kvnode/kvnode/fsm"
	"github.com/kvnode/kvnode/oql"
	"github.com/kvnode/kvnode/partition"
	"github.com/kvnode/kvnode/region"
	"github.com/kvnode/kvnode/store/regions"
)

// Groups is the store as queries use it (store.Router implements it): the
// control group's copy here, the partition groups' replicas here or on
// members, and the group RPC a partial travels by.
type Groups interface {
	Control(ctx context.Context, c region.Consistency) (*fsm.FSM, error)
	ControlState() (*fsm.FSM, error)
	ControlBarrier(ctx context.Context) error
	LocalPart(ctx context.Context, gid uint64, c region.Consistency) (*fsm.FSM, error)
	Placement(ctx context.Context) (partition.Table, error)
	Visit(ctx context.Context, gid uint64, c region.Consistency, what string, local func(*fsm.FSM) error, remote func(addr string) error) error
	Call(ctx context.Context, addr string, gid uint64, name string, body []byte) ([]byte, error)
	Serve(name, what string, h func(ctx context.Context, replica func(region.Consistency) (*fsm.FSM, error), body []byte) ([]byte, error))
	// SyncIndexes installs the current index definitions into every local
	// state machine whose set is older, so a query plans with them.
	SyncIndexes()
}

// Engine runs OQL queries on a member: compiled once per text, executed
// here over replicated regions, scattered to one replica of each
// partition group for a partitioned one and merged here.
type Engine struct {
	groups Groups
	parts  *regions.Parts
	// queries caches compiled queries by text (see CompileQuery).
	queries queryCache
}

// queryRPC names the partial's RPC among the store's group RPCs:
// POST /v1/groups/{gid}/query, JSON queryReq → oql.EncodePartial.
const queryRPC = "query"

// New returns the query engine of a member over groups and the regions'
// parts, and
// serves the partial's RPC there.
func New(groups Groups, parts *regions.Parts) *Engine {
	e := &Engine{groups: groups, parts: parts}
	groups.Serve(queryRPC, "the query's partial result", e.servePartial)
	return e
}

// Query runs a parsed query at consistency c.
func (e *Engine) Query(ctx context.Context, c region.Consistency, q *oql.Query, params []any, opt oql.Options) (*oql.Result, error) {
	f0, err := e.groups.Control(ctx, c)
	if err != nil {
		return nil, err
	}
	qs, err := e.newSource(ctx, c, f0, q)
	if err != nil {
		return nil, err
	}
	if err := q.Check(qs.partitioned); err != nil {
		return nil, err
	}
	e.groups.SyncIndexes()
	ref, ok := qs.refs[q.ScatterRegion()]
	if !ok {
		return q.Execute(ctx, qs, params, opt)
	}
	if ref.Kind != region.Partition {
		if w := scanWorkers(); qs.parallelizable(q, ref, w) {
			return e.scanParallel(ctx, qs, ref, q, params, opt, w)
		}
		return q.Execute(ctx, qs, params, opt)
	}
	var parts []*oql.Partial
	err = regions.Settled(ctx, e.groups, c, func(t partition.Table) error {
		gids := regions.AllGroups(t.P())
		parts = make([]*oql.Partial, len(gids))
		return regions.FirstError(regions.Parallel(gids, func(i int, gid uint64) error {
			part, err := e.queryPart(ctx, gid, c, qs, q, params, opt)
			parts[i] = part
			return err
		}))
	})
	if err != nil {
		return nil, err
	}
	return q.Merge(ctx, parts, params, opt)
}

// queryPart runs the partial of q over group gid's share: here when this
// member has a usable replica, else on a member that hosts the group.
func (e *Engine) queryPart(ctx context.Context, gid uint64, c region.Consistency, qs *source, q *oql.Query, params []any, opt oql.Options) (*oql.Partial, error) {
	var part *oql.Partial
	err := e.groups.Visit(ctx, gid, c, "query", func(f *fsm.FSM) error {
		var err error
		part, err = q.ExecutePartial(ctx, qs, qs.shard(f), params, opt)
		return err
	}, func(addr string) error {
		body, err := json.Marshal(queryReq{
			Text:    q.Text(),
			Params:  oql.EncodeParams(params),
			Stale:   c == region.Stale,
			MaxRows: opt.MaxRows,
		})
		if err != nil {
			return err
		}
		data, err := e.groups.Call(ctx, addr, gid, queryRPC, body)
		if err != nil {
			return err
		}
		if part, err = oql.DecodePartial(data); err != nil {
			return fmt.Errorf("query partial from %s: %w", addr, err)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return part, nil
}

// queryReq asks a member for the partial of a query over its replica of a
// partition group.
type queryReq struct {
	Text    string          `json:"text"`
	Params  json.RawMessage `json:"params"`
	Stale   bool            `json:"stale,omitempty"`
	MaxRows int             `json:"maxRows,omitempty"`
}

// servePartial answers a queryReq for a group this member hosts.
func (e *Engine) servePartial(ctx context.Context, replica func(region.Consistency) (*fsm.FSM, error), body []byte) ([]byte, error) {
	var req queryReq
	if err := json.Unmarshal(body, &req); err != nil {
		return nil, fmt.Errorf("%w: decode query request: %v", region.ErrInvalid, err)
	}
	c := region.Linearizable
	if req.Stale {
		c = region.Stale
	}
	f, err := replica(c)
	if err != nil {
		return nil, err
	}
	q, err := e.CompileQuery(req.Text)
	if err != nil {
		return nil, err
	}
	params, err := oql.DecodeParams(req.Params)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", region.ErrInvalid, err)
	}
	// The control group needs its own barrier only when the query reads
	// more than the scattered region (a join or subquery over a replicated
	// region).
	f0, err := e.groups.ControlState()
	if err != nil {
		return nil, err
	}
	if c == region.Linearizable && (len(q.Regions()) > 1 || q.ScatterRegion() == "") {
		if err := e.groups.ControlBarrier(ctx); err != nil {
			return nil, err
		}
	}
	qs, err := e.newSource(ctx, c, f0, q)
	if err != nil {
		return nil, err
	}
	e.groups.SyncIndexes()
	part, err := q.ExecutePartial(ctx, qs, qs.shard(f), params, oql.Options{MaxRows: req.MaxRows})
	if err != nil {
		return nil, err
	}
	return oql.EncodePartial(part), nil
}

// queryCache keeps compiled queries by text, so a named query (or a
// repeated ad-hoc one) is parsed and compiled once per member. Updating a
// named query changes its text, which is a new cache entry.
type queryCache struct {
	mu sync.Mutex
	m  map[string]*oql.Query
}

// maxCachedQueries bounds the cache; past it the cache starts over.
const maxCachedQueries = 4096

// CompileQuery parses text, or returns the cached query of the same text.
func (e *Engine) CompileQuery(text string) (*oql.Query, error) {
	e.queries.mu.Lock()
	q, ok := e.queries.m[text]
	e.queries.mu.Unlock()
	if ok {
		return q, nil
	}
	q, err := oql.Parse(text)
	if err != nil {
		return nil, err
	}
	e.queries.mu.Lock()
	if e.queries.m == nil || len(e.queries.m) >= maxCachedQueries {
		e.queries.m = map[string]*oql.Query{}
	}
	e.queries.m[text] = q
	e.queries.mu.Unlock()
	return q, nil
}
