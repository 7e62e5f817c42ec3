package store

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/kvnode/kvnode/fsm"
	"github.com/kvnode/kvnode/fsm/codec"
	"github.com/kvnode/kvnode/partition"
	"github.com/kvnode/kvnode/region"
)

// Routing of region operations. A REPLICATE region lives in group 0; a
// PARTITION region's entries live in partition groups 1..P, a key in group
// partition.GroupForKey(key, P). Single-key operations go to the key's
// group; region-wide reads fan out to every group and merge; multi-key
// operations split by group. See DESIGN.md for what is atomic.

// regionRef is what routing needs to know of a region.
type regionRef struct {
	name string
	kind region.Kind
	id   uint64 // group 0's ID of the region: partition commands carry it
}

// resolve looks the region up in this node's copy of group 0. A region this
// copy does not know may have just been created elsewhere: only then, and
// not for a stale read, does it pay for a read barrier on group 0 and look
// again.
func (s *Store) resolve(ctx context.Context, name string, c region.Consistency) (regionRef, error) {
	g := s.control()
	if g == nil {
		return regionRef{}, errClosed
	}
	ref, ok := lookup(g, name)
	if ok {
		return ref, nil
	}
	if c == region.Stale {
		return regionRef{}, fmt.Errorf("region %q: %w", name, region.ErrRegionNotFound)
	}
	if err := s.localRead(ctx, g, region.Linearizable, 0); err != nil {
		return regionRef{}, err
	}
	if ref, ok = lookup(g, name); ok {
		return ref, nil
	}
	return regionRef{}, fmt.Errorf("region %q: %w", name, region.ErrRegionNotFound)
}

// refresh looks the region up again after a read barrier on group 0, when a
// partition group refused the ID we had (the region was destroyed, maybe
// recreated, and our copy was behind).
func (s *Store) refresh(ctx context.Context, name string) (regionRef, error) {
	g := s.control()
	if g == nil {
		return regionRef{}, errClosed
	}
	if err := s.localRead(ctx, g, region.Linearizable, 0); err != nil {
		return regionRef{}, err
	}
	if ref, ok := lookup(g, name); ok {
		return ref, nil
	}
	return regionRef{}, fmt.Errorf("region %q: %w", name, region.ErrRegionNotFound)
}

func lookup(g *group, name string) (regionRef, bool) {
	info, ok := g.fsm.Region(name)
	if !ok {
		return regionRef{}, false
	}
	id, _ := g.fsm.RegionID(name)
	return regionRef{name: name, kind: info.Kind, id: id}, true
}

// withRegion runs op with the region's reference; when a partition group
// says the region is gone while group 0 (our copy) still had it, it looks
// again with a barrier and, if the region still (or again) exists, retries
// once with the fresh ID.
func withRegion[T any](ctx context.Context, s *Store, name string, c region.Consistency, op func(regionRef) (T, error)) (T, error) {
	ref, err := s.resolve(ctx, name, c)
	if err != nil {
		var zero T
		return zero, err
	}
	out, err := op(ref)
	if ref.kind != region.Partition || !errors.Is(err, region.ErrRegionNotFound) {
		return out, err
	}
	if c == region.Stale {
		return out, err
	}
	fresh, ferr := s.refresh(ctx, name)
	if ferr != nil || fresh.id == ref.id {
		return out, err
	}
	return op(fresh)
}

// keysByGroup splits indexes of keys by partition group, in ascending group
// order; each group's indexes keep the request order.
func keysByGroup(keys []string, p int) ([]uint64, map[uint64][]int) {
	by := map[uint64][]int{}
	for i, k := range keys {
		gid := partition.GroupForKey(k, p)
		by[gid] = append(by[gid], i)
	}
	gids := make([]uint64, 0, len(by))
	for gid := range by {
		gids = append(gids, gid)
	}
	slices.Sort(gids)
	return gids, by
}

// parallel runs f for every group id concurrently and returns the errors in
// group order (nil where f succeeded).
func parallel(gids []uint64, f func(i int, gid uint64) error) []error {
	errs := make([]error, len(gids))
	if len(gids) == 1 {
		errs[0] = f(0, gids[0])
		return errs
	}
	var wg sync.WaitGroup
	for i, gid := range gids {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = f(i, gid)
		}()
	}
	wg.Wait()
	return errs
}

// firstError returns the first non-nil error, preferring refusals decided
// by a state machine (they say something about the data) over availability
// errors, so that a multi-group answer is as informative as a single one.
func firstError(errs []error) error {
	var avail error
	for _, err := range errs {
		switch {
		case err == nil:
		case errors.Is(err, region.ErrNoLeader), errors.Is(err, region.ErrNotLeader), errors.Is(err, region.ErrIndeterminate):
			if avail == nil {
				avail = err
			}
		default:
			return err
		}
	}
	return avail
}

// partitions returns P. In the first moments of a new cluster the table
// may not exist yet: it waits for it like for a leader (LeaderWait, ctx).
func (s *Store) partitions(ctx context.Context) (int, error) {
	var since time.Time
	for attempt := 0; ; attempt++ {
		if p := s.partitionCount(); p > 0 {
			return p, nil
		}
		if since.IsZero() {
			since = time.Now()
		}
		if err := s.pause(ctx, s.control(), attempt, since, errNoTable); err != nil {
			return 0, err
		}
	}
}

// ---- reads ----

// getPartitioned reads keys of a partitioned region, in request order.
func (s *Store) getPartitioned(ctx context.Context, c region.Consistency, ref regionRef, keys []string) ([]json.RawMessage, error) {
	p, err := s.partitions(ctx)
	if err != nil {
		return nil, err
	}
	gids, by := keysByGroup(keys, p)
	out := make([]json.RawMessage, len(keys))
	errs := parallel(gids, func(_ int, gid uint64) error {
		idx := by[gid]
		sub := make([]string, len(idx))
		for j, i := range idx {
			sub[j] = keys[i]
		}
		resp, err := s.readPart(ctx, gid, c, readReq{Op: readGet, Region: ref.name, ID: ref.id, Keys: sub})
		if err != nil {
			return err
		}
		if len(resp.Values) != len(sub) {
			return fmt.Errorf("group %d answered %d values for %d keys", gid, len(resp.Values), len(sub))
		}
		for j, i := range idx {
			out[i] = resp.Values[j]
		}
		return nil
	})
	if err := firstError(errs); err != nil {
		return nil, err
	}
	return out, nil
}

// listPartitioned merges the first limit entries (all when limit < 0) of
// every group in key order.
func (s *Store) listPartitioned(ctx context.Context, c region.Consistency, ref regionRef, limit int) ([]region.Entry, error) {
	if limit == 0 {
		return []region.Entry{}, nil
	}
	p, err := s.partitions(ctx)
	if err != nil {
		return nil, err
	}
	gids := allGroups(p)
	parts := make([][]region.Entry, len(gids))
	errs := parallel(gids, func(i int, gid uint64) error {
		resp, err := s.readPart(ctx, gid, c, readReq{Op: readList, Region: ref.name, ID: ref.id, Limit: limit})
		if err != nil {
			return err
		}
		if len(resp.Keys) != len(resp.Values) {
			return fmt.Errorf("group %d answered %d keys and %d values", gid, len(resp.Keys), len(resp.Values))
		}
		for j := range resp.Keys {
			parts[i] = append(parts[i], region.Entry{Key: resp.Keys[j], Value: resp.Values[j]})
		}
		return nil
	})
	if err := firstError(errs); err != nil {
		return nil, err
	}
	merged := slices.Concat(parts...)
	slices.SortFunc(merged, func(a, b region.Entry) int { return cmp.Compare(a.Key, b.Key) })
	if limit >= 0 && len(merged) > limit {
		merged = merged[:limit]
	}
	return merged, nil
}

// keysPartitioned merges every group's keys in order.
func (s *Store) keysPartitioned(ctx context.Context, c region.Consistency, ref regionRef) ([]string, error) {
	p, err := s.partitions(ctx)
	if err != nil {
		return nil, err
	}
	gids := allGroups(p)
	parts := make([][]string, len(gids))
	errs := parallel(gids, func(i int, gid uint64) error {
		resp, err := s.readPart(ctx, gid, c, readReq{Op: readKeys, Region: ref.name, ID: ref.id})
		parts[i] = resp.Keys
		return err
	})
	if err := firstError(errs); err != nil {
		return nil, err
	}
	keys := slices.Concat(parts...)
	slices.Sort(keys)
	return keys, nil
}

// countPartitioned sums every group's count.
func (s *Store) countPartitioned(ctx context.Context, c region.Consistency, ref regionRef) (int, error) {
	p, err := s.partitions(ctx)
	if err != nil {
		return 0, err
	}
	gids := allGroups(p)
	counts := make([]int, len(gids))
	errs := parallel(gids, func(i int, gid uint64) error {
		resp, err := s.readPart(ctx, gid, c, readReq{Op: readCount, Region: ref.name, ID: ref.id})
		counts[i] = resp.Count
		return err
	})
	if err := firstError(errs); err != nil {
		return 0, err
	}
	total := 0
	for _, n := range counts {
		total += n
	}
	return total, nil
}

func allGroups(p int) []uint64 {
	gids := make([]uint64, p)
	for i := range gids {
		gids[i] = uint64(i + 1)
	}
	return gids
}

// ---- writes ----

// applySplit sends one command per partition group holding some of keys,
// built by mk from the indexes of that group's keys, in parallel.
func (s *Store) applySplit(ctx context.Context, keys []string, mk func(idx []int) *codec.Command) error {
	p, err := s.partitions(ctx)
	if err != nil {
		return err
	}
	gids, by := keysByGroup(keys, p)
	errs := parallel(gids, func(_ int, gid uint64) error {
		_, err := s.applyTo(ctx, gid, mk(by[gid]))
		return err
	})
	return writeError(errs)
}

// precheck validates a multi-group REPLACE, CAS or DELETE against a
// linearizable read of every key before anything is written, so that a
// request that would be refused changes nothing (each group then checks its
// own part again, atomically, when it applies it). It reports the first
// refusal in request order, as a single group would: missing keys first,
// then CAS mismatches.
func (s *Store) precheck(ctx context.Context, ref regionRef, keys []string, missing error, olds []json.RawMessage) error {
	cur, err := s.getPartitioned(ctx, region.Linearizable, ref, keys)
	if err != nil {
		return err
	}
	for i, v := range cur {
		if v == nil {
			return fmt.Errorf("region %q: key %q: %w", ref.name, keys[i], missing)
		}
	}
	for i, old := range olds {
		if !fsm.ValuesEqual(old, cur[i]) {
			return &region.ConflictError{Err: region.ErrCASMismatch, Key: keys[i], Current: cur[i]}
		}
	}
	return nil
}

// spansGroups reports whether keys fall into more than one partition group.
// It needs the partition table, and waits for it as every partitioned
// operation does (partitions): "no" without it would let a multi-group
// write skip the precheck that keeps it all-or-nothing.
func (s *Store) spansGroups(ctx context.Context, keys []string) (bool, error) {
	if len(keys) < 2 {
		return false, nil
	}
	p, err := s.partitions(ctx)
	if err != nil {
		return false, err
	}
	first := partition.GroupForKey(keys[0], p)
	for _, k := range keys[1:] {
		if partition.GroupForKey(k, p) != first {
			return true, nil
		}
	}
	return false, nil
}

// nextGroup picks the partition group for a generated key: one whose
// leader is this node when there is one (no forwarding), else round robin.
func (s *Store) nextGroup(p int) uint64 {
	start := s.rr.Add(1)
	for i := 0; i < p; i++ {
		gid := uint64((start+uint64(i))%uint64(p)) + 1
		if g := s.groupByID(gid); g != nil && g.isLeader() {
			return gid
		}
	}
	return start%uint64(p) + 1
}
