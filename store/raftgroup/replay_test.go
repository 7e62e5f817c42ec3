package raftgroup

import (
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"

	"github.com/kvnode/kvnode/fsm"
	"github.com/kvnode/kvnode/fsm/codec"
	"github.com/kvnode/kvnode/region"
	"github.com/kvnode/kvnode/store/raftlog"
)

// replayLog is a group's log of n entries: the configuration (one voter,
// "a") at 1, a region's creation at 2, then one put of key k<i> per entry
// (a noop at 5, as raft writes after an election), all in term 1, with
// mark durable in it.
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
			l.Type = raft.LogConfiguration
			l.Data = raft.EncodeConfiguration(replayConf)
		case 2:
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

var replayConf = raft.Configuration{Servers: []raft.Server{{Suffrage: raft.Voter, ID: "a", Address: "a"}}}

// TestReplayAppliesTheMarkedTail: with a mark, the entries after the
// snapshot up to the mark's Through are applied with no leader, and the
// listing raft starts from says so (index, term, configuration); raft's
// ApplyBatch of entries the replay applied skips them, applies the rest,
// each entry once.
func TestReplayAppliesTheMarkedTail(t *testing.T) {
	_, g, logs := replayLog(t, 40, raftlog.Applied{From: 0, Through: 30})
	f := fsm.New(fsm.Options{})
	rep := newReplayer(f, f, g)
	if snap, done, err := restoreNewest(rep, raft.NewInmemSnapshotStore()); err != nil || !done || snap != nil {
		t.Fatalf("restore with no snapshot: %v, done %v, %v", snap, done, err)
	}
	first, last := rep.plan(0)
	if first != 1 || last != 30 {
		t.Fatalf("plan after no snapshot = %d..%d, want 1..30", first, last)
	}
	at, err := rep.prepare(g, first, last, nil)
	if err != nil || at == nil || at.Index != 30 || at.Term != 1 || at.ConfigurationIndex != 1 || len(at.Configuration.Servers) != 1 {
		t.Fatalf("listing for the replay: %+v, %v", at, err)
	}
	rep.hold()
	early := make(chan []interface{})
	go func() { early <- rep.ApplyBatch(logs[30:31]) }() // raft's, as soon as it runs
	select {
	case <-early:
		t.Fatal("raft's ApplyBatch ran before the replay")
	case <-time.After(20 * time.Millisecond):
	}
	rep.replay(g, first, last, make(chan struct{}), discard())
	if r, ok := (<-early)[0].(*codec.Result); !ok || r.Err != nil {
		t.Fatalf("entry 31 after the replay: %#v", r)
	}
	if got, want := count(t, f), 28; got != want { // puts 3..31 but the noop at 5
		t.Fatalf("after the replay %d entries, want %d", got, want)
	}
	if got := f.AppliedIndex(); got != 31 {
		t.Fatalf("applied index after the replay and entry 31 %d, want 31", got)
	}
	// Were raft to apply from the start all the same (no listing):
	out := rep.ApplyBatch(logs)
	for i, r := range out {
		if idx := logs[i].Index; idx <= 31 && r != nil {
			t.Fatalf("entry %d was applied again: %v", idx, r)
		} else if idx > 31 && logs[i].Type == raft.LogCommand {
			res, ok := r.(*codec.Result)
			if !ok || res.Err != nil {
				t.Fatalf("entry %d: %#v", idx, r)
			}
		}
	}
	if got, want := count(t, f), 37; got != want {
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
	for i := 3; i <= 30; i++ {
		if i == 5 {
			continue
		}
		v, err := f.Get("r", 0, fmt.Sprintf("k%d", i))
		if err != nil || string(v) != fmt.Sprintf(`{"i":%d}`, i) {
			t.Fatalf("k%d after the log was read again: %s, %v", i, v, err)
		}
	}
}

// TestRaftStartsAfterTheReplay: a real raft instance started with the
// replay's listing applies nothing the replay applied, has the listing's
// configuration, and goes on from there (elects itself, commits, applies
// entries 31-40 and a new one).
func TestRaftStartsAfterTheReplay(t *testing.T) {
	_, g, _ := replayLog(t, 40, raftlog.Applied{From: 0, Through: 30})
	f := fsm.New(fsm.Options{})
	rep := newReplayer(f, f, g)
	snaps := &startSnapshots{SnapshotStore: raft.NewInmemSnapshotStore()}
	if _, done, err := restoreNewest(rep, snaps); err != nil || !done {
		t.Fatal(done, err)
	}
	first, last := rep.plan(0)
	at, err := rep.prepare(g, first, last, nil)
	if err != nil || at == nil {
		t.Fatal(at, err)
	}
	snaps.at.Store(at)
	if list, _ := snaps.List(); len(list) != 1 || list[0].Index != 30 {
		t.Fatalf("listing while raft starts: %+v", list)
	}
	rep.hold()
	stop := make(chan struct{})
	replayed := make(chan struct{})
	go func() {
		defer close(replayed)
		time.Sleep(100 * time.Millisecond) // raft runs, and elects, meanwhile
		rep.replay(g, first, last, stop, discard())
	}()
	defer func() { <-replayed }()
	if _, _, err := snaps.Open(snaps.at.Load().ID); err == nil {
		t.Fatal("the replay's listing opened as a snapshot")
	}
	cfg := raft.DefaultConfig()
	cfg.LocalID = "a"
	cfg.NoSnapshotRestoreOnStart = true
	cfg.HeartbeatTimeout, cfg.ElectionTimeout, cfg.LeaderLeaseTimeout = 50*time.Millisecond, 50*time.Millisecond, 50*time.Millisecond
	cfg.Logger = newHCLog(discard(), "raft")
	_, trans := raft.NewInmemTransport("a")
	r, err := raft.NewRaft(cfg, rep, g, raft.NewInmemStore(), snaps, trans)
	snaps.started()
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = r.Shutdown().Error() }()
	if list, _ := snaps.List(); len(list) != 0 {
		t.Fatalf("listing once raft runs: %+v", list)
	}
	if got := r.AppliedIndex(); got < 30 {
		t.Fatalf("raft's applied index at start %d, want at least 30", got)
	}
	conf := r.GetConfiguration()
	if err := conf.Error(); err != nil || len(conf.Configuration().Servers) != 1 {
		t.Fatalf("configuration %+v, %v", conf.Configuration(), err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for r.State() != raft.Leader {
		if time.Now().After(deadline) {
			t.Fatal("no leader")
		}
		time.Sleep(10 * time.Millisecond)
	}
	put := (&codec.Command{Op: codec.OpPut, Region: "r", Entries: []region.Entry{{Key: "new", Value: []byte(`{"n":1}`)}}}).Encode(nil)
	if err := r.Apply(put, 5*time.Second).Error(); err != nil {
		t.Fatal(err)
	}
	if got, want := count(t, f), 38; got != want { // 27 replayed, 10 more, the new one
		t.Fatalf("%d entries, want %d", got, want)
	}
}

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

// TestReplayNeedsTheWholeRange: a log that lacks an entry of the range, or
// a range without a known configuration, is left to raft.
func TestReplayNeedsTheWholeRange(t *testing.T) {
	_, g, _ := replayLog(t, 40, raftlog.Applied{From: 0, Through: 30})
	if err := g.DeleteRange(1, 10); err != nil { // compacted past the (missing) snapshot
		t.Fatal(err)
	}
	f := fsm.New(fsm.Options{})
	rep := newReplayer(f, f, g)
	first, last := rep.plan(0)
	if at, err := rep.prepare(g, first, last, nil); at != nil || err != nil {
		t.Fatalf("a listing over a gap at 1: %+v, %v", at, err)
	}
	// Nor without a configuration in the log or a snapshot.
	_, g2, _ := replayLog(t, 40, raftlog.Applied{From: 0, Through: 30})
	if at, err := rep.prepare(g2, 2, 30, nil); at != nil || err != nil {
		t.Fatalf("a listing with no configuration known: %+v, %v", at, err)
	}
	snap := &raft.SnapshotMeta{Index: 1, Configuration: replayConf, ConfigurationIndex: 1}
	if at, err := rep.prepare(g2, 2, 30, snap); at == nil || err != nil || at.ConfigurationIndex != 1 {
		t.Fatalf("a listing after a snapshot at 1: %+v, %v", at, err)
	}
}

func discard() *slog.Logger { return slog.New(slog.DiscardHandler) }

// TestRestoreNewest: the newest snapshot is restored before raft starts and
// its index starts the replay; one that does not restore is left to raft,
// with nothing replayed (the restore point is then unknown).
func TestRestoreNewest(t *testing.T) {
	_, g, logs := replayLog(t, 40, raftlog.Applied{From: 0, Through: 30})
	store := raft.NewInmemSnapshotStore()
	snapshotAt12(t, logs, store)
	f := fsm.New(fsm.Options{})
	rep := newReplayer(f, f, g)
	meta, done, err := restoreNewest(rep, store)
	if err != nil || !done || meta == nil || meta.Index != 12 || f.AppliedIndex() != 12 {
		t.Fatalf("restore: %+v, done %v, %v; applied %d", meta, done, err, f.AppliedIndex())
	}
	if first, last := rep.plan(meta.Index); first != 13 || last != 30 {
		t.Fatalf("plan after a snapshot at 12: %d..%d, want 13..30", first, last)
	}

	broken := raft.NewInmemSnapshotStore()
	_, trans := raft.NewInmemTransport("a")
	sink, err := broken.Create(raft.SnapshotVersionMax, 12, 1, replayConf, 1, trans)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := sink.Write([]byte("not a snapshot")); err != nil {
		t.Fatal(err)
	}
	if err := sink.Close(); err != nil {
		t.Fatal(err)
	}
	// A snapshot whose bytes the state machine cannot read: the in-memory
	// store checks no checksum, so it opens, and the restore fails
	// (group.Open's start then stops the member: raft was told of it).
	f = fsm.New(fsm.Options{})
	rep = newReplayer(f, f, g)
	if meta, done, err := restoreNewest(rep, broken); err == nil || !done || meta == nil {
		t.Fatalf("a snapshot that does not restore: %+v, done %v, %v", meta, done, err)
	}
	if rep.from.Load() != noFrom {
		t.Fatalf("restore point after a failed restore %d, want unknown", rep.from.Load())
	}
}

// TestDamagedSnapshotLeftToRaft: raft's file store checks a snapshot's
// CRC-64 as openNewest opens it, so a damaged newest snapshot is found
// before raft starts and left to raft's own restore (which falls back to
// older ones), with nothing replayed.
func TestDamagedSnapshotLeftToRaft(t *testing.T) {
	_, g, logs := replayLog(t, 40, raftlog.Applied{From: 0, Through: 30})
	dir := t.TempDir()
	store, err := raft.NewFileSnapshotStoreWithLogger(dir, 2, hclog.NewNullLogger())
	if err != nil {
		t.Fatal(err)
	}
	snapshotAt12(t, logs, store)
	f := fsm.New(fsm.Options{})
	rep := newReplayer(f, f, g)
	if meta, rc, done, err := rep.openNewest(store, discard()); err != nil || !done || meta == nil || rc == nil {
		t.Fatalf("an intact snapshot: %+v, done %v, %v", meta, done, err)
	} else {
		_ = rc.Close()
	}
	state, err := filepath.Glob(filepath.Join(dir, "snapshots", "*", "state.bin"))
	if err != nil || len(state) != 1 {
		t.Fatalf("the snapshot's state file: %v, %v", state, err)
	}
	data, err := os.ReadFile(state[0])
	if err != nil {
		t.Fatal(err)
	}
	data[len(data)/2] ^= 0xff
	if err := os.WriteFile(state[0], data, 0o600); err != nil {
		t.Fatal(err)
	}
	if meta, rc, done, err := rep.openNewest(store, discard()); err != nil || done || meta != nil || rc != nil {
		t.Fatalf("a damaged snapshot: %+v, done %v, %v", meta, done, err)
	}
}

// snapshotAt12 writes to store a snapshot of a state machine that applied
// logs 1..12.
func snapshotAt12(t *testing.T, logs []*raft.Log, store raft.SnapshotStore) {
	t.Helper()
	src := fsm.New(fsm.Options{})
	src.ApplyBatch(logs[:12])
	snap, err := src.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	_, trans := raft.NewInmemTransport("a")
	sink, err := store.Create(raft.SnapshotVersionMax, 12, 1, replayConf, 1, trans)
	if err != nil {
		t.Fatal(err)
	}
	if err := snap.Persist(sink); err != nil {
		t.Fatal(err)
	}
}

// restoreNewest opens and restores the newest snapshot of snaps in one
// step, as group.Open's start does beside raft.
func restoreNewest(rep *replayer, snaps raft.SnapshotStore) (*raft.SnapshotMeta, bool, error) {
	meta, rc, done, err := rep.openNewest(snaps, discard())
	if err != nil || !done {
		return meta, done, err
	}
	return meta, true, rep.restore(meta, rc)
}
