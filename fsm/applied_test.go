package fsm

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/hashicorp/raft"
	"github.com/kvnode/kvnode/fsm/codec"
	"github.com/kvnode/kvnode/region"
)

// waitResult runs WaitApplied in a goroutine and returns its outcome channel.
func waitResult(ctx context.Context, f *FSM, index uint64) <-chan error {
	done := make(chan error, 1)
	go func() { done <- f.WaitApplied(ctx, index) }()
	return done
}

// receive waits (bounded) for a WaitApplied to return.
func receive(t *testing.T, done <-chan error, what string) error {
	t.Helper()
	select {
	case err := <-done:
		return err
	case <-time.After(10 * time.Second):
		t.Fatalf("%s: WaitApplied did not return within 10s", what)
		return nil
	}
}

// stillWaiting asserts that a WaitApplied has not returned yet.
func stillWaiting(t *testing.T, done <-chan error, what string) {
	t.Helper()
	select {
	case err := <-done:
		t.Fatalf("%s: WaitApplied returned %v early", what, err)
	case <-time.After(20 * time.Millisecond):
	}
}

func TestAppliedIndexTracksEveryEntry(t *testing.T) {
	n := newNode(t)
	if got := n.f.AppliedIndex(); got != 0 {
		t.Fatalf("AppliedIndex of a new FSM = %d, want 0", got)
	}
	n.create("r", region.Replicate)
	n.apply(codec.Command{Op: codec.OpDelete, Region: "r", Keys: []string{"missing"}}) // refused, still applied
	if got := n.f.AppliedIndex(); got != 2 {
		t.Errorf("AppliedIndex = %d, want 2", got)
	}
	n.f.ApplyBatch([]*raft.Log{
		{Index: 3, Type: raft.LogConfiguration},
		n.logAt(4, codec.Command{Op: codec.OpPut, Region: "r", Entries: entries("k", "{}")}),
	})
	if got := n.f.AppliedIndex(); got != 4 {
		t.Errorf("AppliedIndex after a batch ending at 4 = %d, want 4", got)
	}
}

func (n *node) logAt(index uint64, c codec.Command) *raft.Log {
	n.index = index - 1
	return n.log(c)
}

func TestWaitApplied(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	n := newNode(t)
	n.create("r", region.Replicate) // index 1

	if err := n.f.WaitApplied(ctx, 0); err != nil {
		t.Errorf("WaitApplied(0) = %v, want nil", err)
	}
	if err := n.f.WaitApplied(ctx, 1); err != nil {
		t.Errorf("WaitApplied(1) at index 1 = %v, want nil", err)
	}

	w3 := waitResult(ctx, n.f, 3)
	w5a := waitResult(ctx, n.f, 5)
	w5b := waitResult(ctx, n.f, 5)
	n.put("r", "a", `{}`) // 2
	stillWaiting(t, w3, "index 3 at 2")
	n.put("r", "b", `{}`) // 3
	if err := receive(t, w3, "index 3 at 3"); err != nil {
		t.Errorf("WaitApplied(3) = %v, want nil", err)
	}
	stillWaiting(t, w5a, "index 5 at 3")
	n.f.Apply(&raft.Log{Index: 5, Type: raft.LogConfiguration})
	for _, w := range []<-chan error{w5a, w5b} {
		if err := receive(t, w, "index 5 at 5"); err != nil {
			t.Errorf("WaitApplied(5) = %v, want nil", err)
		}
	}
}

func TestWaitAppliedContextEnds(t *testing.T) {
	f := New(Options{})
	ctx, cancel := context.WithCancel(context.Background())
	w := waitResult(ctx, f, 1)
	stillWaiting(t, w, "nothing applied")
	cancel()
	if err := receive(t, w, "after cancel"); !errors.Is(err, context.Canceled) {
		t.Errorf("WaitApplied after cancel = %v, want context.Canceled", err)
	}

	ctx, cancel = context.WithTimeout(context.Background(), 10*time.Millisecond)
	defer cancel()
	if err := f.WaitApplied(ctx, 1); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("WaitApplied past its deadline = %v, want context.DeadlineExceeded", err)
	}
}

func TestWaitAppliedWokenByRestore(t *testing.T) {
	src := newNode(t)
	src.create("r", region.Replicate)
	src.put("r", "a", `{}`)
	src.put("r", "b", `{}`) // index 3
	snap := persist(t, src.f)

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	f := New(Options{})
	w := waitResult(ctx, f, 3)
	stillWaiting(t, w, "before restore")
	if err := restore(f, snap); err != nil {
		t.Fatal(err)
	}
	if err := receive(t, w, "after restore"); err != nil {
		t.Errorf("WaitApplied(3) after restoring a snapshot at 3 = %v, want nil", err)
	}
}
