package query

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"

	"github.com/kvnode/kvnode/fsm"
	"github.com/kvnode/kvnode/index"
	"github.com/kvnode/kvnode/oql"
	"github.com/kvnode/kvnode/region"
	"github.com/kvnode/kvnode/store/catalog"
	"github.com/kvnode/kvnode/store/regions"
)

// source is what a query reads on this member: oql.Source over the
// member's replicas, with the regions the query names resolved once.
type source struct {
	e    *Engine
	c    region.Consistency
	f0   *fsm.FSM               // the control group's copy, past the barrier for c
	refs map[string]regions.Ref // by path: "/orders"

	mu     sync.Mutex
	synced map[uint64]*fsm.FSM // partition groups whose local replica passed a barrier
}

// newSource resolves every region q names. f0 has passed the barrier for
// consistency c.
func (e *Engine) newSource(ctx context.Context, c region.Consistency, f0 *fsm.FSM, q *oql.Query) (*source, error) {
	qs := &source{e: e, c: c, f0: f0, refs: map[string]regions.Ref{}, synced: map[uint64]*fsm.FSM{}}
	for _, path := range q.Regions() {
		name := strings.TrimPrefix(path, "/")
		ref, ok := regions.Lookup(f0, name)
		if !ok && c == region.Linearizable {
			// Created after our barrier by someone else? Look once more.
			var err error
			if ref, err = e.parts.Resolve(ctx, name, c); err != nil && !errors.Is(err, region.ErrRegionNotFound) {
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

func (qs *source) partitioned(path string) bool {
	ref, ok := qs.refs[path]
	return ok && ref.Kind == region.Partition
}

func (qs *source) ref(path string) (regions.Ref, error) {
	ref, ok := qs.refs[path]
	if !ok {
		return regions.Ref{}, fmt.Errorf("region %s: %w", path, region.ErrRegionNotFound)
	}
	return ref, nil
}

// Scan iterates a region: the control group's copy of a replicated one;
// for a partitioned one, every group's part, each from a local replica
// (after a barrier) or fetched from a member that hosts it.
func (qs *source) Scan(ctx context.Context, path string, fn func(key string, value []byte) bool) error {
	ref, err := qs.ref(path)
	if err != nil {
		return err
	}
	if ref.Kind != region.Partition {
		return qs.f0.Scan(ref.Name, 0, func(k string, v json.RawMessage) bool { return fn(k, v) })
	}
	t, err := qs.e.groups.Placement(ctx)
	if err != nil {
		return err
	}
	for _, gid := range regions.AllGroups(t.P()) {
		more := true
		if f := qs.local(ctx, gid); f != nil {
			if err := f.Scan(ref.Name, ref.ID, func(k string, v json.RawMessage) bool {
				more = fn(k, v)
				return more
			}); err != nil {
				return err
			}
		} else {
			entries, err := qs.e.parts.ListGroup(ctx, gid, qs.c, ref)
			if err != nil {
				return err
			}
			for _, en := range entries {
				if more = fn(en.Key, en.Value); !more {
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

// local is this member's replica of partition group gid, past the read
// barrier (taken once per query), or nil when there is none usable.
func (qs *source) local(ctx context.Context, gid uint64) *fsm.FSM {
	qs.mu.Lock()
	f := qs.synced[gid]
	qs.mu.Unlock()
	if f != nil {
		return f
	}
	f, err := qs.e.groups.LocalPart(ctx, gid, qs.c)
	if err != nil {
		return nil
	}
	qs.mu.Lock()
	qs.synced[gid] = f
	qs.mu.Unlock()
	return f
}

// Get reads one key.
func (qs *source) Get(ctx context.Context, path, key string) ([]byte, bool, error) {
	ref, err := qs.ref(path)
	if err != nil {
		return nil, false, err
	}
	var vals []json.RawMessage
	if ref.Kind == region.Partition {
		vals, err = qs.e.parts.Get(ctx, qs.c, ref, []string{key})
	} else {
		vals, err = qs.f0.GetMany(ref.Name, 0, []string{key})
	}
	if err != nil {
		return nil, false, err
	}
	return vals[0], vals[0] != nil, nil
}

// Size counts a region's entries.
func (qs *source) Size(ctx context.Context, path string) (int, error) {
	ref, err := qs.ref(path)
	if err != nil {
		return 0, err
	}
	if ref.Kind == region.Partition {
		return qs.e.parts.Count(ctx, qs.c, ref)
	}
	return qs.f0.Count(ref.Name, 0)
}

// Indexes and ScanIndex make a source an oql.IndexedSource: the planner
// then serves indexable predicates of a replicated region from the
// control group's indexes (a partitioned region's come through shard).
func (qs *source) Indexes(path string) []index.Def {
	ref, err := qs.ref(path)
	if err != nil || ref.Kind == region.Partition {
		return nil
	}
	return qs.indexDefs(ref)
}

// indexDefs are the index definitions of a region, as the control group
// has them.
func (qs *source) indexDefs(ref regions.Ref) []index.Def {
	var out []index.Def
	for _, e := range qs.f0.MetaList(catalog.RegionIndexPrefix(ref.Name)) {
		if def, err := catalog.DecodeIndex(catalog.Entry{Key: e.Key, Value: e.Value, Version: e.Version}); err == nil {
			out = append(out, index.Def{Name: def.Name, Path: def.Path})
		}
	}
	return out
}

func (qs *source) ScanIndex(_ context.Context, path, name string, ranges []index.Range, fn func(key string, value []byte) bool) (bool, error) {
	ref, err := qs.ref(path)
	if err != nil || ref.Kind == region.Partition {
		return false, err
	}
	return qs.f0.Indexes().Scan(ref.Name, 0, name, ranges, func(k string, v json.RawMessage) bool { return fn(k, v) })
}

// shard is the Source of one partial: the scattered region is f, the
// local replica of one partition group; everything else reads through qs.
func (qs *source) shard(f *fsm.FSM) oql.Source {
	return &shardSource{qs: qs, f: f}
}

type shardSource struct {
	qs *source
	f  *fsm.FSM
}

func (ss *shardSource) Scan(ctx context.Context, path string, fn func(key string, value []byte) bool) error {
	ref, err := ss.qs.ref(path)
	if err != nil {
		return err
	}
	if ref.Kind != region.Partition {
		return ss.qs.Scan(ctx, path, fn)
	}
	return ss.f.Scan(ref.Name, ref.ID, func(k string, v json.RawMessage) bool { return fn(k, v) })
}

func (ss *shardSource) Get(ctx context.Context, path, key string) ([]byte, bool, error) {
	return ss.qs.Get(ctx, path, key)
}

func (ss *shardSource) Size(ctx context.Context, path string) (int, error) {
	ref, err := ss.qs.ref(path)
	if err != nil {
		return 0, err
	}
	if ref.Kind != region.Partition {
		return ss.qs.Size(ctx, path)
	}
	return ss.f.Count(ref.Name, ref.ID)
}

func (ss *shardSource) Indexes(path string) []index.Def {
	ref, err := ss.qs.ref(path)
	if err != nil {
		return nil
	}
	return ss.qs.indexDefs(ref)
}

func (ss *shardSource) ScanIndex(ctx context.Context, path, name string, ranges []index.Range, fn func(key string, value []byte) bool) (bool, error) {
	ref, err := ss.qs.ref(path)
	if err != nil {
		return false, err
	}
	if ref.Kind != region.Partition {
		return ss.qs.ScanIndex(ctx, path, name, ranges, fn)
	}
	return ss.f.Indexes().Scan(ref.Name, ref.ID, name, ranges, func(k string, v json.RawMessage) bool { return fn(k, v) })
}

// ValuesImmutable: a state machine replaces a value, never edits it, so
// the query engine may read values in place (oql.ImmutableSource).
func (qs *source) ValuesImmutable() {}

// ValuesImmutable: as source's.
func (ss *shardSource) ValuesImmutable() {}
