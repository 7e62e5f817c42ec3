package raftlog

import (
	"bytes"
	"errors"
	"fmt"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/raft"
)

func open(t *testing.T, path string) *Store {
	t.Helper()
	s, err := Open(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

func entries(from, to uint64, term uint64) []*raft.Log {
	var out []*raft.Log
	for i := from; i <= to; i++ {
		out = append(out, &raft.Log{Index: i, Term: term, Type: raft.LogCommand, Data: []byte(fmt.Sprintf("entry-%d", i))})
	}
	return out
}

func checkBounds(t *testing.T, g *GroupLog, first, last uint64) {
	t.Helper()
	f, _ := g.FirstIndex()
	l, _ := g.LastIndex()
	if f != first || l != last {
		t.Fatalf("group %d: first %d last %d, want %d %d", g.gid, f, l, first, last)
	}
}

func checkEntry(t *testing.T, g *GroupLog, index, term uint64) {
	t.Helper()
	var l raft.Log
	if err := g.GetLog(index, &l); err != nil {
		t.Fatalf("group %d entry %d: %v", g.gid, index, err)
	}
	if l.Index != index || l.Term != term || string(l.Data) != fmt.Sprintf("entry-%d", index) {
		t.Fatalf("group %d entry %d = %+v", g.gid, index, l)
	}
}

// TestLogStore: the raft.LogStore contract, as raft uses it: append,
// read, compact a prefix after a snapshot, overwrite a suffix a new
// leader replaces, and the bounds of an empty log.
func TestLogStore(t *testing.T) {
	s := open(t, filepath.Join(t.TempDir(), "logs.db"))
	g := s.Group(3)
	checkBounds(t, g, 0, 0)
	var l raft.Log
	if err := g.GetLog(1, &l); !errors.Is(err, raft.ErrLogNotFound) {
		t.Fatalf("GetLog on an empty log = %v, want ErrLogNotFound", err)
	}
	if err := g.StoreLogs(entries(1, 100, 1)); err != nil {
		t.Fatal(err)
	}
	if err := g.StoreLog(entries(101, 101, 2)[0]); err != nil {
		t.Fatal(err)
	}
	checkBounds(t, g, 1, 101)
	checkEntry(t, g, 50, 1)
	checkEntry(t, g, 101, 2)

	// A snapshot covers 1..60: the prefix goes.
	if err := g.DeleteRange(1, 60); err != nil {
		t.Fatal(err)
	}
	checkBounds(t, g, 61, 101)
	if err := g.GetLog(60, &l); !errors.Is(err, raft.ErrLogNotFound) {
		t.Fatalf("a compacted entry: %v, want ErrLogNotFound", err)
	}
	// A new leader's log differs from 90 on: the suffix goes, then its
	// entries are written.
	if err := g.DeleteRange(90, 101); err != nil {
		t.Fatal(err)
	}
	checkBounds(t, g, 61, 89)
	if err := g.StoreLogs(entries(90, 95, 3)); err != nil {
		t.Fatal(err)
	}
	checkBounds(t, g, 61, 95)
	checkEntry(t, g, 92, 3)
	// Everything goes (a follower that installed a newer snapshot).
	if err := g.DeleteRange(0, 1<<63); err != nil {
		t.Fatal(err)
	}
	checkBounds(t, g, 0, 0)
}

// TestLogsSurviveReopen: what was stored is there after a restart, with
// its bounds, group by group; a dropped group is not.
func TestLogsSurviveReopen(t *testing.T) {
	path := filepath.Join(t.TempDir(), "logs.db")
	s, err := Open(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	for gid := uint64(0); gid < 4; gid++ {
		if err := s.Group(gid).StoreLogs(entries(1, 20+gid, 1)); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Group(1).DeleteRange(1, 5); err != nil {
		t.Fatal(err)
	}
	if err := s.Drop(2); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if err := s.Group(0).StoreLogs(entries(21, 21, 1)); err == nil {
		t.Fatal("a write after Close succeeded")
	}

	s = open(t, path)
	if got := len(s.Groups()); got != 3 {
		t.Errorf("%d groups after reopening, want 3 (group 2 was dropped)", got)
	}
	checkBounds(t, s.Group(0), 1, 20)
	checkBounds(t, s.Group(1), 6, 21)
	checkBounds(t, s.Group(2), 0, 0)
	checkBounds(t, s.Group(3), 1, 23)
	checkEntry(t, s.Group(3), 23, 1)
}

// TestGroupsCommitTogether: writes of many groups at once are all
// durable and answered, in far fewer commits than writes.
func TestGroupsCommitTogether(t *testing.T) {
	s := open(t, filepath.Join(t.TempDir(), "logs.db"))
	const groups, perGroup = 8, 50
	var wg sync.WaitGroup
	for gid := uint64(1); gid <= groups; gid++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			g := s.Group(gid)
			for i := uint64(1); i <= perGroup; i++ {
				if err := g.StoreLogs(entries(i, i, 1)); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	for gid := uint64(1); gid <= groups; gid++ {
		checkBounds(t, s.Group(gid), 1, perGroup)
		checkEntry(t, s.Group(gid), perGroup, 1)
	}
	commits := s.c.commits.Load()
	if commits >= groups*perGroup {
		t.Errorf("%d writes took %d commits; want the groups' writes committed together", groups*perGroup, commits)
	}
	t.Logf("%d writes of %d groups in %d commits", groups*perGroup, groups, commits)
}

// TestBoundsFollowCommitOrder: a compaction and an append of the same
// group from two goroutines (raft's snapshot and main loops) leave the
// bounds of what was committed last, whichever caller returns last.
func TestBoundsFollowCommitOrder(t *testing.T) {
	s := open(t, filepath.Join(t.TempDir(), "logs.db"))
	g := s.Group(1)
	if err := g.StoreLogs(entries(1, 1000, 1)); err != nil {
		t.Fatal(err)
	}
	for round := uint64(0); round < 50; round++ {
		var wg sync.WaitGroup
		wg.Add(2)
		next := 1001 + round
		go func() { defer wg.Done(); _ = g.StoreLogs(entries(next, next, 1)) }()
		go func() { defer wg.Done(); _ = g.DeleteRange(round*10+1, round*10+10) }()
		wg.Wait()
		checkBounds(t, g, round*10+11, next)
	}
}

// TestEncoding: every field of an entry round-trips, and a damaged
// encoding is refused.
func TestEncoding(t *testing.T) {
	at := time.Unix(1700000000, 123456789)
	for _, l := range []raft.Log{
		{Index: 1, Term: 1, Type: raft.LogCommand, Data: []byte("x"), AppendedAt: at},
		{Index: 1 << 40, Term: 7, Type: raft.LogConfiguration, Data: bytes.Repeat([]byte{0xab}, 70000), Extensions: []byte("ext")},
		{Index: 3, Term: 2, Type: raft.LogNoop},
	} {
		var got raft.Log
		b := encode(nil, &l)
		if err := decode(b, &got); err != nil {
			t.Fatalf("decode: %v", err)
		}
		if got.Index != l.Index || got.Term != l.Term || got.Type != l.Type || !bytes.Equal(got.Data, l.Data) ||
			!bytes.Equal(got.Extensions, l.Extensions) || !got.AppendedAt.Equal(l.AppendedAt) {
			t.Errorf("round trip of %+v gave %+v", l.Index, got.Index)
		}
		for cut := 0; cut < len(b); cut += max(1, len(b)/50) {
			if err := decode(b[:cut], &got); err == nil {
				t.Errorf("entry cut at %d of %d bytes decoded", cut, len(b))
			}
		}
		if err := decode(append(b, 0), &got); err == nil {
			t.Error("an entry with a trailing byte decoded")
		}
	}
}

// TestReadsAfterReopenAndGrowth: entries of a reopened log stay readable
// while the file grows (bbolt remaps its memory: a bucket's name kept
// from the reopening transaction once pointed into the old mapping).
func TestReadsAfterReopenAndGrowth(t *testing.T) {
	path := filepath.Join(t.TempDir(), "logs.db")
	s, err := Open(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	for gid := uint64(0); gid < 3; gid++ {
		if err := s.Group(gid).StoreLogs(entries(1, 10, 1)); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s = open(t, path)
	big := bytes.Repeat([]byte("x"), 1<<20)
	for i := uint64(11); i <= 60; i++ { // 50 MiB: several remaps
		if err := s.Group(9).StoreLogs([]*raft.Log{{Index: i, Term: 1, Data: big}}); err != nil {
			t.Fatal(err)
		}
	}
	for gid := uint64(0); gid < 3; gid++ {
		checkEntry(t, s.Group(gid), 1, 1)
		checkEntry(t, s.Group(gid), 10, 1)
	}
}
