package store

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/kvnode/kvnode/fsm"
	"github.com/kvnode/kvnode/fsm/codec"
	"github.com/kvnode/kvnode/region"
	"github.com/kvnode/kvnode/store/expiry"
	"github.com/kvnode/kvnode/store/forward"
	"github.com/kvnode/kvnode/store/raftgroup"
)

// Router is the store's apply and read paths, as the packages above the
// store use them (package regions, query and catalog reach the store
// through it, each over an interface of its own): a command goes to its
// group's leader wherever that is; a read is served by this node's
// replica once the read barrier allows, or by a member that hosts the
// group. Failures that certainly changed nothing are retried until a
// leader answers or LeaderWait passes.
type Router struct {
	cfg    Config
	name   string
	logger *slog.Logger
	groups *groupSet
	client *rpcClient
	rpc    *rpcServer
	stop   <-chan struct{}
	view   *tableView
	fwd    *forward.Forwarder
}

// Control returns this node's copy of the control group's state machine
// once a read at consistency c may be served from it.
func (r *Router) Control(ctx context.Context, c region.Consistency) (*fsm.FSM, error) {
	g, err := r.controlRead(ctx, c)
	if err != nil {
		return nil, err
	}
	return g.FSM(), nil
}

// ControlState returns this node's copy of the control group's state
// machine as it is, without a barrier: for lookups whose miss is
// confirmed after ControlBarrier.
func (r *Router) ControlState() (*fsm.FSM, error) {
	g := r.groups.control()
	if g == nil {
		return nil, region.ErrShuttingDown
	}
	return g.FSM(), nil
}

// ControlBarrier makes this node's copy of the control group reflect
// every write acknowledged before the call.
func (r *Router) ControlBarrier(ctx context.Context) error {
	g := r.groups.control()
	if g == nil {
		return region.ErrShuttingDown
	}
	return r.localRead(ctx, g, region.Linearizable, 0)
}

// Leads reports whether this node leads group gid now.
func (r *Router) Leads(gid uint64) bool {
	g := r.groups.get(gid)
	return g != nil && g.IsLeader()
}

// Apply replicates cmd through group gid and returns the state machine's
// result. The answer comes only after the entry is committed on a quorum of
// the group and applied on its leader. Refusals decided by the state machine
// (key exists, CAS mismatch, ...) come back as the error, with the result.
//
// Any node may call Apply. A node hosting the group forwards the encoded
// command to the group's leader; a node that does not host it hands it to a
// member that does, which forwards it once more if it is not the leader.
// Failures that certainly did not append the entry (no leader, not the
// leader, unreachable) are retried until a leader answers, LeaderWait passes
// or ctx ends; an unknown outcome is reported as region.ErrIndeterminate and
// never retried, so a put-if-absent or CAS is never applied twice by us.
func (r *Router) Apply(ctx context.Context, gid uint64, cmd *codec.Command) (*codec.Result, error) {
	if r.closed() {
		return nil, region.ErrShuttingDown
	}
	if err := expiry.Stamp(cmd, r.view.formats(), time.Now()); err != nil {
		return nil, err
	}
	data := cmd.Encode(nil)
	if limit := r.cfg.MaxFrameBytes; int64(len(data)) > limit {
		// Refused the same way whichever member receives the request,
		// leader or not: the command could not be forwarded.
		return nil, fmt.Errorf("%v on region %q: %w: the command is %d bytes, more than the internal frame limit of %d bytes (set by --max-body-size)",
			cmd.Op, cmd.Region, region.ErrTooLarge, len(data), limit)
	}
	var last error
	var since time.Time
	for attempt := 0; ; attempt++ {
		res, err := r.applyOnce(ctx, gid, attempt, data)
		if err == nil {
			return res, res.Err
		}
		if !retryableWrite(err) {
			return nil, fmt.Errorf("%v on region %q: %w", cmd.Op, cmd.Region, err)
		}
		last = err
		if since.IsZero() {
			since = time.Now()
		}
		if err := r.pause(ctx, r.view.localFor(gid), attempt, since, last); err != nil {
			return nil, fmt.Errorf("%v on region %q: %w", cmd.Op, cmd.Region, err)
		}
	}
}

func (r *Router) applyOnce(ctx context.Context, gid uint64, attempt int, data []byte) (*codec.Result, error) {
	g := r.view.localFor(gid)
	if g != nil && gid == controlGroup {
		if err := g.Halted(); err != nil {
			return nil, err
		}
	}
	if g == nil {
		addr, err := r.view.hostFor(gid, attempt)
		if err != nil {
			return nil, err
		}
		region.NoteHop(ctx)
		return r.client.apply(ctx, addr, gid, data, true)
	}
	if g.IsLeader() {
		return g.Apply(ctx, data)
	}
	id, addr := g.Leader()
	if id == "" {
		return nil, fmt.Errorf("group %d: %w", g.ID(), region.ErrNoLeader)
	}
	if id == r.name {
		// Raft still names us but we are no longer leader: wait for news.
		return nil, fmt.Errorf("group %d: %w", g.ID(), region.ErrNotLeader)
	}
	region.NoteHop(ctx)
	return r.fwd.Apply(ctx, addr, g.ID(), data)
}

// localRead returns the local group gid once a read at consistency c may be
// served from this node's copy of it: at once for a stale read, after the
// read barrier for a linearizable one.
//
// catchUp bounds how long a follower waits for its state machine to reach
// the leader's read index (0: as long as ctx allows); past it the read fails
// with errLagging, so that a caller with another replica to ask moves on.
func (r *Router) localRead(ctx context.Context, g *raftgroup.Group, c region.Consistency, catchUp time.Duration) error {
	if c == region.Stale {
		return nil
	}
	var last error
	var since time.Time
	for attempt := 0; ; attempt++ {
		err := r.readBarrier(ctx, g, catchUp)
		if err == nil {
			return nil
		}
		if errors.Is(err, errLagging) || !retryableRead(err) {
			return fmt.Errorf("linearizable read: %w", err)
		}
		last = err
		if since.IsZero() {
			since = time.Now()
		}
		if err := r.pause(ctx, g, attempt, since, last); err != nil {
			return fmt.Errorf("linearizable read: %w", err)
		}
	}
}

// controlRead returns the control group, ready for a read at consistency
// c: not halted, and past the read barrier for a linearizable read.
func (r *Router) controlRead(ctx context.Context, c region.Consistency) (*raftgroup.Group, error) {
	g := r.groups.control()
	if g == nil {
		return nil, region.ErrShuttingDown
	}
	if err := g.Halted(); err != nil {
		return nil, err
	}
	if err := r.localRead(ctx, g, c, 0); err != nil {
		return nil, err
	}
	return g, nil
}

// readBarrier makes this node's FSM reflect every write acknowledged before
// the call: on the leader by a read-index round, on a follower by asking
// the leader for the read index and waiting until the local FSM applied it.
func (r *Router) readBarrier(ctx context.Context, g *raftgroup.Group, catchUp time.Duration) error {
	if g.IsLeader() {
		_, err := g.ReadIndex(ctx)
		return err
	}
	region.NoteHop(ctx) // the leader's read index, possibly shared with other reads
	idx, err := g.LeaderIndex(ctx, func(ctx context.Context) (uint64, error) {
		id, addr := g.Leader()
		if id == "" {
			return 0, fmt.Errorf("group %d: %w", g.ID(), region.ErrNoLeader)
		}
		if id == r.name {
			return 0, fmt.Errorf("group %d: %w", g.ID(), region.ErrNotLeader)
		}
		idx, err := r.client.readIndex(ctx, addr, g.ID())
		if err != nil {
			return 0, fmt.Errorf("read index of group %d from %s: %w", g.ID(), addr, err)
		}
		return idx, nil
	})
	if err != nil {
		return err
	}
	wctx := ctx
	if catchUp > 0 {
		var cancel context.CancelFunc
		wctx, cancel = context.WithTimeout(ctx, catchUp)
		defer cancel()
	}
	if err := g.FSM().WaitApplied(wctx, idx); err != nil {
		if ctx.Err() == nil {
			return fmt.Errorf("group %d: applied %d, read index %d: %w", g.ID(), g.FSM().AppliedIndex(), idx, errLagging)
		}
		return raftgroup.ContextError(ctx, fmt.Sprintf("catch up to read index %d", idx), err)
	}
	return nil
}

// errLagging: this replica did not reach the read index in time (it is
// catching up, or it was removed from the group and is no longer fed).
// Reads retry it on another replica (retryableRead). It is not a leadership
// error and does not say so: between members it travels with the
// not-hosted code (the receiver's answer to both is to ask another member,
// and members of earlier versions know that code), but with its own text.
var errLagging = errors.New("this replica is behind its group's leader")

// catchUpWait is how long a partition replica may take to reach a read
// index before the read goes to another member.
const catchUpWait = time.Second

// pause waits before a retry: until the group's leader changes (when it is
// hosted here), a short backoff passes, or gives up when ctx ends or
// LeaderWait has passed since the first failure.
func (r *Router) pause(ctx context.Context, g *raftgroup.Group, attempt int, since time.Time, last error) error {
	left := r.cfg.LeaderWait - time.Since(since)
	if left <= 0 {
		if errors.Is(last, region.ErrNoLeader) {
			return last
		}
		return fmt.Errorf("%w: no leader answered within %v (last error: %v)", region.ErrNoLeader, r.cfg.LeaderWait, last)
	}
	backoff := min(5*time.Millisecond<<min(attempt, 6), 250*time.Millisecond, left)
	t := time.NewTimer(backoff)
	defer t.Stop()
	var changed <-chan struct{}
	if g != nil {
		changed = g.LeaderChanged()
	}
	select {
	case <-changed:
	case <-t.C:
	case <-ctx.Done():
		return raftgroup.ContextError(ctx, "wait for a leader", last)
	case <-r.stop:
		return region.ErrShuttingDown
	}
	return nil
}

func (r *Router) closed() bool {
	select {
	case <-r.stop:
		return true
	default:
		return false
	}
}
