package rebalance

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/kvnode/kvnode/fsm"
	"github.com/kvnode/kvnode/fsm/codec"
	"github.com/kvnode/kvnode/fsm/history"
	"github.com/kvnode/kvnode/partition"
	"github.com/kvnode/kvnode/region"
	"github.com/kvnode/kvnode/store/catalog"
	"github.com/kvnode/kvnode/store/regions"
)

// Store is what the mover needs of the store (store.Router implements
// it): the control group's metadata, where the partition table is, the
// apply path of every group, and the format every member reads.
type Store interface {
	catalog.Meta
	Apply(ctx context.Context, gid uint64, cmd *codec.Command) (*codec.Result, error)
	Formats() int
}

// Pages reads a bucket's entries from the group that holds them
// (regions.Parts implements it).
type Pages interface {
	BucketPage(ctx context.Context, gid uint64, b int, after regions.BucketEntry, max int) (regions.BucketPage, error)
	BucketDelta(ctx context.Context, gid uint64, b int, since history.Pos) (regions.BucketDelta, error)
}

// Stats is what one move did.
type Stats struct {
	Bucket   int
	From, To uint64
	// Entries and Bytes (keys and values) moved, by region.
	Entries map[string]int
	Bytes   map[string]int64
	Took    time.Duration
}

// Observer hears of every move that ends (nil: none): moved (err nil),
// with its bytes and time, or abandoned.
type Observer interface {
	BucketMoved(bytes int64, took time.Duration, err error)
}

// pageBytes bounds a page of a bucket's entries, and so an import command.
const pageBytes = 512 << 10

// Mover moves buckets between partition groups (see the package doc).
type Mover struct {
	store  Store
	pages  Pages
	logger *slog.Logger
	// Observer, when set, hears of every move that ends.
	Observer Observer
	// Rate bounds the bytes the moves copy a second, together (0: as fast
	// as the groups take them): a copy competes with the clients' writes
	// for the same members' CPU and disks (--rebalance-rate).
	Rate int64

	mu sync.Mutex
	// inited are the groups this mover has made explicit.
	inited map[uint64]bool
	// due is when the bytes the moves copied so far are due at Rate: a
	// page reserves its share of the rate after the pages before it, so
	// moves running at once share the rate instead of each taking it.
	due time.Time
}

// NewMover is a mover over store and pages.
func NewMover(store Store, pages Pages, logger *slog.Logger) *Mover {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	return &Mover{store: store, pages: pages, logger: logger, inited: map[uint64]bool{}}
}

// Table reads the partition table at a linearizable point, with its
// version.
func (m *Mover) Table(ctx context.Context) (partition.Table, uint64, error) {
	raw, version, ok, err := m.store.Meta(ctx, region.Linearizable, catalog.TableKey)
	if err != nil {
		return partition.Table{}, 0, err
	}
	if !ok {
		return partition.Table{}, 0, fmt.Errorf("%w: the partition table is not created yet", region.ErrNoLeader)
	}
	t, err := partition.Decode(raw)
	return t, version, err
}

// update changes the partition table with change, by compare-and-set,
// again with the fresh table when another change came first.
func (m *Mover) update(ctx context.Context, change func(t *partition.Table) error) (partition.Table, error) {
	for {
		t, version, err := m.Table(ctx)
		if err != nil {
			return t, err
		}
		next := t.Clone()
		if err := change(&next); err != nil {
			return t, err
		}
		raw, err := partition.Encode(next)
		if err != nil {
			return t, err
		}
		err = m.store.SetMeta(ctx, catalog.TableKey, version, raw)
		if !errors.Is(err, region.ErrVersionConflict) {
			return next, err
		}
	}
}

// apply sends cmd to group gid until it is applied or refused: after an
// unknown outcome it is sent again (every bucket step is idempotent).
func (m *Mover) apply(ctx context.Context, gid uint64, cmd *codec.Command) error {
	_, err := m.applyResult(ctx, gid, cmd)
	return err
}

// applyResult is apply returning the command's result.
func (m *Mover) applyResult(ctx context.Context, gid uint64, cmd *codec.Command) (*codec.Result, error) {
	for attempt := 0; ; attempt++ {
		res, err := m.store.Apply(ctx, gid, cmd)
		if !errors.Is(err, region.ErrIndeterminate) && !errors.Is(err, region.ErrNoLeader) {
			return res, err
		}
		m.logger.Debug("bucket step: trying again", "group", gid, "action", cmd.BucketAction, "error", err)
		select {
		case <-time.After(min(10*time.Millisecond<<min(attempt, 6), time.Second)):
		case <-ctx.Done():
			return nil, fmt.Errorf("%v to group %d: %w", cmd.BucketAction, gid, err)
		}
	}
}

func step(action codec.BucketAction, b int, id uint64) *codec.Command {
	return &codec.Command{Op: codec.OpBucket, BucketAction: action, Bucket: uint64(b), MoveID: id}
}

// explicit makes every bootstrapped partition group's ownership explicit
// from the table (fsm's bucket init), and the table's owners too: what a
// first move needs. It is idempotent.
func (m *Mover) explicit(ctx context.Context) (partition.Table, error) {
	if f := m.store.Formats(); f < fsm.FormatBuckets {
		return partition.Table{}, fmt.Errorf("moving buckets: %w: it needs every member to read format %d, one reads %d", region.ErrUpgradeInProgress, fsm.FormatBuckets, f)
	}
	t, _, err := m.Table(ctx)
	if err == nil && t.Owners == nil {
		t, err = m.update(ctx, func(t *partition.Table) error {
			materialize(t)
			return nil
		})
	}
	if err != nil {
		return t, err
	}
	for _, g := range t.Groups {
		m.mu.Lock()
		done := m.inited[g.ID]
		m.mu.Unlock()
		if !g.Bootstrapped || done {
			continue
		}
		owned := []uint64{}
		for _, b := range t.BucketsOf(g.ID) {
			owned = append(owned, uint64(b))
		}
		if err := m.apply(ctx, g.ID, &codec.Command{Op: codec.OpBucket, BucketAction: codec.BucketInit, Buckets: owned}); err != nil {
			return t, fmt.Errorf("make group %d's buckets explicit: %w", g.ID, err)
		}
		m.mu.Lock()
		m.inited[g.ID] = true
		m.mu.Unlock()
	}
	return t, nil
}

// Move moves bucket b to group to, and returns what it moved. It fails
// when the bucket is moving already, to is not a bootstrapped group other
// than its owner, or a member reads no format with bucket moves yet.
func (m *Mover) Move(ctx context.Context, b int, to uint64) (Stats, error) {
	start := time.Now()
	if _, err := m.explicit(ctx); err != nil {
		return Stats{}, err
	}
	id := rand.Uint64() | 1 // never 0
	var mv partition.Move
	_, err := m.update(ctx, func(t *partition.Table) error {
		g, ok := t.Group(to)
		switch {
		case b < 0 || b >= partition.Buckets:
			return fmt.Errorf("%w: bucket %d: there are %d", region.ErrInvalid, b, partition.Buckets)
		case !ok || !g.Bootstrapped:
			return fmt.Errorf("%w: group %d is not a bootstrapped partition group", region.ErrInvalid, to)
		case t.Owner(b) == to:
			return fmt.Errorf("%w: bucket %d is group %d's already", region.ErrInvalid, b, to)
		}
		if m, moving := t.Moving(b); moving && m.ID == id {
			mv = m // recorded by an attempt whose answer was lost
			return nil
		} else if moving {
			return fmt.Errorf("%w: bucket %d is moving already", region.ErrVersionConflict, b)
		}
		mv = partition.Move{Bucket: b, From: t.Owner(b), To: to, ID: id}
		t.Moves = append(t.Moves, mv)
		return nil
	})
	if err != nil {
		return Stats{}, err
	}
	st := Stats{Bucket: b, From: mv.From, To: to, Entries: map[string]int{}, Bytes: map[string]int64{}}
	m.logger.Info("moving a bucket", "bucket", b, "from", mv.From, "to", to, "move", fmt.Sprintf("%x", id))
	if err := m.copyBucket(ctx, mv, &st); err != nil {
		m.abandon(context.WithoutCancel(ctx), mv)
		m.observe(st, err)
		return st, fmt.Errorf("move bucket %d from group %d to %d: %w", b, mv.From, to, err)
	}
	if err := m.finish(ctx, mv); err != nil {
		return st, fmt.Errorf("move bucket %d from group %d to %d (switched; finished by the next attempt): %w", b, mv.From, to, err)
	}
	st.Took = time.Since(start)
	m.observe(st, nil)
	m.logger.Info("moved a bucket", "bucket", b, "from", mv.From, "to", to, "entries", sum(st.Entries), "took", st.Took.Round(time.Millisecond))
	return st, nil
}

func sum(by map[string]int) int {
	n := 0
	for _, v := range by {
		n += v
	}
	return n
}

// copyBucket copies the bucket's entries into the target: first while the
// source still takes writes of it (the bulk of it), then, sealed, what
// changed meanwhile (the source's change history names the keys), so that
// writes of the bucket pause only for that last pass. When the changes
// cannot be told (the history no longer reaches back, a region was
// cleared, too much changed), the target drops what it has and the bucket
// is copied again, sealed.
func (m *Mover) copyBucket(ctx context.Context, mv partition.Move, st *Stats) error {
	if err := m.apply(ctx, mv.To, step(codec.BucketExpect, mv.Bucket, mv.ID)); err != nil {
		return fmt.Errorf("expect: %w", err)
	}
	since, err := m.copyPages(ctx, mv, st, true)
	if err != nil {
		return err
	}
	if err := m.apply(ctx, mv.From, step(codec.BucketSeal, mv.Bucket, mv.ID)); err != nil {
		return fmt.Errorf("seal: %w", err)
	}
	delta, err := m.pages.BucketDelta(ctx, mv.From, mv.Bucket, since)
	if err != nil {
		return fmt.Errorf("read the changes: %w", err)
	}
	if delta.Delta && !delta.Whole {
		if err := m.importPage(ctx, mv, delta.Entries, st); err != nil {
			return err
		}
		return m.importPage(ctx, mv, delta.Removed, nil)
	}
	m.logger.Info("copying a bucket again, sealed: its changes during the copy cannot be told", "bucket", mv.Bucket, "move", fmt.Sprintf("%x", mv.ID))
	if err := m.apply(ctx, mv.To, step(codec.BucketAbandon, mv.Bucket, mv.ID)); err != nil {
		return fmt.Errorf("drop the first copy: %w", err)
	}
	if err := m.apply(ctx, mv.To, step(codec.BucketExpect, mv.Bucket, mv.ID)); err != nil {
		return fmt.Errorf("expect again: %w", err)
	}
	_, err = m.copyPages(ctx, mv, st, false)
	return err
}

// copyPages copies the bucket's entries, a page at a time, into the
// target, and returns the position of the source's history that the
// target is complete up to: every change after it is in the delta since
// it. With deltas (the bucket not sealed), it also copies what changed
// since the last position after every page, and moves the position on: so
// the history has to reach back only one page's time, not the whole
// copy's, and a bucket whose clients write faster than the history holds
// during the copy is not copied again, sealed. A change to a key the pages
// have not reached yet is copied early, then again by its page: harmless.
func (m *Mover) copyPages(ctx context.Context, mv partition.Move, st *Stats, deltas bool) (history.Pos, error) {
	var after regions.BucketEntry
	var since history.Pos
	for first := true; ; first = false {
		page, err := m.pages.BucketPage(ctx, mv.From, mv.Bucket, after, pageBytes)
		if err != nil {
			return since, fmt.Errorf("read: %w", err)
		}
		if first {
			since = page.Pos
		}
		if err := m.importPage(ctx, mv, page.Entries, st); err != nil {
			return since, err
		}
		if !page.More || len(page.Entries) == 0 {
			return since, nil
		}
		if deltas {
			if since, deltas, err = m.catchUp(ctx, mv, since, st); err != nil {
				return since, err
			}
		}
		after = page.Entries[len(page.Entries)-1]
		copied := 0
		for _, e := range page.Entries {
			copied += len(e.Key) + len(e.Value)
		}
		if err := m.pace(ctx, copied); err != nil {
			return since, err
		}
	}
}

// catchUp copies what changed in the bucket since the position since, and
// returns the position the target is now complete up to, and whether
// deltas can go on: not when the history no longer reaches back (the
// delta after the seal then decides) or the source's build answers no
// position.
func (m *Mover) catchUp(ctx context.Context, mv partition.Move, since history.Pos, st *Stats) (history.Pos, bool, error) {
	delta, err := m.pages.BucketDelta(ctx, mv.From, mv.Bucket, since)
	if err != nil {
		return since, false, fmt.Errorf("read the changes: %w", err)
	}
	if !delta.Delta || delta.Whole || delta.Pos == (history.Pos{}) {
		return since, false, nil
	}
	if err := m.importPage(ctx, mv, delta.Entries, st); err != nil {
		return since, false, err
	}
	if err := m.importPage(ctx, mv, delta.Removed, nil); err != nil {
		return since, false, err
	}
	return delta.Pos, true, nil
}

// pace waits until the copied bytes of a page, after every page that
// any move copied before it, keep to m.Rate.
func (m *Mover) pace(ctx context.Context, copied int) error {
	if m.Rate <= 0 {
		return nil
	}
	m.mu.Lock()
	now := time.Now()
	if m.due.Before(now) {
		m.due = now // a rate unused while nothing copied is not saved up
	}
	m.due = m.due.Add(time.Duration(float64(copied) / float64(m.Rate) * float64(time.Second)))
	due := m.due
	m.mu.Unlock()
	select {
	case <-time.After(time.Until(due)):
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// importPage imports a page's entries into the target, one command per
// region and at most pageBytes each; with st nil, it drops their keys
// there instead (removed at the source after an earlier page copied them).
func (m *Mover) importPage(ctx context.Context, mv partition.Move, entries []regions.BucketEntry, st *Stats) error {
	for i := 0; i < len(entries); {
		j, size := i, 0
		cmd := &codec.Command{Op: codec.OpBucketImport, Region: entries[i].Region, RegionID: entries[i].RegionID, Bucket: uint64(mv.Bucket), MoveID: mv.ID}
		for ; j < len(entries) && entries[j].Region == cmd.Region && entries[j].RegionID == cmd.RegionID && (j == i || size < pageBytes); j++ {
			e := entries[j]
			size += len(e.Key) + len(e.Value)
			if st == nil {
				cmd.Keys = append(cmd.Keys, e.Key)
				continue
			}
			cmd.Entries = append(cmd.Entries, region.Entry{Key: e.Key, Value: e.Value})
			cmd.Expires = append(cmd.Expires, e.Expires)
			st.Bytes[cmd.Region] += int64(len(e.Key) + len(e.Value))
		}
		if st != nil {
			st.Entries[cmd.Region] += j - i
		}
		err := m.apply(ctx, mv.To, cmd)
		if errors.Is(err, region.ErrRegionNotFound) {
			err = nil // destroyed meanwhile: nothing of it to move
		}
		if err != nil {
			return fmt.Errorf("import into group %d: %w", mv.To, err)
		}
		i = j
	}
	return nil
}

// finish switches the bucket's owner: the table marks the move switching,
// the source releases the bucket, the target adopts it, the table makes
// the target the owner. Once the table says switching, it only goes
// forward, whatever fails: it is tried again until ctx ends (and then by
// Resume).
func (m *Mover) finish(ctx context.Context, mv partition.Move) error {
	if _, err := m.update(ctx, func(t *partition.Table) error { return setSwitching(t, mv) }); err != nil {
		return fmt.Errorf("mark switching: %w", err)
	}
	released, err := m.applyResult(ctx, mv.From, step(codec.BucketRelease, mv.Bucket, mv.ID))
	if err != nil {
		return fmt.Errorf("release: %w", err)
	}
	// The adopt's fence: a watch reads the source past the release before
	// the target's events of the bucket (fsm's DESIGN.md, "Buckets").
	adopt := step(codec.BucketAdopt, mv.Bucket, mv.ID)
	if released != nil && released.Version != 0 {
		adopt.From, adopt.FromIndex = mv.From, released.Version
	}
	if err := m.apply(ctx, mv.To, adopt); err != nil {
		return fmt.Errorf("adopt: %w", err)
	}
	_, err = m.update(ctx, func(t *partition.Table) error {
		forget(t, mv)
		t.Owners[mv.Bucket] = mv.To
		return nil
	})
	return err
}

// abandon undoes a move that has not switched: the target drops what it
// imported, the source unseals, the table forgets the move. Best effort:
// what is left is Resume's.
func (m *Mover) abandon(ctx context.Context, mv partition.Move) {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	errT := m.apply(ctx, mv.To, step(codec.BucketAbandon, mv.Bucket, mv.ID))
	errS := m.apply(ctx, mv.From, step(codec.BucketUnseal, mv.Bucket, mv.ID))
	if errT != nil || errS != nil {
		m.logger.Warn("abandoning a bucket move failed; the control leader tries again", "bucket", mv.Bucket, "target", errT, "source", errS)
		return
	}
	if _, err := m.update(ctx, func(t *partition.Table) error { forget(t, mv); return nil }); err != nil {
		m.logger.Warn("forgetting an abandoned bucket move failed; the control leader tries again", "bucket", mv.Bucket, "error", err)
		return
	}
	m.logger.Info("abandoned a bucket move", "bucket", mv.Bucket, "from", mv.From, "to", mv.To)
}

// Resume settles the moves the table holds that nobody drives (a control
// leader that died, an abandon that failed): a switching one is finished,
// any other abandoned.
func (m *Mover) Resume(ctx context.Context) error {
	t, _, err := m.Table(ctx)
	if err != nil {
		return err
	}
	for _, mv := range t.Moves {
		if mv.Switching {
			if err := m.finish(ctx, mv); err != nil {
				return err
			}
			m.logger.Info("finished a bucket move a former leader began", "bucket", mv.Bucket, "from", mv.From, "to", mv.To)
			continue
		}
		m.logger.Info("abandoning a bucket move a former leader left", "bucket", mv.Bucket, "from", mv.From, "to", mv.To)
		m.abandon(ctx, mv)
	}
	return nil
}

// setSwitching marks mv switching in t (refused when t no longer holds it).
func setSwitching(t *partition.Table, mv partition.Move) error {
	for i := range t.Moves {
		if t.Moves[i].ID == mv.ID {
			t.Moves[i].Switching = true
			return nil
		}
	}
	return fmt.Errorf("%w: the table no longer holds the move of bucket %d", region.ErrVersionConflict, mv.Bucket)
}

// forget removes mv from t.
func forget(t *partition.Table, mv partition.Move) {
	out := t.Moves[:0]
	for _, x := range t.Moves {
		if x.ID != mv.ID {
			out = append(out, x)
		}
	}
	t.Moves = out
	if len(t.Moves) == 0 {
		t.Moves = nil
	}
}

// materialize writes t's owners out (a table keeps none until a bucket
// first moves: see partition.Table.Owners).
func materialize(t *partition.Table) {
	if t.Owners != nil {
		return
	}
	owners := make([]uint64, partition.Buckets)
	for b := range owners {
		owners[b] = t.Owner(b)
	}
	t.Owners = owners
}

// observe tells the Observer how a move ended.
func (m *Mover) observe(st Stats, err error) {
	if m.Observer == nil {
		return
	}
	var bytes int64
	for _, n := range st.Bytes {
		bytes += n
	}
	m.Observer.BucketMoved(bytes, st.Took, err)
}
