package fsm

import (
	"bytes"
	"fmt"

	"github.com/kvnode/kvnode/fsm/codec"
	"github.com/kvnode/kvnode/fsm/jsonequal"
	"github.com/kvnode/kvnode/region"
)

// The operations, one method per Op, each deciding a command against the
// state. They run under the FSM's write lock and must be deterministic:
// everything they decide depends only on the state and the command, never on
// clocks, randomness or map iteration order. A refused command returns its
// reason in Result.Err and leaves the state exactly as it was, so each
// method checks everything before it changes anything.

// handler applies one kind of command.
// index is the log index of the entry being applied.
type handler func(s *state, c *codec.Command, index uint64) *codec.Result

// handlers is the dispatch table from Op to operation, indexed by Op.
type handlers [codec.MaxOp + 1]handler

func newHandlers() *handlers {
	return &handlers{
		codec.OpCreateRegion:  (*state).createRegion,
		codec.OpDestroyRegion: (*state).destroyRegion,
		codec.OpPut:           gated((*state).put),
		codec.OpPutIfAbsent:   gated((*state).putIfAbsent),
		codec.OpReplace:       gated((*state).replace),
		codec.OpCAS:           gated((*state).cas),
		codec.OpDelete:        gated((*state).delete),
		codec.OpClear:         (*state).clear,
		codec.OpClearPart:     (*state).clearPart,
		codec.OpDeleteIf:      gated((*state).deleteIf),
		codec.OpSetMeta:       (*state).setMeta,
		codec.OpBatch:         nil, // FSM.applyBatchCommand
		codec.OpStage:         (*state).stageChunk,
		codec.OpCommitStaged:  nil, // FSM.commitStaged
		codec.OpDropStaged:    (*state).dropStaged,
		codec.OpAlterRegion:   (*state).alterRegion,
		codec.OpExpire:        gated((*state).expire),
		codec.OpBucket:        applyBucket,
		codec.OpBucketImport:  applyBucketImport,
	}
}

// refuse is the Result of a refused command.
func refuse(err error) *codec.Result { return &codec.Result{Err: err} }

// invalid refuses a command that is well-formed on the wire but makes no
// sense (the store validates requests, so this means a caller bug).
func invalid(c *codec.Command, format string, args ...any) *codec.Result {
	return refuse(fmt.Errorf("%v on region %q: %w: %s", c.Op, c.Region, region.ErrInvalid, fmt.Sprintf(format, args...)))
}

func (s *state) createRegion(c *codec.Command, index uint64) *codec.Result {
	if c.Region == "" {
		return invalid(c, "the region name is empty")
	}
	if c.RegionID != 0 {
		return invalid(c, "regions are created in group 0, not with a region id")
	}
	if !knownKind(c.Kind) {
		return invalid(c, "region type %q is neither %s nor %s", c.Kind, region.Replicate, region.Partition)
	}
	if _, ok := s.regions[c.Region]; ok {
		return refuse(fmt.Errorf("region %q: %w", c.Region, region.ErrRegionExists))
	}
	r := newRegionState(c.Kind, index)
	r.ttl = c.TTL
	r.indexes.Empty(s.indexDefs[c.Region])
	s.regions[c.Region] = r
	return &codec.Result{}
}

// destroyRegion removes a region. With a region ID (a partition group) it
// records a tombstone and always succeeds: it is idempotent garbage
// collection, and the tombstone keeps late commands from resurrecting it.
func (s *state) destroyRegion(c *codec.Command, _ uint64) *codec.Result {
	if c.RegionID != 0 {
		if c.RegionID > s.tombstones[c.Region] {
			s.tombstones[c.Region] = c.RegionID
		}
		if r, ok := s.regions[c.Region]; ok && r.id <= c.RegionID {
			r.indexes.Abandon()
			delete(s.regions, c.Region)
		}
		return &codec.Result{}
	}
	r, err := s.region(c.Region)
	if err != nil {
		return refuse(err)
	}
	r.indexes.Abandon()
	delete(s.regions, c.Region)
	return &codec.Result{}
}

// checkEntries refuses an entry list that is empty or holds an empty key
// (unless emptyKeyOK) or an empty value.
func checkEntries(c *codec.Command, emptyKeyOK bool) *codec.Result {
	if len(c.Entries) == 0 {
		return invalid(c, "the command has no entries")
	}
	for i, e := range c.Entries {
		if e.Key == "" && !emptyKeyOK {
			return invalid(c, "entry %d has an empty key", i)
		}
		if len(e.Value) == 0 {
			return invalid(c, "entry %d (key %q) has an empty value", i, e.Key)
		}
	}
	return nil
}

// put upserts every entry in order, so a later duplicate key wins.
func (s *state) put(c *codec.Command, _ uint64) *codec.Result {
	if res := checkEntries(c, false); res != nil {
		return res
	}
	r, err := s.target(c.Region, c.RegionID)
	if err != nil {
		return refuse(err)
	}
	for _, e := range c.Entries {
		s.write(r, c.Region, e.Key, e.Value, s.deadline(c))
	}
	return &codec.Result{}
}

// putIfAbsent writes one entry unless its key exists; an empty key asks for
// a generated one.
func (s *state) putIfAbsent(c *codec.Command, _ uint64) *codec.Result {
	if res := checkEntries(c, true); res != nil {
		return res
	}
	if len(c.Entries) != 1 {
		return invalid(c, "put-if-absent takes exactly one entry, got %d", len(c.Entries))
	}
	r, err := s.target(c.Region, c.RegionID)
	if err != nil {
		return refuse(err)
	}
	e := c.Entries[0]
	if e.Key == "" {
		e.Key = s.nextKey(r)
	} else if cur, ok := r.live(e.Key, s.now); ok {
		return &codec.Result{Key: e.Key, Err: &region.ConflictError{Err: region.ErrKeyExists, Key: e.Key, Current: cur}}
	}
	s.write(r, c.Region, e.Key, e.Value, s.deadline(c))
	return &codec.Result{Key: e.Key}
}

// replace overwrites entries only if every key exists.
func (s *state) replace(c *codec.Command, _ uint64) *codec.Result {
	if res := checkEntries(c, false); res != nil {
		return res
	}
	r, err := s.target(c.Region, c.RegionID)
	if err != nil {
		return refuse(err)
	}
	for _, e := range c.Entries {
		if _, ok := r.live(e.Key, s.now); !ok {
			return refuse(fmt.Errorf("region %q: key %q: %w", c.Region, e.Key, region.ErrKeyAbsent))
		}
	}
	for _, e := range c.Entries {
		s.write(r, c.Region, e.Key, e.Value, s.deadline(c))
	}
	return &codec.Result{}
}

// cas writes every New only if every key exists and every Old equals the
// current value (jsonequal.Equal). Missing keys are reported before mismatches;
// all checks see the state before the command, and a later duplicate key's
// New wins.
func (s *state) cas(c *codec.Command, _ uint64) *codec.Result {
	if len(c.Pairs) == 0 {
		return invalid(c, "the command has no compare-and-set pairs")
	}
	for i, p := range c.Pairs {
		if p.Key == "" {
			return invalid(c, "pair %d has an empty key", i)
		}
		if len(p.New) == 0 {
			return invalid(c, "pair %d (key %q) has an empty new value", i, p.Key)
		}
	}
	r, err := s.target(c.Region, c.RegionID)
	if err != nil {
		return refuse(err)
	}
	for _, p := range c.Pairs {
		if _, ok := r.live(p.Key, s.now); !ok {
			return refuse(fmt.Errorf("region %q: key %q: %w", c.Region, p.Key, region.ErrKeyAbsent))
		}
	}
	for _, p := range c.Pairs {
		if cur, _ := r.live(p.Key, s.now); !jsonequal.Equal(p.Old, cur) {
			return refuse(&region.ConflictError{Err: region.ErrCASMismatch, Key: p.Key, Current: cur})
		}
	}
	for _, p := range c.Pairs {
		s.write(r, c.Region, p.Key, p.New, s.deadline(c))
	}
	return &codec.Result{}
}

// delete removes the keys only if every one exists.
func (s *state) delete(c *codec.Command, _ uint64) *codec.Result {
	if len(c.Keys) == 0 {
		return invalid(c, "the command has no keys")
	}
	r, err := s.target(c.Region, c.RegionID)
	if err != nil {
		return refuse(err)
	}
	for _, k := range c.Keys {
		if _, ok := r.live(k, s.now); !ok {
			return refuse(fmt.Errorf("region %q: key %q: %w", c.Region, k, region.ErrKeyNotFound))
		}
	}
	for _, k := range c.Keys {
		s.remove(r, c.Region, k, region.EventDestroy)
	}
	return &codec.Result{}
}

// deleteIf removes every key whose current value is exactly the one given,
// only if every key exists and matches. A caller that read a value removes
// that value and nothing newer with it (the functions' region.remove, which
// returns what it removed): a missing key is ErrKeyNotFound, another value a
// *region.ConflictError with ErrCASMismatch and the current value, which
// the caller can retry against. Values are compared byte for byte, not as
// JSON: the caller must get back exactly the bytes it removed.
func (s *state) deleteIf(c *codec.Command, _ uint64) *codec.Result {
	if len(c.Entries) == 0 {
		return invalid(c, "the command has no entries")
	}
	for i, e := range c.Entries {
		if e.Key == "" {
			return invalid(c, "entry %d has an empty key", i)
		}
		if len(e.Value) == 0 {
			return invalid(c, "entry %d (key %q) has an empty expected value", i, e.Key)
		}
	}
	r, err := s.target(c.Region, c.RegionID)
	if err != nil {
		return refuse(err)
	}
	for _, e := range c.Entries {
		if _, ok := r.live(e.Key, s.now); !ok {
			return refuse(fmt.Errorf("region %q: key %q: %w", c.Region, e.Key, region.ErrKeyNotFound))
		}
	}
	for _, e := range c.Entries {
		if cur, _ := r.live(e.Key, s.now); !bytes.Equal(cur, e.Value) {
			return refuse(&region.ConflictError{Err: region.ErrCASMismatch, Key: e.Key, Current: cur})
		}
	}
	for _, e := range c.Entries {
		s.remove(r, c.Region, e.Key, region.EventDestroy)
	}
	return &codec.Result{}
}

// clear removes every entry of a replicated region. A partitioned region
// spreads over several groups, so one group cannot clear it atomically;
// Geode refuses it too.
func (s *state) clear(c *codec.Command, _ uint64) *codec.Result {
	if c.RegionID != 0 {
		return invalid(c, "a partition group cannot clear a region")
	}
	r, err := s.region(c.Region)
	if err != nil {
		return refuse(err)
	}
	if r.kind == region.Partition {
		return refuse(fmt.Errorf("region %q: clearing a partitioned region is not supported; delete its entries by key or destroy the region: %w", c.Region, region.ErrNotSupported))
	}
	s.clearRegion(r, c.Region)
	return &codec.Result{}
}

// clearPart removes every entry of this partition group's part of a
// partitioned region: the ClearRegion function clears a partitioned region
// group by group with it, each group atomically.
func (s *state) clearPart(c *codec.Command, _ uint64) *codec.Result {
	if c.RegionID == 0 {
		return invalid(c, "clear-part needs the region id of a partition group")
	}
	r, err := s.target(c.Region, c.RegionID)
	if err != nil {
		return refuse(err)
	}
	s.clearRegion(r, c.Region)
	return &codec.Result{}
}

// setMeta stores a metadata value if the key's current version (0: absent)
// is the expected one; the new version is the entry's log index. An empty
// value deletes the key (no command before this rule ever carried one:
// the partition table, the first metadata, is never empty).
func (s *state) setMeta(c *codec.Command, index uint64) *codec.Result {
	if c.MetaKey == "" {
		return refuse(fmt.Errorf("%v: %w: the metadata key is empty", c.Op, region.ErrInvalid))
	}
	cur := s.meta[c.MetaKey]
	if cur.version != c.MetaVersion {
		return &codec.Result{Version: cur.version, Err: fmt.Errorf("metadata %q: expected version %d, found %d: %w",
			c.MetaKey, c.MetaVersion, cur.version, region.ErrVersionConflict)}
	}
	if len(c.MetaValue) == 0 {
		if cur.version == 0 {
			return &codec.Result{Err: fmt.Errorf("metadata %q: %w", c.MetaKey, region.ErrKeyNotFound)}
		}
		delete(s.meta, c.MetaKey)
		return &codec.Result{Version: index}
	}
	s.meta[c.MetaKey] = metaEntry{value: c.MetaValue, version: index}
	return &codec.Result{Version: index}
}
