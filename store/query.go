package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"

	"github.com/kvnode/kvnode/fsm"
	"github.com/kvnode/kvnode/oql"
	"github.com/kvnode/kvnode/region"
	"github.com/kvnode/kvnode/store/raftgroup"
)

// Queries. A query over replicated regions runs on this node after one read
// barrier on group 0 (skipped for a stale read). A query whose first FROM
// iterator is a partitioned region scatters: one replica of each partition
// group runs the query's partial (WHERE, projection, DISTINCT, per-group
// ORDER BY/LIMIT or partial aggregates) over its share, after a read
// barrier on its group, and this node merges the partials (package oql).

// Query runs a parsed query at consistency c.
func (s *Store) Query(ctx context.Context, c region.Consistency, q *oql.Query, params []any, opt oql.Options) (*oql.Result, error) {
	g0, err := s.readGroup(ctx, c)
	if err != nil {
		return nil, err
	}
	qs, err := s.newQuerySource(ctx, c, g0, q)
	if err != nil {
		return nil, err
	}
	if err := q.Check(qs.partitioned); err != nil {
		return nil, err
	}
	s.syncIndexes()
	ref, ok := qs.refs[q.ScatterRegion()]
	if !ok || ref.kind != region.Partition {
		return q.Execute(ctx, qs, params, opt)
	}
	p, err := s.partitions(ctx)
	if err != nil {
		return nil, err
	}
	gids := allGroups(p)
	parts := make([]*oql.Partial, len(gids))
	errs := parallel(gids, func(i int, gid uint64) error {
		part, err := s.queryPart(ctx, gid, c, qs, q, params, opt)
		parts[i] = part
		return err
	})
	if err := firstError(errs); err != nil {
		return nil, err
	}
	return q.Merge(ctx, parts, params, opt)
}

// queryPart runs the partial of q over group gid's share: here when this
// node has a usable replica, else on a member that hosts the group.
func (s *Store) queryPart(ctx context.Context, gid uint64, c region.Consistency, qs *querySource, q *oql.Query, params []any, opt oql.Options) (*oql.Partial, error) {
	return retryPart(ctx, s, gid, "query", func(attempt int) (*oql.Partial, error) {
		return s.queryPartOnce(ctx, gid, c, qs, q, params, opt, attempt)
	})
}

func (s *Store) queryPartOnce(ctx context.Context, gid uint64, c region.Consistency, qs *querySource, q *oql.Query, params []any, opt oql.Options, attempt int) (*oql.Partial, error) {
	if g := s.localFor(gid); g != nil {
		err := s.localRead(ctx, g, c, catchUpWait)
		if err == nil {
			return q.ExecutePartial(ctx, qs, qs.shard(g), params, opt)
		}
		if !errors.Is(err, errLagging) {
			return nil, err
		}
	}
	addr, err := s.hostFor(gid, attempt)
	if err != nil {
		return nil, err
	}
	return s.client.query(ctx, addr, gid, queryReq{
		Text:    q.Text(),
		Params:  oql.EncodeParams(params),
		Stale:   c == region.Stale,
		MaxRows: opt.MaxRows,
	})
}

// queryReq asks a member for the partial of a query over its replica of a
// partition group.
type queryReq struct {
	Text    string          `json:"text"`
	Params  json.RawMessage `json:"params"`
	Stale   bool            `json:"stale,omitempty"`
	MaxRows int             `json:"maxRows,omitempty"`
}

// servePartial answers a queryReq for group g, which this node hosts.
func (s *Store) servePartial(ctx context.Context, g *raftgroup.Group, req queryReq) (*oql.Partial, error) {
	c := region.Linearizable
	if req.Stale {
		c = region.Stale
	}
	if s.localFor(g.ID()) == nil {
		return nil, fmt.Errorf("group %d on %s is moving away: %w", g.ID(), s.name, errNotHosted)
	}
	if err := s.localRead(ctx, g, c, catchUpWait); err != nil {
		return nil, err
	}
	q, err := s.CompileQuery(req.Text)
	if err != nil {
		return nil, err
	}
	params, err := oql.DecodeParams(req.Params)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", region.ErrInvalid, err)
	}
	// Group 0 needs its own barrier only when the query reads more than the
	// scattered region (a join or subquery over a replicated region).
	g0 := s.control()
	if g0 == nil {
		return nil, region.ErrShuttingDown
	}
	if len(q.Regions()) > 1 || q.ScatterRegion() == "" {
		if err := s.localRead(ctx, g0, c, 0); err != nil {
			return nil, err
		}
	}
	qs, err := s.newQuerySource(ctx, c, g0, q)
	if err != nil {
		return nil, err
	}
	s.syncIndexes()
	return q.ExecutePartial(ctx, qs, qs.shard(g), params, oql.Options{MaxRows: req.MaxRows})
}

// querySource is what a query reads on this node: oql.Source over the
// node's replicas, with the regions the query names resolved once.
type querySource struct {
	s    *Store
	c    region.Consistency
	g0   *raftgroup.Group
	refs map[string]regionRef // by path: "/orders"

	mu     sync.Mutex
	synced map[uint64]bool // partition groups whose local replica passed a barrier
}

// newQuerySource resolves every region q names. g0 has passed the barrier
// for consistency c.
func (s *Store) newQuerySource(ctx context.Context, c region.Consistency, g0 *raftgroup.Group, q *oql.Query) (*querySource, error) {
	qs := &querySource{s: s, c: c, g0: g0, refs: map[string]regionRef{}, synced: map[uint64]bool{}}
	for _, path := range q.Regions() {
		name := strings.TrimPrefix(path, "/")
		ref, ok := lookup(g0, name)
		if !ok && c == region.Linearizable {
			// Created after our barrier by someone else? Look once more.
			var err error
			if ref, err = s.resolve(ctx, name, c); err != nil && !errors.Is(err, region.ErrRegionNotFound) {
				return nil, err
			}
			ok = err == nil
		}
		if !ok {
			return nil, fmt.Errorf("region %s: %w", path, region.ErrRegionNotFound)
		}
		qs.refs[path] = ref
	}
	return qs, nil
}

func (qs *querySource) partitioned(path string) bool {
	ref, ok := qs.refs[path]
	return ok && ref.kind == region.Partition
}

func (qs *querySource) ref(path string) (regionRef, error) {
	ref, ok := qs.refs[path]
	if !ok {
		return regionRef{}, fmt.Errorf("region %s: %w", path, region.ErrRegionNotFound)
	}
	return ref, nil
}

// Scan iterates a region: group 0's copy of a replicated one; for a
// partitioned one, every group's part, each from a local replica (after a
// barrier) or fetched from a member that hosts it.
func (qs *querySource) Scan(ctx context.Context, path string, fn func(key string, value []byte) bool) error {
	ref, err := qs.ref(path)
	if err != nil {
		return err
	}
	if ref.kind != region.Partition {
		return qs.g0.FSM().Scan(ref.name, 0, func(k string, v json.RawMessage) bool { return fn(k, v) })
	}
	p, err := qs.s.partitions(ctx)
	if err != nil {
		return err
	}
	for _, gid := range allGroups(p) {
		more := true
		if g := qs.s.localFor(gid); g != nil && qs.sync(ctx, g) == nil {
			if err := g.FSM().Scan(ref.name, ref.id, func(k string, v json.RawMessage) bool {
				more = fn(k, v)
				return more
			}); err != nil {
				return err
			}
		} else {
			resp, err := qs.s.readPart(ctx, gid, qs.c, readReq{Op: readList, Region: ref.name, ID: ref.id, Limit: -1})
			if err != nil {
				return err
			}
			for i := range resp.Keys {
				if more = fn(resp.Keys[i], resp.Values[i]); !more {
					break
				}
			}
		}
		if !more {
			return nil
		}
	}
	return nil
}

// sync passes the read barrier on a local partition replica once per query.
func (qs *querySource) sync(ctx context.Context, g *raftgroup.Group) error {
	qs.mu.Lock()
	done := qs.synced[g.ID()]
	qs.mu.Unlock()
	if done {
		return nil
	}
	if err := qs.s.localRead(ctx, g, qs.c, catchUpWait); err != nil {
		return err
	}
	qs.mu.Lock()
	qs.synced[g.ID()] = true
	qs.mu.Unlock()
	return nil
}

// Get reads one key.
func (qs *querySource) Get(ctx context.Context, path, key string) ([]byte, bool, error) {
	ref, err := qs.ref(path)
	if err != nil {
		return nil, false, err
	}
	var vals []json.RawMessage
	if ref.kind == region.Partition {
		vals, err = qs.s.getPartitioned(ctx, qs.c, ref, []string{key})
	} else {
		vals, err = qs.g0.FSM().GetMany(ref.name, 0, []string{key})
	}
	if err != nil {
		return nil, false, err
	}
	return vals[0], vals[0] != nil, nil
}

// Size counts a region's entries.
func (qs *querySource) Size(ctx context.Context, path string) (int, error) {
	ref, err := qs.ref(path)
	if err != nil {
		return 0, err
	}
	if ref.kind == region.Partition {
		return qs.s.countPartitioned(ctx, qs.c, ref)
	}
	return qs.g0.FSM().Count(ref.name, 0)
}

// shard is the Source of one partial: the scattered region is the local
// replica of one partition group; everything else reads through qs.
func (qs *querySource) shard(g *raftgroup.Group) oql.Source {
	return &shardSource{qs: qs, f: g.FSM()}
}

type shardSource struct {
	qs *querySource
	f  *fsm.FSM
}

func (ss *shardSource) Scan(ctx context.Context, path string, fn func(key string, value []byte) bool) error {
	ref, err := ss.qs.ref(path)
	if err != nil {
		return err
	}
	if ref.kind != region.Partition {
		return ss.qs.Scan(ctx, path, fn)
	}
	return ss.f.Scan(ref.name, ref.id, func(k string, v json.RawMessage) bool { return fn(k, v) })
}

func (ss *shardSource) Get(ctx context.Context, path, key string) ([]byte, bool, error) {
	return ss.qs.Get(ctx, path, key)
}

func (ss *shardSource) Size(ctx context.Context, path string) (int, error) {
	ref, err := ss.qs.ref(path)
	if err != nil {
		return 0, err
	}
	if ref.kind != region.Partition {
		return ss.qs.Size(ctx, path)
	}
	return ss.f.Count(ref.name, ref.id)
}

// queryCache keeps compiled queries by text, so a named query (or a
// repeated ad-hoc one) is parsed and compiled once per node. Updating a
// named query changes its text, which is a new cache entry.
type queryCache struct {
	mu sync.Mutex
	m  map[string]*oql.Query
}

// maxCachedQueries bounds the cache; past it the cache starts over.
const maxCachedQueries = 4096

// CompileQuery parses text, or returns the cached query of the same text.
func (s *Store) CompileQuery(text string) (*oql.Query, error) {
	s.queries.mu.Lock()
	q, ok := s.queries.m[text]
	s.queries.mu.Unlock()
	if ok {
		return q, nil
	}
	q, err := oql.Parse(text)
	if err != nil {
		return nil, err
	}
	s.queries.mu.Lock()
	if s.queries.m == nil || len(s.queries.m) >= maxCachedQueries {
		s.queries.m = map[string]*oql.Query{}
	}
	s.queries.m[text] = q
	s.queries.mu.Unlock()
	return q, nil
}
