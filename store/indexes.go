package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"strconv"
	"strings"

	"github.com/kvnode/kvnode/fsm/codec"
	"github.com/kvnode/kvnode/index"
	"github.com/kvnode/kvnode/oql"
	"github.com/kvnode/kvnode/region"
	"github.com/kvnode/kvnode/store/catalog"
)

// Secondary indexes. Their definitions live in group 0's metadata under
// index/{region}/{name}, so every member sees the same set; every replica
// of a region (group 0 for a replicated region, each partition group's
// replicas for a partitioned one) builds and maintains its own index from
// its entries (package fsm), so an index needs no replication of its own.
// Each node installs the current definitions into its local state machines
// on every round of its partition loop and before every query. A state
// machine builds an index over a large region in the background, without
// stopping writes (fsm/indexset); until it is installed, queries on
// that replica scan the region, which gives the same rows, only slower.

// indexKeyPrefix is where index definitions live among group 0's metadata.
const indexKeyPrefix = "index/"

func indexKey(regionName, name string) string {
	return indexKeyPrefix + regionName + "/" + name
}

// CreateIndex defines an index on a region: 201 semantics. The region
// must exist and be the one the FROM clause names; an existing name is
// region.ErrKeyExists (as a *region.ConflictError with the definition).
// Like Geode's createIndex it returns once the index is built, here on
// this node's replicas (awaitIndexBuilds).
func (s *Store) CreateIndex(ctx context.Context, regionName string, def region.IndexInfo) error {
	if err := region.ValidateKey(def.Name); err != nil || strings.Contains(def.Name, "/") {
		return fmt.Errorf("%w: index name %q: it must be a non-empty name without '/' or ','", region.ErrInvalid, def.Name)
	}
	if _, err := s.refresh(ctx, regionName); err != nil {
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
	key := indexKey(regionName, def.Name)
	for {
		res, err := s.apply(ctx, &codec.Command{Op: codec.OpSetMeta, MetaKey: key, MetaValue: raw})
		if err == nil {
			s.awaitIndexBuilds(ctx, res.Version)
			return nil
		}
		if !errors.Is(err, region.ErrVersionConflict) {
			return err
		}
		if s.conflictHook != nil {
			s.conflictHook()
		}
		// The conflict was decided by the leader; this node may not have
		// applied the definition yet, the definition may have been deleted
		// since, and the store may be closing: read it linearizably.
		cur, _, ok, err := s.Meta(ctx, region.Linearizable, key)
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

// awaitIndexBuilds waits, as long as ctx allows, until this node's
// replicas have built the indexes defined as of group 0's log index
// version: then queries on this node use a new index as soon as its
// creation is acknowledged, as they did when indexes were built in the
// query's path. Other members build theirs from their partition loops and
// scan meanwhile. The definition is committed whatever happens here, so a
// wait cut short is not an error (the builds go on).
func (s *Store) awaitIndexBuilds(ctx context.Context, version uint64) {
	g0 := s.control()
	if g0 == nil || g0.fsm.WaitApplied(ctx, version) != nil {
		return
	}
	s.syncIndexes()
	for _, g := range s.localGroups() {
		if g.fsm.WaitIndexes(ctx) != nil {
			return
		}
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
func (s *Store) Indexes(ctx context.Context, c region.Consistency, regionName string) ([]region.IndexInfo, error) {
	g0, err := s.readGroup(ctx, c)
	if err != nil {
		return nil, err
	}
	if _, ok := lookup(g0, regionName); !ok {
		return nil, fmt.Errorf("region %q: %w", regionName, region.ErrRegionNotFound)
	}
	var out []region.IndexInfo
	for _, e := range g0.fsm.MetaList(indexKeyPrefix + regionName + "/") {
		var def region.IndexInfo
		if err := json.Unmarshal(e.Value, &def); err != nil {
			return nil, fmt.Errorf("index definition %s: %w", e.Key, err)
		}
		out = append(out, def)
	}
	return out, nil
}

// DeleteIndex removes an index definition; region.ErrKeyNotFound if none.
func (s *Store) DeleteIndex(ctx context.Context, regionName, name string) error {
	if _, err := s.refresh(ctx, regionName); err != nil {
		return err
	}
	return catalog.Change(ctx, ownMeta{s}, indexKey(regionName, name), nil, fmt.Sprintf("index %q on region %q", name, regionName))
}

// dropIndexes deletes every index definition of a destroyed region, so a
// region created later under the same name starts without them.
func (s *Store) dropIndexes(ctx context.Context, regionName string) error {
	g0 := s.control()
	if g0 == nil {
		return errClosed
	}
	for _, e := range g0.fsm.MetaList(indexKeyPrefix + regionName + "/") {
		_, err := s.apply(ctx, &codec.Command{Op: codec.OpSetMeta, MetaKey: e.Key, MetaVersion: e.Version})
		if err != nil && !errors.Is(err, region.ErrVersionConflict) && !errors.Is(err, region.ErrKeyNotFound) {
			return fmt.Errorf("drop index %s: %w", e.Key, err)
		}
	}
	return nil
}

// syncIndexes installs the current index definitions into every local
// state machine whose set is older. The set's version is a hash of the
// definitions' keys and versions, so any create or delete changes it.
// SetIndexes takes the definitions and returns: a state machine reports
// the new version at once, while large indexes still build in the
// background, so later calls neither wait for nor restart those builds.
func (s *Store) syncIndexes() {
	g0 := s.control()
	if g0 == nil {
		return
	}
	entries := g0.fsm.MetaList(indexKeyPrefix)
	h := fnv.New64a()
	defs := map[string][]index.Def{}
	for _, e := range entries {
		h.Write([]byte(e.Key + "@" + strconv.FormatUint(e.Version, 10) + ";"))
		var def region.IndexInfo
		if err := json.Unmarshal(e.Value, &def); err != nil {
			s.logger.Warn("index definition does not decode", "key", e.Key, "error", err)
			continue
		}
		defs[def.Region] = append(defs[def.Region], index.Def{Name: def.Name, Path: def.Path})
	}
	version := h.Sum64() | 1 // never 0, the version of "nothing set yet"
	for _, g := range s.localGroups() {
		if g.fsm.IndexVersion() != version {
			g.fsm.SetIndexes(version, defs)
		}
	}
}

// Indexes and ScanIndex make a querySource an oql.IndexedSource: the
// planner then serves indexable predicates of a replicated region from
// group 0's indexes (a partitioned region's come through shardSource).
func (qs *querySource) Indexes(path string) []index.Def {
	ref, err := qs.ref(path)
	if err != nil || ref.kind == region.Partition {
		return nil
	}
	return qs.indexDefs(ref)
}

// indexDefs are the index definitions of a region, as group 0 has them.
func (qs *querySource) indexDefs(ref regionRef) []index.Def {
	var out []index.Def
	for _, e := range qs.g0.fsm.MetaList(indexKeyPrefix + ref.name + "/") {
		var def region.IndexInfo
		if json.Unmarshal(e.Value, &def) == nil {
			out = append(out, index.Def{Name: def.Name, Path: def.Path})
		}
	}
	return out
}

func (qs *querySource) ScanIndex(_ context.Context, path, name string, ranges []index.Range, fn func(key string, value []byte) bool) (bool, error) {
	ref, err := qs.ref(path)
	if err != nil || ref.kind == region.Partition {
		return false, err
	}
	return qs.g0.fsm.IndexScan(ref.name, 0, name, ranges, func(k string, v json.RawMessage) bool { return fn(k, v) })
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
	if ref.kind != region.Partition {
		return ss.qs.ScanIndex(ctx, path, name, ranges, fn)
	}
	return ss.f.IndexScan(ref.name, ref.id, name, ranges, func(k string, v json.RawMessage) bool { return fn(k, v) })
}
