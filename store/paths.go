package store

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/kvnode/kvnode/fsm/codec"
	"github.com/kvnode/kvnode/region"
)

// errClosed is returned once the store has been closed.
var errClosed = fmt.Errorf("%w: this node is shutting down", region.ErrNoLeader)

// apply replicates cmd through the control group; see applyTo.
func (s *Store) apply(ctx context.Context, cmd *codec.Command) (*codec.Result, error) {
	return s.applyTo(ctx, controlGroup, cmd)
}

// applyTo replicates cmd through group gid and returns the state machine's
// result. The answer comes only after the entry is committed on a quorum of
// the group and applied on its leader. Refusals decided by the state machine
// (key exists, CAS mismatch, ...) come back as the error, with the result.
//
// Any node may call applyTo. A node hosting the group forwards the encoded
// command to the group's leader; a node that does not host it hands it to a
// member that does, which forwards it once more if it is not the leader.
// Failures that certainly did not append the entry (no leader, not the
// leader, unreachable) are retried until a leader answers, LeaderWait passes
// or ctx ends; an unknown outcome is reported as region.ErrIndeterminate and
// never retried, so a put-if-absent or CAS is never applied twice by us.
func (s *Store) applyTo(ctx context.Context, gid uint64, cmd *codec.Command) (*codec.Result, error) {
	if s.closed() {
		return nil, errClosed
	}
	data := cmd.Encode(nil)
	if limit := s.frameLimit(); int64(len(data)) > limit {
		// Refused the same way whichever member receives the request,
		// leader or not: the command could not be forwarded.
		return nil, fmt.Errorf("%v on region %q: %w: the command is %d bytes, more than the internal frame limit of %d bytes (set by --max-body-size)",
			cmd.Op, cmd.Region, region.ErrTooLarge, len(data), limit)
	}
	var last error
	var since time.Time
	for attempt := 0; ; attempt++ {
		res, err := s.applyOnce(ctx, gid, attempt, data)
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
		if err := s.pause(ctx, s.localFor(gid), attempt, since, last); err != nil {
			return nil, fmt.Errorf("%v on region %q: %w", cmd.Op, cmd.Region, err)
		}
	}
}

func (s *Store) applyOnce(ctx context.Context, gid uint64, attempt int, data []byte) (*codec.Result, error) {
	g := s.localFor(gid)
	if g != nil && gid == controlGroup {
		if err := g.halted(); err != nil {
			return nil, err
		}
	}
	if g == nil {
		addr, err := s.hostFor(gid, attempt)
		if err != nil {
			return nil, err
		}
		return s.client.apply(ctx, addr, gid, data, true)
	}
	if g.isLeader() {
		return s.applyLocal(ctx, g, data)
	}
	id, addr := g.leader()
	if id == "" {
		return nil, fmt.Errorf("group %d: %w", g.id, region.ErrNoLeader)
	}
	if id == s.name {
		// Raft still names us but we are no longer leader: wait for news.
		return nil, fmt.Errorf("group %d: %w", g.id, region.ErrNotLeader)
	}
	return s.client.apply(ctx, addr, g.id, data, false)
}

// applyLocal appends data on this node, which must be the leader. It is the
// only way into a Raft log (besides the batcher, which packs commands that
// passed here), so it decodes every command first, whichever path brought
// it: a committed entry that does not decode would halt every replica of
// the group that applies it (fsm.Halted).
func (s *Store) applyLocal(ctx context.Context, g *group, data []byte) (*codec.Result, error) {
	op, err := codec.CheckCommand(data)
	if err != nil {
		return nil, fmt.Errorf("group %d: %w: refused before it entered the log: %v", g.id, errBadCommand, err)
	}
	timeout := internalTimeout
	if dl, ok := ctx.Deadline(); ok {
		timeout = time.Until(dl)
		if timeout <= 0 {
			return nil, ctxErr(ctx, "apply", nil)
		}
	}
	if len(data) > stageAbove {
		return s.applyStaged(ctx, g, data, timeout)
	}
	if op.Batchable() {
		return g.batch.apply(ctx, data)
	}
	f := g.raft.Apply(data, timeout)
	done := make(chan error, 1)
	go func() { done <- f.Error() }()
	select {
	case err := <-done:
		if err != nil {
			return nil, raftErr(err)
		}
	case <-ctx.Done():
		return nil, fmt.Errorf("%w: %v while the entry was being committed", region.ErrIndeterminate, ctx.Err())
	}
	res, ok := f.Response().(*codec.Result)
	if !ok {
		return nil, fmt.Errorf("group %d: unexpected state machine response %T", g.id, f.Response())
	}
	return res, nil
}

// localRead returns the local group gid once a read at consistency c may be
// served from this node's copy of it: at once for a stale read, after the
// read barrier for a linearizable one.
//
// catchUp bounds how long a follower waits for its state machine to reach
// the leader's read index (0: as long as ctx allows); past it the read fails
// with errLagging, so that a caller with another replica to ask moves on.
func (s *Store) localRead(ctx context.Context, g *group, c region.Consistency, catchUp time.Duration) error {
	if c == region.Stale {
		return nil
	}
	var last error
	var since time.Time
	for attempt := 0; ; attempt++ {
		err := s.readBarrier(ctx, g, catchUp)
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
		if err := s.pause(ctx, g, attempt, since, last); err != nil {
			return fmt.Errorf("linearizable read: %w", err)
		}
	}
}

// readGroup returns the control group, ready for a read at consistency c.
func (s *Store) readGroup(ctx context.Context, c region.Consistency) (*group, error) {
	g := s.control()
	if g == nil {
		return nil, errClosed
	}
	if err := g.halted(); err != nil {
		return nil, err
	}
	if err := s.localRead(ctx, g, c, 0); err != nil {
		return nil, err
	}
	return g, nil
}

// readBarrier makes this node's FSM reflect every write acknowledged before
// the call: on the leader by a read-index round, on a follower by asking
// the leader for the read index and waiting until the local FSM applied it.
func (s *Store) readBarrier(ctx context.Context, g *group, catchUp time.Duration) error {
	if g.isLeader() {
		_, err := g.reads.readIndex(ctx)
		return err
	}
	id, addr := g.leader()
	if id == "" {
		return fmt.Errorf("group %d: %w", g.id, region.ErrNoLeader)
	}
	if id == s.name {
		return fmt.Errorf("group %d: %w", g.id, region.ErrNotLeader)
	}
	idx, err := s.client.readIndex(ctx, addr, g.id)
	if err != nil {
		return err
	}
	wctx := ctx
	if catchUp > 0 {
		var cancel context.CancelFunc
		wctx, cancel = context.WithTimeout(ctx, catchUp)
		defer cancel()
	}
	if err := g.fsm.WaitApplied(wctx, idx); err != nil {
		if ctx.Err() == nil {
			return fmt.Errorf("group %d: applied %d, read index %d: %w", g.id, g.fsm.AppliedIndex(), idx, errLagging)
		}
		return ctxErr(ctx, fmt.Sprintf("catch up to read index %d", idx), err)
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
func (s *Store) pause(ctx context.Context, g *group, attempt int, since time.Time, last error) error {
	left := s.cfg.LeaderWait - time.Since(since)
	if left <= 0 {
		if errors.Is(last, region.ErrNoLeader) {
			return last
		}
		return fmt.Errorf("%w: no leader answered within %v (last error: %v)", region.ErrNoLeader, s.cfg.LeaderWait, last)
	}
	backoff := min(5*time.Millisecond<<min(attempt, 6), 250*time.Millisecond, left)
	t := time.NewTimer(backoff)
	defer t.Stop()
	var changed <-chan struct{}
	if g != nil {
		changed = g.leaderChanged()
	}
	select {
	case <-changed:
	case <-t.C:
	case <-ctx.Done():
		return ctxErr(ctx, "wait for a leader", last)
	case <-s.stop:
		return errClosed
	}
	return nil
}

func (s *Store) closed() bool {
	select {
	case <-s.stop:
		return true
	default:
		return false
	}
}
