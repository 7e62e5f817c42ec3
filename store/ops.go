package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/kvnode/kvnode/fsm/codec"
	"github.com/kvnode/kvnode/partition"
	"github.com/kvnode/kvnode/region"
)

// This file is the store's data API, the methods package rest calls. Every
// region lives in the control group for now; the partitioned-regions work
// routes PARTITION regions to partition groups by key.

// Regions lists every region.
func (s *Store) Regions(ctx context.Context, c region.Consistency) ([]region.Info, error) {
	g, err := s.readGroup(ctx, c)
	if err != nil {
		return nil, err
	}
	return g.fsm.Regions(), nil
}

// Region describes one region.
func (s *Store) Region(ctx context.Context, c region.Consistency, name string) (region.Info, error) {
	g, err := s.readGroup(ctx, c)
	if err != nil {
		return region.Info{}, err
	}
	info, ok := g.fsm.Region(name)
	if !ok {
		return region.Info{}, fmt.Errorf("region %q: %w", name, region.ErrRegionNotFound)
	}
	return info, nil
}

// CreateRegion defines a region.
func (s *Store) CreateRegion(ctx context.Context, info region.Info) error {
	if err := region.ValidateName(info.Name); err != nil {
		return err
	}
	if _, err := region.ParseKind(string(info.Kind)); err != nil {
		return err
	}
	_, err := s.apply(ctx, &codec.Command{Op: codec.OpCreateRegion, Region: info.Name, Kind: info.Kind})
	return err
}

// DestroyRegion removes a region and its entries. For a partitioned region
// every partition group first records a tombstone for the region's ID, so
// that no write still in flight with that ID can land after the destroy is
// acknowledged; only then does group 0 forget the definition. If a group is
// unavailable the destroy fails (503) with the definition still in place,
// and can be retried.
func (s *Store) DestroyRegion(ctx context.Context, name string) error {
	ref, err := s.refresh(ctx, name)
	if err != nil {
		return err
	}
	if ref.kind == region.Partition {
		p, err := s.partitions(ctx)
		if err != nil {
			return err
		}
		errs := parallel(allGroups(p), func(_ int, gid uint64) error {
			_, err := s.applyTo(ctx, gid, &codec.Command{Op: codec.OpDestroyRegion, Region: name, RegionID: ref.id})
			return err
		})
		if err := firstError(errs); err != nil {
			return fmt.Errorf("destroy region %q in its partition groups: %w", name, err)
		}
	}
	if _, err = s.apply(ctx, &codec.Command{Op: codec.OpDestroyRegion, Region: name}); err != nil {
		return err
	}
	return s.dropIndexes(ctx, name)
}

// EnsureRegions creates the regions that do not exist yet, retrying until
// ctx ends; a region that exists with another type is logged and kept.
// Every node started with --regions runs it, so it must be idempotent.
func (s *Store) EnsureRegions(ctx context.Context, infos []region.Info) error {
	for _, info := range infos {
		for {
			err := s.CreateRegion(ctx, info)
			if err == nil {
				s.logger.Info("region created", "region", info.Name, "type", info.Kind)
				break
			}
			if errors.Is(err, region.ErrRegionExists) {
				if got, gerr := s.Region(ctx, region.Linearizable, info.Name); gerr == nil && got.Kind != info.Kind {
					s.logger.Warn("region exists with another type; keeping it", "region", info.Name, "type", got.Kind, "wanted", info.Kind)
				}
				break
			}
			if ctx.Err() != nil {
				return fmt.Errorf("create region %s: %w", info.Name, err)
			}
			s.logger.Debug("create region: will retry", "region", info.Name, "error", err)
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
func (s *Store) Get(ctx context.Context, c region.Consistency, name string, keys []string) ([]json.RawMessage, error) {
	return withRegion(ctx, s, name, c, func(ref regionRef) ([]json.RawMessage, error) {
		if ref.kind == region.Partition {
			return s.getPartitioned(ctx, c, ref, keys)
		}
		g, err := s.readGroup(ctx, c)
		if err != nil {
			return nil, err
		}
		return g.fsm.GetMany(name, 0, keys)
	})
}

// List returns up to limit entries in key order (limit < 0: all).
func (s *Store) List(ctx context.Context, c region.Consistency, name string, limit int) ([]region.Entry, error) {
	return withRegion(ctx, s, name, c, func(ref regionRef) ([]region.Entry, error) {
		if ref.kind == region.Partition {
			return s.listPartitioned(ctx, c, ref, limit)
		}
		g, err := s.readGroup(ctx, c)
		if err != nil {
			return nil, err
		}
		return g.fsm.List(name, 0, limit)
	})
}

// Keys returns every key of a region in order.
func (s *Store) Keys(ctx context.Context, c region.Consistency, name string) ([]string, error) {
	return withRegion(ctx, s, name, c, func(ref regionRef) ([]string, error) {
		if ref.kind == region.Partition {
			return s.keysPartitioned(ctx, c, ref)
		}
		g, err := s.readGroup(ctx, c)
		if err != nil {
			return nil, err
		}
		return g.fsm.Keys(name, 0)
	})
}

// Count returns the number of entries of a region.
func (s *Store) Count(ctx context.Context, c region.Consistency, name string) (int, error) {
	return withRegion(ctx, s, name, c, func(ref regionRef) (int, error) {
		if ref.kind == region.Partition {
			return s.countPartitioned(ctx, c, ref)
		}
		g, err := s.readGroup(ctx, c)
		if err != nil {
			return 0, err
		}
		return g.fsm.Count(name, 0)
	})
}

// none is the result of writes that return only an error.
type none struct{}

// Put upserts entries: atomically within a partition group (always, for a
// replicated region).
func (s *Store) Put(ctx context.Context, name string, entries []region.Entry) error {
	_, err := withRegion(ctx, s, name, region.Linearizable, func(ref regionRef) (none, error) {
		if ref.kind != region.Partition {
			_, err := s.apply(ctx, &codec.Command{Op: codec.OpPut, Region: name, Entries: entries})
			return none{}, err
		}
		return none{}, s.applySplit(ctx, entryKeys(entries), func(idx []int) *codec.Command {
			return &codec.Command{Op: codec.OpPut, Region: name, RegionID: ref.id, Entries: pick(entries, idx)}
		})
	})
	return err
}

// PutIfAbsent creates an entry unless its key exists; an empty key is
// generated by a state machine, unique across the cluster.
func (s *Store) PutIfAbsent(ctx context.Context, name string, e region.Entry) (string, error) {
	return withRegion(ctx, s, name, region.Linearizable, func(ref regionRef) (string, error) {
		gid, cmd := controlGroup, &codec.Command{Op: codec.OpPutIfAbsent, Region: name, Entries: []region.Entry{e}}
		if ref.kind == region.Partition {
			p, err := s.partitions(ctx)
			if err != nil {
				return "", err
			}
			if e.Key == "" {
				gid = s.nextGroup(p)
			} else {
				gid = partition.GroupForKey(e.Key, p)
			}
			cmd.RegionID = ref.id
		}
		res, err := s.applyTo(ctx, gid, cmd)
		if res != nil {
			return res.Key, err
		}
		return "", err
	})
}

// Replace overwrites entries that all exist, or changes nothing (see
// DESIGN.md for partitioned regions spanning groups).
func (s *Store) Replace(ctx context.Context, name string, entries []region.Entry) error {
	_, err := withRegion(ctx, s, name, region.Linearizable, func(ref regionRef) (none, error) {
		if ref.kind != region.Partition {
			_, err := s.apply(ctx, &codec.Command{Op: codec.OpReplace, Region: name, Entries: entries})
			return none{}, err
		}
		keys := entryKeys(entries)
		spans, err := s.spansGroups(ctx, keys)
		if err != nil {
			return none{}, err
		}
		if spans {
			if err := s.precheck(ctx, ref, keys, region.ErrKeyAbsent, nil); err != nil {
				return none{}, err
			}
		}
		return none{}, s.applySplit(ctx, keys, func(idx []int) *codec.Command {
			return &codec.Command{Op: codec.OpReplace, Region: name, RegionID: ref.id, Entries: pick(entries, idx)}
		})
	})
	return err
}

// CAS applies compare-and-set pairs that all match, or changes nothing (see
// DESIGN.md for partitioned regions spanning groups).
func (s *Store) CAS(ctx context.Context, name string, pairs []region.CASPair) error {
	_, err := withRegion(ctx, s, name, region.Linearizable, func(ref regionRef) (none, error) {
		if ref.kind != region.Partition {
			_, err := s.apply(ctx, &codec.Command{Op: codec.OpCAS, Region: name, Pairs: pairs})
			return none{}, err
		}
		keys := make([]string, len(pairs))
		olds := make([]json.RawMessage, len(pairs))
		for i, p := range pairs {
			keys[i], olds[i] = p.Key, p.Old
		}
		spans, err := s.spansGroups(ctx, keys)
		if err != nil {
			return none{}, err
		}
		if spans {
			if err := s.precheck(ctx, ref, keys, region.ErrKeyAbsent, olds); err != nil {
				return none{}, err
			}
		}
		return none{}, s.applySplit(ctx, keys, func(idx []int) *codec.Command {
			sub := make([]region.CASPair, len(idx))
			for j, i := range idx {
				sub[j] = pairs[i]
			}
			return &codec.Command{Op: codec.OpCAS, Region: name, RegionID: ref.id, Pairs: sub}
		})
	})
	return err
}

// Delete removes keys that all exist, or nothing (see DESIGN.md for
// partitioned regions spanning groups).
func (s *Store) Delete(ctx context.Context, name string, keys []string) error {
	_, err := withRegion(ctx, s, name, region.Linearizable, func(ref regionRef) (none, error) {
		if ref.kind != region.Partition {
			_, err := s.apply(ctx, &codec.Command{Op: codec.OpDelete, Region: name, Keys: keys})
			return none{}, err
		}
		spans, err := s.spansGroups(ctx, keys)
		if err != nil {
			return none{}, err
		}
		if spans {
			if err := s.precheck(ctx, ref, keys, region.ErrKeyNotFound, nil); err != nil {
				return none{}, err
			}
		}
		return none{}, s.applySplit(ctx, keys, func(idx []int) *codec.Command {
			sub := make([]string, len(idx))
			for j, i := range idx {
				sub[j] = keys[i]
			}
			return &codec.Command{Op: codec.OpDelete, Region: name, RegionID: ref.id, Keys: sub}
		})
	})
	return err
}

// Clear removes every entry of a replicated region. Group 0 refuses it for
// a partitioned region (405): no single Raft group can clear it atomically.
func (s *Store) Clear(ctx context.Context, name string) error {
	_, err := s.apply(ctx, &codec.Command{Op: codec.OpClear, Region: name})
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

// Ready reports whether this node can serve linearizable requests now: it
// is part of the control group, which has a leader, its copy has caught
// up with the leader's commit index (a read barrier), the partition table
// is written, and every partition group the table places here is open and
// has a leader. It is what a readiness probe asks; liveness is /livez.
func (s *Store) Ready(ctx context.Context) error {
	g0 := s.control()
	if g0 == nil {
		return errClosed
	}
	for _, g := range s.localGroups() {
		if err := g.halted(); err != nil {
			return fmt.Errorf("%w: %w", region.ErrNoLeader, err)
		}
	}
	if !g0.hasState() {
		return fmt.Errorf("%w: this node has not joined a cluster yet", region.ErrNoLeader)
	}
	if id, _ := g0.leader(); id == "" {
		return fmt.Errorf("%w: the control group has no leader", region.ErrNoLeader)
	}
	if _, err := s.readGroup(ctx, region.Linearizable); err != nil {
		return err
	}
	// Every partition group the table places here must be open and led:
	// a node that reported ready before its groups existed turned unready
	// again while they bootstrapped (a readiness probe flapping at start).
	t, _, ok := s.table()
	if !ok {
		return fmt.Errorf("%w: the partition table is not written yet", region.ErrNoLeader)
	}
	for i, pg := range t.Groups {
		gid := uint64(i) + 1
		if !slices.Contains(pg.Members, s.name) {
			continue
		}
		g := s.localFor(gid)
		if g == nil || !g.hasState() {
			return fmt.Errorf("%w: partition group %d, placed here, is not open yet", region.ErrNoLeader, gid)
		}
		if id, _ := g.leader(); id == "" {
			return fmt.Errorf("%w: partition group %d, hosted here, has no leader yet", region.ErrNoLeader, gid)
		}
	}
	return nil
}
