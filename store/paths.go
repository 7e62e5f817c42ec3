package store

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/kvnode/kvnode/fsm"
	"github.com/kvnode/kvnode/region"
)

// errClosed is returned once the store has been closed.
var errClosed = fmt.Errorf("%w: this node is shutting down", region.ErrNoLeader)

// apply replicates cmd through the control group and returns the state
// machine's result. The answer comes only after the entry is committed on a
// quorum and applied on the leader. Refusals decided by the state machine
// (key exists, CAS mismatch, ...) come back as res.Err.
//
// Any node may call apply: a follower forwards the encoded command to the
// leader. Failures that certainly did not append the entry (no leader, not
// the leader, leader unreachable) are retried until a leader answers,
// LeaderWait passes or ctx ends; any other failure is returned as is, and an
// unknown outcome is reported as region.ErrIndeterminate, never retried, so a
// put-if-absent or CAS is never applied twice by us.
func (s *Store) apply(ctx context.Context, cmd *fsm.Command) (*fsm.Result, error) {
	g := s.control()
	if g == nil {
		return nil, errClosed
	}
	data := cmd.Encode(nil)
	var last error
	var since time.Time
	for attempt := 0; ; attempt++ {
		res, err := s.applyOnce(ctx, g, data)
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
		if err := s.pause(ctx, g, attempt, since, last); err != nil {
			return nil, fmt.Errorf("%v on region %q: %w", cmd.Op, cmd.Region, err)
		}
	}
}

func (s *Store) applyOnce(ctx context.Context, g *group, data []byte) (*fsm.Result, error) {
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
	return s.client.apply(ctx, addr, g.id, data)
}

// applyLocal appends data on this node, which must be the leader.
func (s *Store) applyLocal(ctx context.Context, g *group, data []byte) (*fsm.Result, error) {
	timeout := 10 * time.Second
	if dl, ok := ctx.Deadline(); ok {
		timeout = time.Until(dl)
		if timeout <= 0 {
			return nil, ctxErr(ctx, "apply", nil)
		}
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
	res, ok := f.Response().(*fsm.Result)
	if !ok {
		return nil, fmt.Errorf("group %d: unexpected state machine response %T", g.id, f.Response())
	}
	return res, nil
}

// readGroup returns the control group once a read at consistency c may be
// served from this node's copy of it.
func (s *Store) readGroup(ctx context.Context, c region.Consistency) (*group, error) {
	g := s.control()
	if g == nil {
		return nil, errClosed
	}
	if c == region.Stale {
		return g, nil
	}
	var last error
	var since time.Time
	for attempt := 0; ; attempt++ {
		err := s.readBarrier(ctx, g)
		if err == nil {
			return g, nil
		}
		if !retryableRead(err) {
			return nil, fmt.Errorf("linearizable read: %w", err)
		}
		last = err
		if since.IsZero() {
			since = time.Now()
		}
		if err := s.pause(ctx, g, attempt, since, last); err != nil {
			return nil, fmt.Errorf("linearizable read: %w", err)
		}
	}
}

// readBarrier makes this node's FSM reflect every write acknowledged before
// the call: on the leader by a read-index round, on a follower by asking
// the leader for the read index and waiting until the local FSM applied it.
func (s *Store) readBarrier(ctx context.Context, g *group) error {
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
	if err := g.fsm.WaitApplied(ctx, idx); err != nil {
		return ctxErr(ctx, fmt.Sprintf("catch up to read index %d", idx), err)
	}
	return nil
}

// pause waits before a retry: until the group's leader changes, a short
// backoff passes, or gives up when ctx ends or LeaderWait has passed since
// the first failure.
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
	select {
	case <-g.leaderChanged():
	case <-t.C:
	case <-ctx.Done():
		return ctxErr(ctx, "wait for a leader", last)
	case <-s.stop:
		return errClosed
	}
	return nil
}
