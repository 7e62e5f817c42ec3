package raftgroup

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/hashicorp/raft"

	"github.com/kvnode/kvnode/region"
)

// TestBatcherDropsCommandsWhoseCallerGaveUp: a command still queued behind
// the group's entry in flight when its caller's deadline passes is taken out
// and never sent, and its caller is told so (a definite 503, not "outcome
// unknown"); a queued command whose caller already left is dropped when the
// next batch is formed. They used to be committed whatever the deadline.
func TestBatcherDropsCommandsWhoseCallerGaveUp(t *testing.T) {
	b := newBatcher(nil)
	b.inflight = maxInflightBatches // an entry of the group is being committed

	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	_, err := b.apply(ctx, []byte("cmd"))
	if err == nil || errors.Is(err, region.ErrIndeterminate) || !errors.Is(err, region.ErrNoLeader) {
		t.Errorf("queued command past its deadline: %v; want a definite 503 (not sent)", err)
	}
	if len(b.queue) != 0 {
		t.Errorf("%d commands left in the queue, want 0", len(b.queue))
	}

	gone, stop := context.WithCancel(context.Background())
	stop()
	p := &pendingApply{ctx: gone, data: []byte("cmd"), done: make(chan applyOutcome, 1)}
	live := &pendingApply{ctx: context.Background(), data: []byte("cmd2"), done: make(chan applyOutcome, 1)}
	b.queue = []*pendingApply{p, live}
	batch := b.takeLocked()
	if len(batch) != 1 || batch[0] != live {
		t.Errorf("batch = %d commands, want only the live one", len(batch))
	}
	select {
	case o := <-p.done:
		if o.err == nil || errors.Is(o.err, region.ErrIndeterminate) {
			t.Errorf("dropped command answered %v, want a definite error", o.err)
		}
	default:
		t.Error("the dropped command's caller got no answer")
	}
}

// TestStableStoreDropsWritesAfterClose: a late heartbeat's term save after
// the group closed is dropped, not an error (raft panics on one).
func TestStableStoreDropsWritesAfterClose(t *testing.T) {
	mem := raft.NewInmemStore()
	s := &stableStore{StableStore: mem}
	if err := s.SetUint64([]byte("CurrentTerm"), 3); err != nil {
		t.Fatal(err)
	}
	s.close()
	if err := s.SetUint64([]byte("CurrentTerm"), 4); err != nil {
		t.Fatalf("SetUint64 after close: %v, want it dropped", err)
	}
	if err := s.Set([]byte("k"), []byte("v")); err != nil {
		t.Fatalf("Set after close: %v, want it dropped", err)
	}
	if v, _ := mem.GetUint64([]byte("CurrentTerm")); v != 3 {
		t.Errorf("term after close = %d, want 3 (the later save dropped)", v)
	}
}
