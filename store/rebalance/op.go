package rebalance

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sort"
	"time"

	"github.com/kvnode/kvnode/partition"
	"github.com/kvnode/kvnode/region"
	"github.com/kvnode/kvnode/store/catalog"
)

// Rebalance operations, as Geode's management REST API has them: an
// operation is a record in the control group's metadata (its status,
// times and results), so any member answers for it and a new control
// leader carries on an operation its predecessor began. The control
// group's leader runs them, one at a time, oldest first (Runner); an
// operation runs up to Runner.Parallel of its moves at once.

// The statuses of an operation, Geode's names.
const (
	InProgress = "IN_PROGRESS"
	Success    = "SUCCESS"
	Failed     = "ERROR"
)

// maxMoveFailures is how many moves in a row may fail before an
// operation ends in ERROR (each is planned again after a pause).
const maxMoveFailures = 5

// leadCheck is how often a running round checks that this member still
// leads the control group.
const leadCheck = 100 * time.Millisecond

// Operation is a rebalance's record.
type Operation struct {
	ID     string    `json:"id"`
	Status string    `json:"operationStatus"`
	Start  time.Time `json:"operationStart"`
	End    time.Time `json:"operationEnd,omitzero"`
	// Message says how it ended (or what it is doing).
	Message string `json:"statusMessage,omitempty"`
	// Groups, when set, is the partition group count the operation grows
	// the table to before evening out the buckets.
	Groups  int     `json:"partitionGroups,omitempty"`
	Regions []Moved `json:"rebalanceRegionResults"`
	// BucketsMoved, BytesMoved and LeadershipsMoved are the totals.
	BucketsMoved     int   `json:"bucketTransfersCompleted"`
	BytesMoved       int64 `json:"bucketTransferBytes"`
	LeadershipsMoved int   `json:"primaryTransfersCompleted"`
	// Millis is the time taken, in milliseconds.
	Millis int64 `json:"timeInMilliseconds"`
}

// Moved is what an operation moved of one region.
type Moved struct {
	Region       string `json:"regionName"`
	BucketsMoved int    `json:"bucketTransfersCompleted"`
	BytesMoved   int64  `json:"bucketTransferBytes"`
	EntriesMoved int    `json:"entriesMoved"`
	// Millis is the time spent moving buckets holding the region's
	// entries, in milliseconds.
	Millis int64 `json:"bucketTransferTimeInMilliseconds"`
}

// Operations keeps rebalance records in the control group's metadata.
type Operations struct{ store Store }

// NewOperations is the records of store.
func NewOperations(store Store) *Operations { return &Operations{store: store} }

// Start records a new operation (groups: the partition group count to
// grow to first, 0 to keep it) and returns it; the control leader's
// Runner carries it out.
func (o *Operations) Start(ctx context.Context, groups int) (Operation, error) {
	var raw [8]byte
	_, _ = rand.Read(raw[:])
	op := Operation{ID: time.Now().UTC().Format("20060102T150405Z") + "-" + hex.EncodeToString(raw[:4]), Status: InProgress, Start: time.Now().UTC(), Groups: groups, Regions: []Moved{}}
	return op, o.put(ctx, op, 0)
}

// Get is operation id; region.ErrKeyNotFound when there is none.
func (o *Operations) Get(ctx context.Context, id string) (Operation, uint64, error) {
	raw, version, ok, err := o.store.Meta(ctx, region.Linearizable, catalog.RebalancePrefix+id)
	if err != nil {
		return Operation{}, 0, err
	}
	if !ok {
		return Operation{}, 0, fmt.Errorf("rebalance operation %q: %w", id, region.ErrKeyNotFound)
	}
	var op Operation
	if err := json.Unmarshal(raw, &op); err != nil {
		return op, 0, fmt.Errorf("rebalance operation %q: %w", id, err)
	}
	return op, version, nil
}

// List is every operation recorded, oldest first.
func (o *Operations) List(ctx context.Context) ([]Operation, error) {
	entries, err := o.store.MetaList(ctx, region.Linearizable, catalog.RebalancePrefix)
	if err != nil {
		return nil, err
	}
	out := make([]Operation, 0, len(entries))
	for _, e := range entries {
		var op Operation
		if err := json.Unmarshal(e.Value, &op); err == nil {
			out = append(out, op)
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Start.Before(out[j].Start) })
	return out, nil
}

// put writes op over the record at version (0: a new one).
func (o *Operations) put(ctx context.Context, op Operation, version uint64) error {
	raw, err := json.Marshal(op)
	if err != nil {
		return err
	}
	return o.store.SetMeta(ctx, catalog.RebalancePrefix+op.ID, version, raw)
}

// save writes op whatever its version now (the runner alone writes a
// record in progress).
func (o *Operations) save(ctx context.Context, op Operation) error {
	for {
		_, version, err := o.Get(ctx, op.ID)
		if err != nil {
			return err
		}
		if err = o.put(ctx, op, version); !errors.Is(err, region.ErrVersionConflict) {
			return err
		}
	}
}

// Runner runs the operations in progress while this member leads the
// control group, and starts them on its own when the cluster asks for one
// (Auto).
type Runner struct {
	ops    *Operations
	mover  *Mover
	leads  func() bool
	auto   Auto
	logger *slog.Logger
	// resumed is whether this leadership has settled the moves a former
	// leader left.
	resumed bool
	// pause is the wait after a failed move, times the failures in a row.
	pause time.Duration
	// Parallel is how many bucket moves may run at once (each between
	// groups no other uses; below 1: one) (--rebalance-moves).
	Parallel int
}

// Auto says when a Runner starts a rebalance of its own.
type Auto struct {
	// Rebalance (--auto-rebalance): whenever the buckets are uneven over
	// the partition groups (groups were added and no rebalance ran yet).
	Rebalance bool
	// Groups (--partition-groups auto): whenever the cluster has more
	// members than partition groups (up to one group per bucket), one
	// that grows the groups to the members.
	Groups bool
	// Members counts the cluster's members (the control group's
	// configuration).
	Members func() int
}

// NewRunner runs ops with mover while leads() says this member leads the
// control group, starting rebalances as auto says.
func NewRunner(ops *Operations, mover *Mover, leads func() bool, auto Auto, logger *slog.Logger) *Runner {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	return &Runner{ops: ops, mover: mover, leads: leads, auto: auto, logger: logger, pause: time.Second}
}

// Run runs the operations until ctx ends, looking every interval.
func (r *Runner) Run(ctx context.Context, interval time.Duration) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		if r.leads() {
			r.round(ctx)
		} else {
			r.resumed = false
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// round settles the moves a former leader left, then runs the oldest
// operation in progress, for as long as this member leads: a mover that
// went on after its leadership ended would race the next leader's (which
// abandons or finishes what it finds), so its steps stop with it.
func (r *Runner) round(ctx context.Context) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go func() {
		t := time.NewTicker(leadCheck)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
				if !r.leads() {
					cancel()
					return
				}
			}
		}
	}()
	if !r.resumed {
		if t, _, err := r.mover.Table(ctx); err != nil || len(t.Moves) > 0 {
			if err == nil {
				err = r.mover.Resume(ctx)
			}
			if err != nil {
				r.logger.Warn("settling the bucket moves a former leader left: not yet", "error", err)
				return
			}
		}
		r.resumed = true
	}
	ops, err := r.ops.List(ctx)
	if err != nil {
		return
	}
	i := slices.IndexFunc(ops, func(op Operation) bool { return op.Status == InProgress })
	if i < 0 {
		r.autoStart(ctx)
		return
	}
	op := ops[i]
	err = r.run(ctx, &op)
	if ctx.Err() != nil || !r.leads() {
		return // stopping, or no longer the leader: the next leader carries on
	}
	op.End = time.Now().UTC()
	op.Millis = op.End.Sub(op.Start).Milliseconds()
	op.Status, op.Message = Success, fmt.Sprintf("moved %d buckets (%d bytes) and %d leaderships", op.BucketsMoved, op.BytesMoved, op.LeadershipsMoved)
	if err != nil {
		op.Status, op.Message = Failed, err.Error()
	}
	if err := r.ops.save(ctx, op); err != nil {
		r.logger.Warn("recording a rebalance's end failed", "operation", op.ID, "error", err)
		return
	}
	r.logger.Info("rebalance ended", "operation", op.ID, "status", op.Status, "message", op.Message)
}

// autoStart starts a rebalance when the cluster asks for one (Auto).
func (r *Runner) autoStart(ctx context.Context) {
	t, _, err := r.mover.Table(ctx)
	if err != nil || len(t.Moves) > 0 {
		return
	}
	groups, why := r.groupsWanted(t), ""
	if groups > 0 {
		why = fmt.Sprintf("%d members, %d partition groups (--partition-groups auto)", groups, t.P())
	}
	if groups == 0 && r.auto.Rebalance && len(PlanBuckets(t)) > 0 {
		why = "the buckets are uneven over the partition groups (--auto-rebalance)"
	}
	if why == "" {
		return
	}
	op, err := r.ops.Start(ctx, groups)
	if err != nil {
		r.logger.Warn("starting a rebalance failed", "reason", why, "error", err)
		return
	}
	r.logger.Info("rebalance started on its own", "operation", op.ID, "reason", why)
}

// groupsWanted is the partition group count --partition-groups auto asks
// of t (one per member, up to one per bucket), or 0 when t has as many.
func (r *Runner) groupsWanted(t partition.Table) int {
	if !r.auto.Groups || r.auto.Members == nil {
		return 0
	}
	if m := min(r.auto.Members(), partition.Buckets); m > t.P() {
		return m
	}
	return 0
}

// run carries out op: grows the table first if it asks, then moves
// buckets until they are even, recording progress after each move.
func (r *Runner) run(ctx context.Context, op *Operation) error {
	before, _, err := r.mover.Table(ctx)
	if err != nil {
		return err
	}
	if op.Groups > before.P() {
		if err := r.grow(ctx, op.Groups); err != nil {
			return err
		}
	}
	return r.moveAll(ctx, op, before)
}

// moved is how one of a round's moves ended.
type moved struct {
	shift Shift
	stats Stats
	err   error
}

// moveAll moves buckets until they are even, up to r.Parallel at once,
// each between two groups that no other running move uses: a move's cost
// is mostly waiting on its groups' logs, so moves between distinct groups
// overlap well, while two on one group would only queue on its leader.
func (r *Runner) moveAll(ctx context.Context, op *Operation, before partition.Table) error {
	parallel := max(r.Parallel, 1)
	busy := map[uint64]bool{} // groups a running move uses
	running := 0
	done := make(chan moved, parallel)
	failed := 0 // moves that failed in a row
	var lastErr error
	for {
		if running == 0 && lastErr != nil {
			// Every move that failed was abandoned, or is left to Resume:
			// settle what is left, after a pause, then plan again. Only
			// moves that keep failing end the operation.
			if failed >= maxMoveFailures || ctx.Err() != nil || !r.leads() {
				return lastErr
			}
			select {
			case <-ctx.Done():
				return lastErr
			case <-time.After(time.Duration(failed) * r.pause):
			}
			if err := r.mover.Resume(ctx); err != nil {
				r.logger.Debug("cleaning up after a failed move", "error", err)
			}
			lastErr = nil
		}
		if lastErr == nil && running < parallel {
			if !r.leads() {
				lastErr = fmt.Errorf("%w: this member no longer leads the control group", region.ErrNotLeader)
				failed = maxMoveFailures
				continue
			}
			t, _, err := r.mover.Table(ctx)
			if err != nil && running == 0 {
				return err
			}
			if groups := r.groupsWanted(t); err == nil && groups > 0 {
				// Members that joined while it ran (members join one
				// at a time): grow now, rather than even the buckets
				// out over too few groups and move them all again.
				if err := r.grow(ctx, groups); err != nil {
					lastErr, failed = err, maxMoveFailures // ends the operation once the running moves end
					continue
				}
				r.logger.Info("partition groups grown during a rebalance", "operation", op.ID, "groups", groups)
				op.Groups = groups
				continue
			}
			plan := PlanBuckets(t)
			if err == nil && len(plan) == 0 && running == 0 {
				op.LeadershipsMoved = leadersChanged(before, t)
				return nil
			}
			for _, s := range plan {
				if err != nil || running == parallel {
					break
				}
				if busy[s.From] || busy[s.To] {
					continue
				}
				busy[s.From], busy[s.To] = true, true
				running++
				go func() {
					st, err := r.mover.Move(ctx, s.Bucket, s.To)
					done <- moved{shift: s, stats: st, err: err}
				}()
			}
		}
		res := <-done // a move ends on its own when ctx does
		running--
		delete(busy, res.shift.From)
		delete(busy, res.shift.To)
		if res.err != nil {
			// A move fails when a group loses its leader, or another
			// mover (a former control leader's) holds the bucket.
			failed++
			lastErr = res.err
			r.logger.Warn("a bucket move failed; planning again once the running ones end", "operation", op.ID, "bucket", res.shift.Bucket, "attempt", failed, "error", res.err)
			continue
		}
		if lastErr == nil {
			failed = 0
		}
		op.add(res.stats)
		if err := r.ops.save(ctx, *op); err != nil {
			r.logger.Debug("recording a rebalance's progress failed", "operation", op.ID, "error", err)
		}
	}
}

// grow adds partition groups to the table up to groups and waits until
// every one is bootstrapped (the reconcile loops place and bootstrap them).
func (r *Runner) grow(ctx context.Context, groups int) error {
	if groups > partition.Buckets {
		return fmt.Errorf("%w: %d partition groups: at most %d (one bucket each)", region.ErrInvalid, groups, partition.Buckets)
	}
	_, err := r.mover.update(ctx, func(t *partition.Table) error {
		materialize(t)
		for id := uint64(t.P() + 1); id <= uint64(groups); id++ {
			t.Groups = append(t.Groups, partition.Group{ID: id, Members: []string{}})
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("add partition groups: %w", err)
	}
	r.logger.Info("partition groups added", "groups", groups)
	for {
		t, _, err := r.mover.Table(ctx)
		if err != nil {
			return err
		}
		if !slices.ContainsFunc(t.Groups, func(g partition.Group) bool { return !g.Bootstrapped }) {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// add counts one move into op.
func (op *Operation) add(st Stats) {
	op.BucketsMoved++
	for name, n := range st.Entries {
		i := slices.IndexFunc(op.Regions, func(m Moved) bool { return m.Region == name })
		if i < 0 {
			op.Regions = append(op.Regions, Moved{Region: name})
			i = len(op.Regions) - 1
		}
		m := &op.Regions[i]
		m.BucketsMoved++
		m.EntriesMoved += n
		m.BytesMoved += st.Bytes[name]
		m.Millis += st.Took.Milliseconds()
		op.BytesMoved += st.Bytes[name]
	}
	sort.Slice(op.Regions, func(i, j int) bool { return op.Regions[i].Region < op.Regions[j].Region })
}

// leadersChanged counts the groups of before whose preferred leader after
// differs.
func leadersChanged(before, after partition.Table) int {
	n := 0
	for _, g := range after.Groups {
		old, ok := before.Group(g.ID)
		if ok && len(old.Members) > 0 && len(g.Members) > 0 && old.Members[0] != g.Members[0] {
			n++
		}
	}
	return n
}
