package regions

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/kvnode/kvnode/fsm/codec"
	"github.com/kvnode/kvnode/partition"
	"github.com/kvnode/kvnode/region"
)

// This file is the data API, the methods package rest calls: a
// REPLICATE region lives in the control group, a PARTITION region's
// entries in partition groups by key (route.go).

// Regions lists every region.
func (r *API) Regions(ctx context.Context, c region.Consistency) ([]region.Info, error) {
	f, err := r.groups.Control(ctx, c)
	if err != nil {
		return nil, err
	}
	return f.Regions(), nil
}

// Region describes one region.
func (r *API) Region(ctx context.Context, c region.Consistency, name string) (region.Info, error) {
	f, err := r.groups.Control(ctx, c)
	if err != nil {
		return region.Info{}, err
	}
	info, ok := f.Region(name)
	if !ok {
		return region.Info{}, fmt.Errorf("region %q: %w", name, region.ErrRegionNotFound)
	}
	return info, nil
}

// CreateRegion defines a region, with its default entry time-to-live
// (info.EntryTimeToLive, seconds; 0: entries never expire).
func (r *API) CreateRegion(ctx context.Context, info region.Info) error {
	if err := region.ValidateName(info.Name); err != nil {
		return err
	}
	if _, err := region.ParseKind(string(info.Kind)); err != nil {
		return err
	}
	ttl, err := regionTTL(time.Duration(info.EntryTimeToLive) * time.Second)
	if err != nil {
		return err
	}
	_, err = r.groups.Apply(ctx, controlGroup, &codec.Command{Op: codec.OpCreateRegion, Region: info.Name, Kind: info.Kind, TTL: ttl})
	return err
}

// AlterRegion changes a region's default entry time-to-live (whole
// seconds, as region.Info shows it; 0: never). It applies to writes after
// the change: entries already written keep the deadline they got.
func (r *API) AlterRegion(ctx context.Context, name string, ttl time.Duration) error {
	if ttl%time.Second != 0 {
		return fmt.Errorf("%w: a region's entry time-to-live is whole seconds, not %v", region.ErrInvalid, ttl)
	}
	ms, err := regionTTL(ttl)
	if err != nil {
		return err
	}
	_, err = r.groups.Apply(ctx, controlGroup, &codec.Command{Op: codec.OpAlterRegion, Region: name, TTL: ms})
	return err
}

// regionTTL is d in milliseconds for a command, refusing what is negative
// or beyond region.MaxTTL and rounding a positive d under a millisecond up rather
// than to 0, which would mean never.
func regionTTL(d time.Duration) (uint64, error) {
	if d < 0 || d > region.MaxTTL {
		return 0, fmt.Errorf("%w: time-to-live %v is not between 0 and %v", region.ErrInvalid, d, region.MaxTTL)
	}
	ms := uint64(d.Milliseconds())
	if ms == 0 && d > 0 {
		ms = 1
	}
	return ms, nil
}

// writeTTL is the time-to-live, in milliseconds, of a write to ref's region:
// the write's own when it has one, else the region's default.
func writeTTL(ttl region.TTL, ref Ref) (uint64, error) {
	if !ttl.Set {
		return ref.TTL, nil
	}
	return regionTTL(ttl.Duration)
}

// DestroyRegion removes a region and its entries. For a partitioned region
// every partition group first records a tombstone for the region's ID, so
// that no write still in flight with that ID can land after the destroy is
// acknowledged; only then does group 0 forget the definition. If a group is
// unavailable the destroy fails (503) with the definition still in place,
// and can be retried.
func (r *API) DestroyRegion(ctx context.Context, name string) error {
	ref, err := r.parts.refresh(ctx, name)
	if err != nil {
		return err
	}
	if ref.Kind == region.Partition {
		t, err := r.groups.Placement(ctx)
		if err != nil {
			return err
		}
		errs := Parallel(AllGroups(t.P()), func(_ int, gid uint64) error {
			_, err := r.groups.Apply(ctx, gid, &codec.Command{Op: codec.OpDestroyRegion, Region: name, RegionID: ref.ID})
			return err
		})
		if err := FirstError(errs); err != nil {
			return fmt.Errorf("destroy region %q in its partition groups: %w", name, err)
		}
	}
	if _, err = r.groups.Apply(ctx, controlGroup, &codec.Command{Op: codec.OpDestroyRegion, Region: name}); err != nil {
		return err
	}
	return r.dropIndexes(ctx, name)
}

// EnsureRegions creates the regions that do not exist yet, retrying until
// ctx ends; a region that exists with another type is logged and kept.
// Every node started with --regions runs it, so it must be idempotent.
func (r *API) EnsureRegions(ctx context.Context, infos []region.Info) error {
	for _, info := range infos {
		for {
			err := r.CreateRegion(ctx, info)
			if err == nil {
				r.logger.Info("region created", "region", info.Name, "type", info.Kind)
				break
			}
			if errors.Is(err, region.ErrRegionExists) {
				if got, gerr := r.Region(ctx, region.Linearizable, info.Name); gerr == nil && got.Kind != info.Kind {
					r.logger.Warn("region exists with another type; keeping it", "region", info.Name, "type", got.Kind, "wanted", info.Kind)
				}
				break
			}
			if ctx.Err() != nil {
				return fmt.Errorf("create region %s: %w", info.Name, err)
			}
			r.logger.Debug("create region: will retry", "region", info.Name, "error", err)
			select {
			case <-ctx.Done():
				return fmt.Errorf("create region %s: %w", info.Name, err)
			case <-time.After(500 * time.Millisecond):
			}
		}
	}
	return nil
}

// Get returns the values of keys, nil where a key is missing.
func (r *API) Get(ctx context.Context, c region.Consistency, name string, keys []string) ([]json.RawMessage, error) {
	return withRegion(ctx, r.parts, name, c, func(ref Ref) ([]json.RawMessage, error) {
		if ref.Kind == region.Partition {
			return r.parts.Get(ctx, c, ref, keys)
		}
		f, err := r.groups.Control(ctx, c)
		if err != nil {
			return nil, err
		}
		return f.GetMany(name, 0, keys)
	})
}

// List returns up to limit entries in key order (limit < 0: all).
func (r *API) List(ctx context.Context, c region.Consistency, name string, limit int) ([]region.Entry, error) {
	return withRegion(ctx, r.parts, name, c, func(ref Ref) ([]region.Entry, error) {
		if ref.Kind == region.Partition {
			return r.parts.list(ctx, c, ref, limit)
		}
		f, err := r.groups.Control(ctx, c)
		if err != nil {
			return nil, err
		}
		return f.List(name, 0, limit)
	})
}

// Keys returns every key of a region in order.
func (r *API) Keys(ctx context.Context, c region.Consistency, name string) ([]string, error) {
	return withRegion(ctx, r.parts, name, c, func(ref Ref) ([]string, error) {
		if ref.Kind == region.Partition {
			return r.parts.keys(ctx, c, ref)
		}
		f, err := r.groups.Control(ctx, c)
		if err != nil {
			return nil, err
		}
		return f.Keys(name, 0)
	})
}

// Count returns the number of entries of a region.
func (r *API) Count(ctx context.Context, c region.Consistency, name string) (int, error) {
	return withRegion(ctx, r.parts, name, c, func(ref Ref) (int, error) {
		if ref.Kind == region.Partition {
			return r.parts.Count(ctx, c, ref)
		}
		f, err := r.groups.Control(ctx, c)
		if err != nil {
			return 0, err
		}
		return f.Count(name, 0)
	})
}

// none is the result of writes that return only an error.
type none struct{}

// Put upserts entries: atomically within a partition group (always, for a
// replicated region). Every entry gets the time-to-live ttl from this write
// (see region.TTL).
func (r *API) Put(ctx context.Context, name string, entries []region.Entry, ttl region.TTL) error {
	_, err := withRegion(ctx, r.parts, name, region.Linearizable, func(ref Ref) (none, error) {
		ms, err := writeTTL(ttl, ref)
		if err != nil {
			return none{}, err
		}
		if ref.Kind != region.Partition {
			_, err := r.groups.Apply(ctx, controlGroup, &codec.Command{Op: codec.OpPut, Region: name, Entries: entries, TTL: ms})
			return none{}, err
		}
		return none{}, r.parts.applySplit(ctx, entryKeys(entries), func(idx []int) *codec.Command {
			return &codec.Command{Op: codec.OpPut, Region: name, RegionID: ref.ID, Entries: pick(entries, idx), TTL: ms}
		})
	})
	return err
}

// PutIfAbsent creates an entry unless its key exists (an expired entry
// does not); an empty key is generated by a state machine, unique across
// the cluster. The entry gets the time-to-live ttl.
func (r *API) PutIfAbsent(ctx context.Context, name string, e region.Entry, ttl region.TTL) (string, error) {
	return withRegion(ctx, r.parts, name, region.Linearizable, func(ref Ref) (string, error) {
		ms, err := writeTTL(ttl, ref)
		if err != nil {
			return "", err
		}
		cmd := &codec.Command{Op: codec.OpPutIfAbsent, Region: name, Entries: []region.Entry{e}, TTL: ms}
		if ref.Kind != region.Partition {
			res, err := r.groups.Apply(ctx, controlGroup, cmd)
			if res != nil {
				return res.Key, err
			}
			return "", err
		}
		cmd.RegionID = ref.ID
		var res *codec.Result
		err = r.parts.rerouted(ctx, func(t partition.Table) error {
			gid := t.GroupFor(e.Key)
			if e.Key == "" {
				gid = r.parts.nextGroup(t)
			}
			var err error
			res, err = r.groups.Apply(ctx, gid, cmd)
			return err
		})
		if res != nil {
			return res.Key, err
		}
		return "", err
	})
}

// Replace overwrites entries that all exist, or changes nothing (see
// DESIGN.md for partitioned regions spanning groups); each gets the
// time-to-live ttl from this write.
func (r *API) Replace(ctx context.Context, name string, entries []region.Entry, ttl region.TTL) error {
	_, err := withRegion(ctx, r.parts, name, region.Linearizable, func(ref Ref) (none, error) {
		ms, err := writeTTL(ttl, ref)
		if err != nil {
			return none{}, err
		}
		if ref.Kind != region.Partition {
			_, err := r.groups.Apply(ctx, controlGroup, &codec.Command{Op: codec.OpReplace, Region: name, Entries: entries, TTL: ms})
			return none{}, err
		}
		keys := entryKeys(entries)
		spans, err := r.parts.spansGroups(ctx, keys)
		if err != nil {
			return none{}, err
		}
		if spans {
			if err := r.parts.precheck(ctx, ref, keys, region.ErrKeyAbsent, nil); err != nil {
				return none{}, err
			}
		}
		return none{}, r.parts.applySplit(ctx, keys, func(idx []int) *codec.Command {
			return &codec.Command{Op: codec.OpReplace, Region: name, RegionID: ref.ID, Entries: pick(entries, idx), TTL: ms}
		})
	})
	return err
}

// CAS applies compare-and-set pairs that all match, or changes nothing (see
// DESIGN.md for partitioned regions spanning groups); each new value gets
// the time-to-live ttl from this write.
func (r *API) CAS(ctx context.Context, name string, pairs []region.CASPair, ttl region.TTL) error {
	_, err := withRegion(ctx, r.parts, name, region.Linearizable, func(ref Ref) (none, error) {
		ms, err := writeTTL(ttl, ref)
		if err != nil {
			return none{}, err
		}
		if ref.Kind != region.Partition {
			_, err := r.groups.Apply(ctx, controlGroup, &codec.Command{Op: codec.OpCAS, Region: name, Pairs: pairs, TTL: ms})
			return none{}, err
		}
		keys := make([]string, len(pairs))
		olds := make([]json.RawMessage, len(pairs))
		for i, p := range pairs {
			keys[i], olds[i] = p.Key, p.Old
		}
		spans, err := r.parts.spansGroups(ctx, keys)
		if err != nil {
			return none{}, err
		}
		if spans {
			if err := r.parts.precheck(ctx, ref, keys, region.ErrKeyAbsent, olds); err != nil {
				return none{}, err
			}
		}
		return none{}, r.parts.applySplit(ctx, keys, func(idx []int) *codec.Command {
			sub := make([]region.CASPair, len(idx))
			for j, i := range idx {
				sub[j] = pairs[i]
			}
			return &codec.Command{Op: codec.OpCAS, Region: name, RegionID: ref.ID, Pairs: sub, TTL: ms}
		})
	})
	return err
}

// Delete removes keys that all exist, or nothing (see DESIGN.md for
// partitioned regions spanning groups).
func (r *API) Delete(ctx context.Context, name string, keys []string) error {
	_, err := withRegion(ctx, r.parts, name, region.Linearizable, func(ref Ref) (none, error) {
		if ref.Kind != region.Partition {
			_, err := r.groups.Apply(ctx, controlGroup, &codec.Command{Op: codec.OpDelete, Region: name, Keys: keys})
			return none{}, err
		}
		spans, err := r.parts.spansGroups(ctx, keys)
		if err != nil {
			return none{}, err
		}
		if spans {
			if err := r.parts.precheck(ctx, ref, keys, region.ErrKeyNotFound, nil); err != nil {
				return none{}, err
			}
		}
		return none{}, r.parts.applySplit(ctx, keys, func(idx []int) *codec.Command {
			sub := make([]string, len(idx))
			for j, i := range idx {
				sub[j] = keys[i]
			}
			return &codec.Command{Op: codec.OpDelete, Region: name, RegionID: ref.ID, Keys: sub}
		})
	})
	return err
}

// Clear removes every entry of a replicated region. Group 0 refuses it for
// a partitioned region (405): no single Raft group can clear it atomically.
func (r *API) Clear(ctx context.Context, name string) error {
	_, err := r.groups.Apply(ctx, controlGroup, &codec.Command{Op: codec.OpClear, Region: name})
	return err
}

func entryKeys(entries []region.Entry) []string {
	keys := make([]string, len(entries))
	for i, e := range entries {
		keys[i] = e.Key
	}
	return keys
}

func pick(entries []region.Entry, idx []int) []region.Entry {
	out := make([]region.Entry, len(idx))
	for j, i := range idx {
		out[j] = entries[i]
	}
	return out
}
