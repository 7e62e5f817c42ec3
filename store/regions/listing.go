package regions

import (
	"context"

	"github.com/kvnode/kvnode/partition"
	"github.com/kvnode/kvnode/region"
	"github.com/kvnode/kvnode/store/listing"
)

// Streamed region listings (GET /kv/v1/{region}?limit= and .../keys): a
// replicated region's from the control group's replica here, a
// partitioned one's as one stream per partition group (each from a local
// replica or a member's stream, the store's OpenPart), merged in key order
// by package store/listing. See store/DESIGN.md, "Listings".

// OpenList opens a streamed listing of a region in key order; see
// region.Listing. It passes the read barrier of every group it reads
// (linearizable) or reads local replicas where they exist (stale), and
// opens every group's stream, before it returns: an error that still fits
// a status comes from here. The caller must Close the listing.
func (r *API) OpenList(ctx context.Context, c region.Consistency, name string, opt region.ListOptions) (region.Listing, error) {
	return withRegion(ctx, r.parts, name, c, func(ref Ref) (region.Listing, error) {
		if ref.Kind == region.Partition {
			return r.openPartitioned(ctx, c, ref, opt)
		}
		f, err := r.groups.Control(ctx, c)
		if err != nil {
			return nil, err
		}
		src, err := listing.Local(f, name, 0, opt)
		if err != nil {
			return nil, err
		}
		return listing.Merge(ctx, []listing.Source{src}, opt), nil
	})
}

// openPartitioned opens one stream per partition group, in parallel,
// under Settled: each stream reads a frozen state, so a bucket that
// switched owners while they were opened could be in two of them or in
// none; they are closed and opened again with the new table then.
func (r *API) openPartitioned(ctx context.Context, c region.Consistency, ref Ref, opt region.ListOptions) (region.Listing, error) {
	if opt.Limit == 0 {
		return listing.Merge(ctx, nil, opt), nil
	}
	var srcs []listing.Source
	closeAll := func() {
		for _, src := range srcs {
			if src != nil {
				src.Close()
			}
		}
		srcs = nil
	}
	err := Settled(ctx, r.groups, c, func(t partition.Table) error {
		closeAll()
		gids := AllGroups(t.P())
		srcs = make([]listing.Source, len(gids))
		return FirstError(Parallel(gids, func(i int, gid uint64) error {
			src, err := r.groups.OpenPart(ctx, gid, c, ref.Name, ref.ID, opt)
			srcs[i] = src
			return err
		}))
	})
	if err != nil {
		closeAll()
		return nil, err
	}
	return listing.Merge(ctx, srcs, opt), nil
}
