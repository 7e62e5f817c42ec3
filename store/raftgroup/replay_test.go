package raftgroup

import (
	"fmt"
	"log/slog"
	"path/filepath"
	"testing"
	"time"

	"github.com/hashicorp/raft"

	"github.com/kvnode/kvnode/fsm"
	"github.com/kvnode/kvnode/fsm/codec"
	"github.com/kvnode/kvnode/region"
	"github.com/kvnode/kvnode/store/raftlog"
)

// replayLog is a group's log of n entries: a region's creation at 1, then
// one put of key k<i> per entry (a noop at 5, as raft writes after an
// election), all in term 1, with mark durable in it.
func replayLog(t *testing.T, n uint64, mark raftlog.Applied) (*raftlog.Store, *raftlog.GroupLog, []*raft.Log) {
	t.Helper()
	s, err := raftlog.Open(filepath.Join(t.TempDir(), "wal"), raftlog.Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	g := s.Group(1)
	var logs []*raft.Log
	for i := uint64(1); i <= n; i++ {
		l := &raft.Log{Index: i, Term: 1, Type: raft.LogCommand}
		switch i {
		case 1:
			l.Data = (&codec.Command{Op: codec.OpCreateRegion, Region: "r", Kind: region.Replicate}).Encode(nil)
		case 5:
			l.Type = raft.LogNoop
		default:
			l.Data = (&codec.Command{Op: codec.OpPut, Region: "r", Entries: []region.Entry{
				{Key: fmt.Sprintf("k%d", i), Value: []byte(fmt.Sprintf(`{"i":%d}`, i))},
			}}).Encode(nil)
		}
		logs = append(logs, l)
	}
	if err := g.StoreLogs(logs); err != nil {
		t.Fatal(err)
	}
	g.NoteApplied(mark)
	if err := s.Group(2).StoreLog(&raft.Log{Index: 1, Term: 1}); err != nil { // the commit that carries the mark
		t.Fatal(err)
	}
	return s, g, logs
}

func count(t *testing.T, f *fsm.FSM) int {
	t.Helper()
	n, err := f.Count("r", 0)
	if err != nil {
		return 0
	}
	return n
}

// TestReplayAppliesTheMarkedTailBeforeRaft: with a mark, the entries after
// the snapshot up to the mark's Through are applied with no leader; raft's
// own ApplyBatch waits until the replay is over, then skips what was
// replayed and applies the rest, each entry once.
func TestReplayAppliesTheMarkedTailBeforeRaft(t *testing.T) {
	_, g, logs := replayLog(t, 40, raftlog.Applied{From: 0, Through: 30})
	f := fsm.New(fsm.Options{})
	rep := newReplayer(f, f, g)
	if _, done, err := rep.restoreNewest(raft.NewInmemSnapshotStore()); err != nil || !done {
		t.Fatalf("restore with no snapshot: done %v, %v", done, err)
	}
	first, last := rep.plan(0)
	if first != 1 || last != 30 {
		t.Fatalf("plan after no snapshot = %d..%d, want 1..30", first, last)
	}
	rep.hold()
	applied := make(chan []interface{})
	go func() { applied <- rep.ApplyBatch(logs) }() // raft, once a leader commits
	select {
	case <-applied:
		t.Fatal("raft's ApplyBatch ran before the replay")
	case <-time.After(20 * time.Millisecond):
	}
	stop := make(chan struct{})
	rep.replay(g, first, last, stop, discard())
	if got, want := count(t, f), 28; got != want { // puts 2..30 but the noop at 5
		t.Fatalf("after the replay %d entries, want %d", got, want)
	}
	if got := f.AppliedIndex(); got != 30 {
		t.Fatalf("applied index after the replay %d, want 30", got)
	}
	out := <-applied
	for i, r := range out {
		if idx := logs[i].Index; idx <= 30 && r != nil {
			t.Fatalf("entry %d was applied again: %v", idx, r)
		} else if idx > 30 && logs[i].Type == raft.LogCommand {
			res, ok := r.(*codec.Result)
			if !ok || res.Err != nil {
				t.Fatalf("entry %d: %#v", idx, r)
			}
		}
	}
	if got, want := count(t, f), 38; got != want {
		t.Fatalf("after raft's apply %d entries, want %d", got, want)
	}
	// The state machine keeps slices of the entries the replay read
	// (values decoded in place): reading the log again, and scribbling
	// over what it returns, must leave them as they were.
	for i := uint64(1); i <= 40; i++ {
		var l raft.Log
		if err := g.GetLog(i, &l); err != nil {
			t.Fatal(err)
		}
		for j := range l.Data {
			l.Data[j] = 'X'
		}
	}
	for i := 2; i <= 30; i++ {
		if i == 5 {
			continue
		}
		v, err := f.Get("r", 0, fmt.Sprintf("k%d", i))
		if err != nil || string(v) != fmt.Sprintf(`{"i":%d}`, i) {
			t.Fatalf("k%d after the log was read again: %s, %v", i, v, err)
		}
	}
}

func discard() *slog.Logger { return slog.New(slog.DiscardHandler) }

// TestReplayPlan: a mark is used only after a snapshot at or past its From
// and only up to its Through; marks of an unknown restore point never.
func TestReplayPlan(t *testing.T) {
	for _, tc := range []struct {
		mark        raftlog.Applied
		snapshot    uint64
		first, last uint64
	}{
		{raftlog.Applied{From: 0, Through: 30}, 0, 1, 30},
		{raftlog.Applied{From: 0, Through: 30}, 12, 13, 30},
		{raftlog.Applied{From: 10, Through: 30}, 12, 13, 30},
		{raftlog.Applied{From: 10, Through: 30}, 10, 11, 30},
		{raftlog.Applied{From: 20, Through: 30}, 12, 1, 0}, // restored an older snapshot than the mark's
		{raftlog.Applied{From: noFrom, Through: 30}, 12, 1, 0},
		{raftlog.Applied{From: 0, Through: 30}, 30, 1, 0},
		{raftlog.Applied{From: 0, Through: 30}, 35, 1, 0},
		{raftlog.Applied{}, 0, 1, 0},
	} {
		_, g, _ := replayLog(t, 40, tc.mark)
		f := fsm.New(fsm.Options{})
		first, last := newReplayer(f, f, g).plan(tc.snapshot)
		if first != tc.first || last != tc.last {
			t.Errorf("mark %+v, snapshot at %d: plan %d..%d, want %d..%d", tc.mark, tc.snapshot, first, last, tc.first, tc.last)
		}
	}
	f := fsm.New(fsm.Options{})
	if first, last := newReplayer(f, f, raft.NewInmemStore()).plan(0); first <= last {
		t.Errorf("a log without marks: plan %d..%d", first, last)
	}
}

// TestReplayStopsAtAGap: an entry the log no longer holds ends the replay
// there; what comes after is left to raft.
func TestReplayStopsAtAGap(t *testing.T) {
	_, g, _ := replayLog(t, 40, raftlog.Applied{From: 0, Through: 30})
	if err := g.DeleteRange(1, 10); err != nil { // compacted past the (missing) snapshot
		t.Fatal(err)
	}
	f := fsm.New(fsm.Options{})
	rep := newReplayer(f, f, g)
	first, last := rep.plan(0)
	rep.hold()
	rep.replay(g, first, last, make(chan struct{}), discard())
	if got := f.AppliedIndex(); got != 0 {
		t.Fatalf("applied %d entries past a gap at 1", got)
	}
}
