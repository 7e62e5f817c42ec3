package regions

import (
	"context"
	"encoding/json"

	"github.com/kvnode/kvnode/fsm/codec"
	"github.com/kvnode/kvnode/region"
)

// Data-aware access for server-side functions (package function, wired by
// package node): a function that runs on the members hosting a region's
// data reads and clears the parts this member holds.

// ScanLocal iterates this member's copy of a region: for a replicated one
// (groups empty) the control group's, for a partitioned one the named
// partition groups' parts, which this member must host. Reads are
// linearizable.
func (r *API) ScanLocal(ctx context.Context, name string, groups []uint64, fn func(key string, value json.RawMessage) bool) error {
	ref, err := r.parts.Resolve(ctx, name, region.Linearizable)
	if err != nil {
		return err
	}
	if ref.Kind != region.Partition {
		f, err := r.groups.Control(ctx, region.Linearizable)
		if err != nil {
			return err
		}
		return f.Scan(name, 0, fn)
	}
	for _, gid := range groups {
		f, err := r.groups.LocalPart(ctx, gid, region.Linearizable)
		if err != nil {
			return err
		}
		more := true
		if err := f.Scan(name, ref.ID, func(k string, v json.RawMessage) bool {
			more = fn(k, v)
			return more
		}); err != nil {
			return err
		}
		if !more {
			return nil
		}
	}
	return nil
}

// CountLocal counts this member's copy of a region: one count for a
// replicated region, one per group for a partitioned one.
func (r *API) CountLocal(ctx context.Context, name string, groups []uint64) ([]int, error) {
	ref, err := r.parts.Resolve(ctx, name, region.Linearizable)
	if err != nil {
		return nil, err
	}
	if ref.Kind != region.Partition {
		f, err := r.groups.Control(ctx, region.Linearizable)
		if err != nil {
			return nil, err
		}
		n, err := f.Count(name, 0)
		return []int{n}, err
	}
	out := make([]int, len(groups))
	for i, gid := range groups {
		f, err := r.groups.LocalPart(ctx, gid, region.Linearizable)
		if err != nil {
			return nil, err
		}
		if out[i], err = f.Count(name, ref.ID); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// ClearLocal clears a replicated region (groups empty) or the named
// partition groups' parts of a partitioned one, each through its Raft
// group and atomically.
func (r *API) ClearLocal(ctx context.Context, name string, groups []uint64) error {
	ref, err := r.parts.refresh(ctx, name)
	if err != nil {
		return err
	}
	if ref.Kind != region.Partition {
		return r.Clear(ctx, name)
	}
	errs := Parallel(groups, func(_ int, gid uint64) error {
		_, err := r.groups.Apply(ctx, gid, &codec.Command{Op: codec.OpClearPart, Region: name, RegionID: ref.ID})
		return err
	})
	return FirstError(errs)
}
