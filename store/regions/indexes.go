package regions

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/kvnode/kvnode/fsm/codec"
	"github.com/kvnode/kvnode/oql"
	"github.com/kvnode/kvnode/region"
	"github.com/kvnode/kvnode/store/catalog"
)

// Secondary indexes. Their definitions live in the control group's
// metadata (key layout: catalog.IndexKey), so every member sees the same
// set; every replica of a region (the control group for a replicated
// region, each partition group's replicas for a partitioned one) builds
// and maintains its own index from its entries (package fsm), so an index
// needs no replication of its own. The store installs the current
// definitions into its local state machines on every round of its
// partition loop and before every query. A state machine builds an index
// over a large region in the background, without stopping writes
// (package fsm/indexset); until it is installed, queries on that replica scan
// the region, which gives the same rows, only slower.

// CreateIndex defines an index on a region: 201 semantics. The region
// must exist and be the one the FROM clause names; an existing name is
// region.ErrKeyExists (as a *region.ConflictError with the definition).
// Like Geode's createIndex it returns once the index is built, here on
// this member's replicas (Groups.AwaitIndexes).
func (r *API) CreateIndex(ctx context.Context, regionName string, def region.IndexInfo) error {
	if err := region.ValidateKey(def.Name); err != nil || strings.Contains(def.Name, "/") {
		return fmt.Errorf("%w: index name %q: it must be a non-empty name without '/' or ','", region.ErrInvalid, def.Name)
	}
	if _, err := r.parts.refresh(ctx, regionName); err != nil {
		return err
	}
	path, err := indexPathFor(regionName, def)
	if err != nil {
		return err
	}
	def.Region = regionName
	def.Path = path
	raw, err := json.Marshal(def)
	if err != nil {
		return fmt.Errorf("encode index definition: %w", err)
	}
	key := catalog.IndexKey(regionName, def.Name)
	for {
		res, err := r.groups.Apply(ctx, controlGroup, &codec.Command{Op: codec.OpSetMeta, MetaKey: key, MetaValue: raw})
		if err == nil {
			r.groups.AwaitIndexes(ctx, res.Version)
			return nil
		}
		if !errors.Is(err, region.ErrVersionConflict) {
			return err
		}
		if r.conflictHook != nil {
			r.conflictHook()
		}
		// The conflict was decided by the leader; this member may not have
		// applied the definition yet, the definition may have been deleted
		// since, and the store may be closing: read it linearizably.
		cur, _, ok, err := r.groups.Meta(ctx, region.Linearizable, key)
		if err != nil {
			return fmt.Errorf("index %q on region %q exists; reading its definition: %w", def.Name, regionName, err)
		}
		if ok {
			return &region.ConflictError{Err: region.ErrKeyExists, Key: def.Name, Current: cur}
		}
		// Deleted between the conflict and the read: the name is free, so
		// the create is tried again.
	}
}

// indexPathFor checks a definition against the region it is created on.
func indexPathFor(regionName string, def region.IndexInfo) ([]string, error) {
	if def.Expression == "" || def.From == "" {
		return nil, fmt.Errorf("%w: an index needs \"expression\" (e.g. o.customerId) and \"from\" (e.g. /%s o)", region.ErrInvalid, regionName)
	}
	path, fields, err := oql.IndexPath(def.Expression, def.From)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", region.ErrInvalid, err)
	}
	if path != "/"+regionName {
		return nil, fmt.Errorf("%w: the index's FROM clause names %s, but it is created on region %s", region.ErrInvalid, path, regionName)
	}
	return fields, nil
}

// Indexes lists a region's indexes, by name.
func (r *API) Indexes(ctx context.Context, c region.Consistency, regionName string) ([]region.IndexInfo, error) {
	f, err := r.groups.Control(ctx, c)
	if err != nil {
		return nil, err
	}
	if _, ok := Lookup(f, regionName); !ok {
		return nil, fmt.Errorf("region %q: %w", regionName, region.ErrRegionNotFound)
	}
	var out []region.IndexInfo
	for _, e := range f.MetaList(catalog.RegionIndexPrefix(regionName)) {
		def, err := catalog.DecodeIndex(catalog.Entry{Key: e.Key, Value: e.Value, Version: e.Version})
		if err != nil {
			return nil, err
		}
		out = append(out, def)
	}
	return out, nil
}

// DeleteIndex removes an index definition; region.ErrKeyNotFound if none.
func (r *API) DeleteIndex(ctx context.Context, regionName, name string) error {
	if _, err := r.parts.refresh(ctx, regionName); err != nil {
		return err
	}
	return catalog.Change(ctx, r.groups, catalog.IndexKey(regionName, name), nil, fmt.Sprintf("index %q on region %q", name, regionName))
}

// dropIndexes deletes every index definition of a destroyed region, so a
// region created later under the same name starts without them.
func (r *API) dropIndexes(ctx context.Context, regionName string) error {
	f, err := r.groups.ControlState()
	if err != nil {
		return err
	}
	for _, e := range f.MetaList(catalog.RegionIndexPrefix(regionName)) {
		_, err := r.groups.Apply(ctx, controlGroup, &codec.Command{Op: codec.OpSetMeta, MetaKey: e.Key, MetaVersion: e.Version})
		if err != nil && !errors.Is(err, region.ErrVersionConflict) && !errors.Is(err, region.ErrKeyNotFound) {
			return fmt.Errorf("drop index %s: %w", e.Key, err)
		}
	}
	return nil
}
