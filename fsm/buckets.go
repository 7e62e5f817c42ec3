package fsm

import (
	"cmp"
	"fmt"
	"slices"

	"github.com/google/btree"

	"github.com/kvnode/kvnode/fsm/buckets"
	"github.com/kvnode/kvnode/fsm/codec"
	"github.com/kvnode/kvnode/fsm/history"
	"github.com/kvnode/kvnode/region"
)

// Buckets a partition group serves (package buckets; DESIGN.md, "Buckets").
// Without a Set (state.buckets nil) it serves every key it is sent.

// ownership is the group's buckets as reads and writes consult them: set
// nil while implicit.
type ownership struct{ set *buckets.Set }

// serves reports whether the group serves key's bucket to reads.
func (o ownership) serves(key string) bool { return o.set == nil || o.set.Serves(key) }

// owns reports whether the group takes writes of key's bucket.
func (o ownership) owns(key string) bool { return o.set == nil || o.set.Owns(key) }

// hidden is what reads of whole regions leave out (buckets.Set.Hidden).
func (o ownership) hidden() func(key string) bool {
	if o.set == nil {
		return nil
	}
	return o.set.Hidden()
}

// wrongGroup is the refusal of an operation on a bucket the group does not
// serve now.
func wrongGroup(key string) error {
	return fmt.Errorf("key %q (bucket %d): %w", key, region.Bucket(key), region.ErrWrongGroup)
}

// gate refuses an entry command of a partition region (one with a region
// ID) that touches a key whose bucket the group does not own now. Nothing
// of a refused command is applied: the store sends it again to the
// bucket's owner.
func (o ownership) gate(c *codec.Command) *codec.Result {
	if o.set == nil || c.RegionID == 0 || c.Op == codec.OpBucketImport {
		return nil
	}
	keys := make([]string, 0, len(c.Entries)+len(c.Pairs)+len(c.Keys))
	for _, e := range c.Entries {
		keys = append(keys, e.Key)
	}
	for _, p := range c.Pairs {
		keys = append(keys, p.Key)
	}
	keys = append(keys, c.Keys...)
	for _, k := range keys {
		if k != "" && !o.set.Owns(k) {
			return refuse(wrongGroup(k))
		}
	}
	if c.Op == codec.OpPutIfAbsent && len(c.Entries) == 1 && c.Entries[0].Key == "" && !o.set.OwnsAny() {
		return refuse(fmt.Errorf("a generated key: %w (this group owns no bucket)", region.ErrWrongGroup))
	}
	return nil
}

// gated is h, refused by gate first: the handler of an entry op.
func gated(h handler) handler {
	return func(s *state, c *codec.Command, index uint64) *codec.Result {
		if res := s.own.gate(c); res != nil {
			return res
		}
		return h(s, c, index)
	}
}

// The handlers of the bucket ops are functions in the dispatch table, not
// state methods: package buckets decides the steps, these carry them out.

// applyBucket applies an OpBucket: the init of the group's buckets, or one
// step of a move.
func applyBucket(s *state, c *codec.Command, index uint64) *codec.Result {
	if c.BucketAction == codec.BucketInit {
		if s.own.set != nil {
			if err := s.own.set.Reinit(c.Buckets); err != nil {
				return refuse(err)
			}
			return &codec.Result{}
		}
		set, err := buckets.Init(c.Buckets)
		if err != nil {
			return refuse(err)
		}
		s.own.set = set
		return &codec.Result{}
	}
	if s.own.set == nil {
		return invalid(c, "bucket %s: this group's buckets are not explicit (no init)", c.BucketAction)
	}
	drop, err := s.own.set.Step(c.BucketAction, c.Bucket, c.MoveID)
	if err != nil {
		return refuse(err)
	}
	for _, r := range s.regions {
		if drop && r.kind == region.Partition {
			r.dropBucket(int(c.Bucket))
		}
	}
	switch {
	case c.BucketAction == codec.BucketRelease:
		// The adopt names this index in its fence (history.Fence).
		return &codec.Result{Version: index}
	case c.BucketAction == codec.BucketAdopt && c.From != 0:
		s.events.Add(history.NewFence(history.FenceInfo{Bucket: c.Bucket, From: c.From, Release: c.FromIndex}))
	}
	return &codec.Result{}
}

// dropBucket removes every entry of bucket b, without events: the entries
// did not change, they moved (or, abandoned, never arrived).
func (r *regionState) dropBucket(b int) {
	var keys []string
	r.entries.Ascend(func(e entry) bool {
		if region.Bucket(e.key) == b {
			keys = append(keys, e.key)
		}
		return true
	})
	for _, k := range keys {
		r.del(k)
	}
}

// applyBucketImport stores entries of a bucket being imported, with their
// deadlines, and drops the keys c.Keys names (deleted at the source after
// an earlier page copied them), without events (watchers saw the changes
// where they were made).
func applyBucketImport(s *state, c *codec.Command, _ uint64) *codec.Result {
	if s.own.set == nil || !s.own.set.Importing(c.Bucket, c.MoveID) {
		return refuse(fmt.Errorf("bucket %d: import of move %x: %w: the bucket is not being imported by that move", c.Bucket, c.MoveID, region.ErrInvalid))
	}
	if len(c.Expires) != len(c.Entries) {
		return invalid(c, "%d entries, %d deadlines", len(c.Entries), len(c.Expires))
	}
	for _, e := range c.Entries {
		if uint64(region.Bucket(e.Key)) != c.Bucket || len(e.Value) == 0 {
			return invalid(c, "key %q is not of bucket %d, or has no value", e.Key, c.Bucket)
		}
	}
	for _, k := range c.Keys {
		if uint64(region.Bucket(k)) != c.Bucket {
			return invalid(c, "key %q to drop is not of bucket %d", k, c.Bucket)
		}
	}
	r, err := s.target(c.Region, c.RegionID)
	if err != nil {
		return refuse(err)
	}
	for i, e := range c.Entries {
		r.put(e.Key, e.Value, c.Expires[i])
	}
	for _, k := range c.Keys {
		r.del(k)
	}
	return &codec.Result{}
}

// BucketEntry is one entry of a bucket, as a move copies it.
type BucketEntry struct {
	Region   string
	RegionID uint64
	Key      string
	Value    []byte
	// Expires is the entry's deadline in unix milliseconds (0: never).
	Expires uint64
}

// BucketEntries calls fn with every entry of bucket b in the group's
// partition regions (expired ones too: their removal is the owner's to
// apply) after the entry after (none: the zero value), region by region in
// name order, then by key, over copy-on-write clones and without a lock
// held, until fn returns false.
func (f *FSM) BucketEntries(b int, after BucketEntry, fn func(BucketEntry) bool) {
	type part struct {
		name string
		id   uint64
		t    *btree.BTreeG[entry]
	}
	f.mu.Lock()
	var parts []part
	for name, r := range f.st.regions {
		if r.kind == region.Partition && r.id != 0 && name >= after.Region {
			parts = append(parts, part{name, r.id, r.entries.Clone()})
		}
	}
	f.mu.Unlock()
	slices.SortFunc(parts, func(a, b part) int { return cmp.Compare(a.name, b.name) })
	for _, p := range parts {
		more, from := true, ""
		if p.name == after.Region {
			from = after.Key
		}
		p.t.AscendGreaterOrEqual(entry{key: from}, func(e entry) bool {
			if region.Bucket(e.key) == b && (p.name != after.Region || e.key > after.Key) {
				more = fn(BucketEntry{Region: p.name, RegionID: p.id, Key: e.key, Value: e.value, Expires: e.expires})
			}
			return more
		})
		if !more {
			return
		}
	}
}

// Buckets reports the group's bucket states: nil while implicit, else for
// each bucket "absent", "owned", "sealed" or "importing".
func (f *FSM) Buckets() []string {
	f.mu.RLock()
	defer f.mu.RUnlock()
	if f.st.own.set == nil {
		return nil
	}
	return f.st.own.set.States()
}

// BucketEntryOf is key's entry in partitioned region name (incarnation
// id), expired or not, as a move copies it; ok is false when it has none.
func (f *FSM) BucketEntryOf(name string, id uint64, key string) (e BucketEntry, ok bool) {
	f.mu.RLock()
	defer f.mu.RUnlock()
	r := f.st.regions[name]
	if r == nil || r.id != id || r.kind != region.Partition {
		return BucketEntry{}, false
	}
	got, ok := r.entries.Get(entry{key: key})
	return BucketEntry{Region: name, RegionID: id, Key: key, Value: got.value, Expires: got.expires}, ok
}
