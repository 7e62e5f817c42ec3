package regions

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
	"github.com/kvnode/kvnode/fsm/jsonequal"
	"github.com/kvnode/kvnode/partition"
	"github.com/kvnode/kvnode/region"
)

// Routing of region operations. A REPLICATE region lives in group 0; a
// PARTITION region's entries live in partition groups 1..P, a key in group
// the partition table's owner of the key's bucket (partition.Table.GroupFor).
// Single-key operations go to the key's
// group; region-wide reads fan out to every group and merge; multi-key
// operations split by group. See DESIGN.md for what is atomic.

// Ref is what routing needs to know of a region.
type Ref struct {
	Name string
	Kind region.Kind
	ID   uint64 // the control group's ID of the region: partition commands carry it
	// TTL is the region's default entry time-to-live in milliseconds (0:
	// never), what a write without a time-to-live of its own gets. It is
	// read with the kind, from this member's copy of group 0: a change of
	// the default reaches writes routed here once the copy has applied it.
	TTL uint64
}

// resolve looks the region up in this node's copy of group 0. A region this
// copy does not know may have just been created elsewhere: only then, and
// not for a stale read, does it pay for a read barrier on group 0 and look
// again.
func (pt *Parts) Resolve(ctx context.Context, name string, c region.Consistency) (Ref, error) {
	f, err := pt.groups.ControlState()
	if err != nil {
		return Ref{}, err
	}
	ref, ok := Lookup(f, name)
	if ok {
		return ref, nil
	}
	if c == region.Stale {
		return Ref{}, fmt.Errorf("region %q: %w", name, region.ErrRegionNotFound)
	}
	if err := pt.groups.ControlBarrier(ctx); err != nil {
		return Ref{}, err
	}
	if ref, ok = Lookup(f, name); ok {
		return ref, nil
	}
	return Ref{}, fmt.Errorf("region %q: %w", name, region.ErrRegionNotFound)
}

// refresh looks the region up again after a read barrier on group 0, when a
// partition group refused the ID we had (the region was destroyed, maybe
// recreated, and our copy was behind).
func (pt *Parts) refresh(ctx context.Context, name string) (Ref, error) {
	f, err := pt.groups.ControlState()
	if err != nil {
		return Ref{}, err
	}
	if err := pt.groups.ControlBarrier(ctx); err != nil {
		return Ref{}, err
	}
	if ref, ok := Lookup(f, name); ok {
		return ref, nil
	}
	return Ref{}, fmt.Errorf("region %q: %w", name, region.ErrRegionNotFound)
}

// Lookup finds region name in f, a copy of the control group's state.
func Lookup(f *fsm.FSM, name string) (Ref, bool) {
	info, ok := f.Region(name)
	if !ok {
		return Ref{}, false
	}
	id, _ := f.RegionID(name)
	ttl := uint64(info.EntryTimeToLive) * 1000 // whole seconds: what CreateRegion and AlterRegion accept
	return Ref{Name: name, Kind: info.Kind, ID: id, TTL: ttl}, true
}

// withRegion runs op with the region's reference; when a partition group
// says the region is gone while group 0 (our copy) still had it, it looks
// again with a barrier and, if the region still (or again) exists, retries
// once with the fresh ID.
func withRegion[T any](ctx context.Context, pt *Parts, name string, c region.Consistency, op func(Ref) (T, error)) (T, error) {
	ref, err := pt.Resolve(ctx, name, c)
	if err != nil {
		var zero T
		return zero, err
	}
	out, err := op(ref)
	if ref.Kind != region.Partition || !errors.Is(err, region.ErrRegionNotFound) {
		return out, err
	}
	if c == region.Stale {
		return out, err
	}
	fresh, ferr := pt.refresh(ctx, name)
	if ferr != nil || fresh.ID == ref.ID {
		return out, err
	}
	return op(fresh)
}

// Parallel runs f for every group id concurrently and returns the errors in
// group order (nil where f succeeded).
func Parallel(gids []uint64, f func(i int, gid uint64) error) []error {
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

// FirstError returns the first non-nil error, preferring refusals decided
// by a state machine (they say something about the data) over availability
// errors, so that a multi-group answer is as informative as a single one.
func FirstError(errs []error) error {
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

// ---- reads ----

// getPartitioned reads keys of a partitioned region, in request order.
func (pt *Parts) Get(ctx context.Context, c region.Consistency, ref Ref, keys []string) ([]json.RawMessage, error) {
	out := make([]json.RawMessage, len(keys))
	err := pt.byGroup(ctx, keys, func(gid uint64, idx []int) error {
		sub := make([]string, len(idx))
		for j, i := range idx {
			sub[j] = keys[i]
		}
		resp, err := pt.readPart(ctx, gid, c, readReq{Op: readGet, Region: ref.Name, ID: ref.ID, Keys: sub})
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
	}, FirstError)
	if err != nil {
		return nil, err
	}
	return out, nil
}

// byGroup runs part, in parallel, for each partition group that holds
// some of keys, with the indexes of its keys; the keys of a part refused
// with region.ErrWrongGroup (their bucket moved, or is moving) go again,
// to their owner in the table as it is next (NextPlacement), until no
// part is refused so or ctx ends. combine makes one error of the parts'.
func (pt *Parts) byGroup(ctx context.Context, keys []string, part func(gid uint64, idx []int) error, combine func([]error) error) error {
	t, err := pt.groups.Placement(ctx)
	if err != nil {
		return err
	}
	pending := make([]int, len(keys))
	for i := range pending {
		pending[i] = i
	}
	var settled []error
	for {
		by := map[uint64][]int{}
		for _, i := range pending {
			gid := t.GroupFor(keys[i])
			by[gid] = append(by[gid], i)
		}
		gids := make([]uint64, 0, len(by))
		for gid := range by {
			gids = append(gids, gid)
		}
		slices.Sort(gids)
		errs := Parallel(gids, func(_ int, gid uint64) error { return part(gid, by[gid]) })
		pending = pending[:0]
		for j, err := range errs {
			if errors.Is(err, region.ErrWrongGroup) {
				pending = append(pending, by[gids[j]]...)
			} else {
				settled = append(settled, err)
			}
		}
		if len(pending) == 0 {
			return combine(settled)
		}
		if t, err = NextPlacement(ctx, pt.groups, t); err != nil {
			return combine(append(settled, err))
		}
	}
}

// listPartitioned merges the first limit entries (all when limit < 0) of
// every group in key order.
func (pt *Parts) list(ctx context.Context, c region.Consistency, ref Ref, limit int) ([]region.Entry, error) {
	if limit == 0 {
		return []region.Entry{}, nil
	}
	var parts [][]region.Entry
	err := Settled(ctx, pt.groups, c, func(t partition.Table) error {
		gids := AllGroups(t.P())
		parts = make([][]region.Entry, len(gids))
		return FirstError(Parallel(gids, func(i int, gid uint64) error {
			resp, err := pt.readPart(ctx, gid, c, readReq{Op: readList, Region: ref.Name, ID: ref.ID, Limit: limit})
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
		}))
	})
	if err != nil {
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
func (pt *Parts) keys(ctx context.Context, c region.Consistency, ref Ref) ([]string, error) {
	var parts [][]string
	err := Settled(ctx, pt.groups, c, func(t partition.Table) error {
		gids := AllGroups(t.P())
		parts = make([][]string, len(gids))
		return FirstError(Parallel(gids, func(i int, gid uint64) error {
			resp, err := pt.readPart(ctx, gid, c, readReq{Op: readKeys, Region: ref.Name, ID: ref.ID})
			parts[i] = resp.Keys
			return err
		}))
	})
	if err != nil {
		return nil, err
	}
	keys := slices.Concat(parts...)
	slices.Sort(keys)
	return keys, nil
}

// countPartitioned sums every group's count.
func (pt *Parts) Count(ctx context.Context, c region.Consistency, ref Ref) (int, error) {
	var counts []int
	err := Settled(ctx, pt.groups, c, func(t partition.Table) error {
		gids := AllGroups(t.P())
		counts = make([]int, len(gids))
		return FirstError(Parallel(gids, func(i int, gid uint64) error {
			resp, err := pt.readPart(ctx, gid, c, readReq{Op: readCount, Region: ref.Name, ID: ref.ID})
			counts[i] = resp.Count
			return err
		}))
	})
	if err != nil {
		return 0, err
	}
	total := 0
	for _, n := range counts {
		total += n
	}
	return total, nil
}

// Placements is what Settled and NextPlacement need of the store.
type Placements interface {
	Placement(ctx context.Context) (partition.Table, error)
	ControlBarrier(ctx context.Context) error
}

// NextPlacement is the partition table after a refusal with
// region.ErrWrongGroup (a bucket moving, or moved): once this member's
// copy of the control group has caught up (a barrier), the table if it
// differs from seen, else, after a short wait, again, for up to a second;
// then whatever it is (the caller's next attempt may be refused again: a
// bucket stays sealed while it moves). ctx bounds it.
func NextPlacement(ctx context.Context, groups Placements, seen partition.Table) (partition.Table, error) {
	deadline := time.Now().Add(time.Second)
	for wait := 10 * time.Millisecond; ; wait = min(2*wait, 200*time.Millisecond) {
		if err := groups.ControlBarrier(ctx); err != nil {
			return partition.Table{}, err
		}
		t, err := groups.Placement(ctx)
		if err != nil || !t.Equal(seen) || time.Now().After(deadline) {
			return t, err
		}
		select {
		case <-time.After(wait):
		case <-ctx.Done():
			return partition.Table{}, fmt.Errorf("wait for a moving bucket: %w: %v", region.ErrWrongGroup, ctx.Err())
		}
	}
}

// Settled runs read, a read of every partition group of the table it is
// given, so that no bucket moving between two groups meanwhile is read in
// both or in neither: a read that begins while a move switches owners
// waits for the switch to end, and a linearizable one during which a
// switch began or ended (seen once this member's copy of the control group
// has caught up after it) goes again with the new table. Other changes of
// the table do not count: a move recorded, copying or abandoned changes
// no group's served buckets (a target hides what it imports), and during a
// rebalance the table changes at every step, so a read that waited for an
// unchanged table could wait for the whole rebalance. A stale read takes
// the table as it is.
func Settled(ctx context.Context, groups Placements, c region.Consistency, read func(t partition.Table) error) error {
	t, err := groups.Placement(ctx)
	for err == nil {
		if t.Switching() {
			t, err = NextPlacement(ctx, groups, t)
			continue
		}
		if err = read(t); err != nil || c == region.Stale {
			return err
		}
		if err = groups.ControlBarrier(ctx); err != nil {
			return err
		}
		after, perr := groups.Placement(ctx)
		if perr != nil || (!after.Switching() && sameOwners(t, after)) {
			return perr
		}
		t = after
	}
	return err
}

// sameOwners reports whether every bucket has the same owner in a and b:
// no switch ended between them (a move's switch ends in a new owner).
func sameOwners(a, b partition.Table) bool {
	for i := range partition.Buckets {
		if a.Owner(i) != b.Owner(i) {
			return false
		}
	}
	return true
}

// AllGroups are the partition groups 1..p.
func AllGroups(p int) []uint64 {
	gids := make([]uint64, p)
	for i := range gids {
		gids[i] = uint64(i + 1)
	}
	return gids
}

// ---- writes ----

// applySplit sends one command per partition group holding some of keys,
// built by mk from the indexes of that group's keys, in parallel.
func (pt *Parts) applySplit(ctx context.Context, keys []string, mk func(idx []int) *codec.Command) error {
	return pt.byGroup(ctx, keys, func(gid uint64, idx []int) error {
		_, err := pt.groups.Apply(ctx, gid, mk(idx))
		return err
	}, writeError)
}

// rerouted runs op with the partition table, and again with the table as
// it is next (NextPlacement) for as long as op is refused with
// region.ErrWrongGroup and ctx allows: a single-group operation on a key
// whose bucket moved, or is moving.
func (pt *Parts) rerouted(ctx context.Context, op func(t partition.Table) error) error {
	t, err := pt.groups.Placement(ctx)
	for err == nil {
		if err = op(t); !errors.Is(err, region.ErrWrongGroup) {
			return err
		}
		t, err = NextPlacement(ctx, pt.groups, t)
	}
	return err
}

// precheck validates a multi-group REPLACE, CAS or DELETE against a
// linearizable read of every key before anything is written, so that a
// request that would be refused changes nothing (each group then checks its
// own part again, atomically, when it applies it). It reports the first
// refusal in request order, as a single group would: missing keys first,
// then CAS mismatches.
func (pt *Parts) precheck(ctx context.Context, ref Ref, keys []string, missing error, olds []json.RawMessage) error {
	cur, err := pt.Get(ctx, region.Linearizable, ref, keys)
	if err != nil {
		return err
	}
	for i, v := range cur {
		if v == nil {
			return fmt.Errorf("region %q: key %q: %w", ref.Name, keys[i], missing)
		}
	}
	for i, old := range olds {
		if !jsonequal.Equal(old, cur[i]) {
			return &region.ConflictError{Err: region.ErrCASMismatch, Key: keys[i], Current: cur[i]}
		}
	}
	return nil
}

// spansGroups reports whether keys fall into more than one partition group.
// It needs the partition table, and waits for it as every partitioned
// operation does (partitions): "no" without it would let a multi-group
// write skip the precheck that keeps it all-or-nothing.
func (pt *Parts) spansGroups(ctx context.Context, keys []string) (bool, error) {
	if len(keys) < 2 {
		return false, nil
	}
	t, err := pt.groups.Placement(ctx)
	if err != nil {
		return false, err
	}
	first := t.GroupFor(keys[0])
	for _, k := range keys[1:] {
		if t.GroupFor(k) != first {
			return true, nil
		}
	}
	return false, nil
}

// nextGroup picks the partition group for a generated key among those
// that own a bucket (a group added to the table owns none until buckets
// move to it, and could generate no key): one whose leader is this node
// when there is one (no forwarding), else round robin.
func (pt *Parts) nextGroup(t partition.Table) uint64 {
	var owning []uint64
	for _, gid := range AllGroups(t.P()) {
		if len(t.BucketsOf(gid)) > 0 {
			owning = append(owning, gid)
		}
	}
	start := pt.rr.Add(1)
	for i := range owning {
		gid := owning[(start+uint64(i))%uint64(len(owning))]
		if pt.groups.Leads(gid) {
			return gid
		}
	}
	return owning[start%uint64(len(owning))]
}

// ListPart reads every entry of group gid's part of a partitioned region.
func (pt *Parts) ListGroup(ctx context.Context, gid uint64, c region.Consistency, ref Ref) ([]region.Entry, error) {
	resp, err := pt.readPart(ctx, gid, c, readReq{Op: readList, Region: ref.Name, ID: ref.ID, Limit: -1})
	if err != nil {
		return nil, err
	}
	out := make([]region.Entry, len(resp.Keys))
	for i := range resp.Keys {
		out[i] = region.Entry{Key: resp.Keys[i], Value: resp.Values[i]}
	}
	return out, nil
}
