package raftlog

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/raft"
)

func open(t *testing.T, dir string) *Store {
	t.Helper()
	s, err := Open(dir, Options{})
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
	s := open(t, filepath.Join(t.TempDir(), "wal"))
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
	path := filepath.Join(t.TempDir(), "wal")
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
	s := open(t, filepath.Join(t.TempDir(), "wal"))
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
	s := open(t, filepath.Join(t.TempDir(), "wal"))
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
// while the log grows by many segments (a bucket name kept from a
// transaction once pointed into bbolt's old mapping, when the log was a
// bbolt file).
func TestReadsAfterReopenAndGrowth(t *testing.T) {
	path := filepath.Join(t.TempDir(), "wal")
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

// segmentFiles lists the log's segment files.
func segmentFiles(t *testing.T, dir string) []string {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range ents {
		if strings.HasSuffix(e.Name(), ".wal") {
			out = append(out, filepath.Join(dir, e.Name()))
		}
	}
	return out
}

// TestTornTailIsCutOff: a write a crash cut short at the end of the log
// (a partial record, or garbage after the last record) is cut off at the
// next open; everything before it is intact and the log takes writes.
func TestTornTailIsCutOff(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "wal")
	s, err := Open(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Group(1).StoreLogs(entries(1, 10, 1)); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	files := segmentFiles(t, dir)
	last := files[len(files)-1]
	good, _ := os.ReadFile(last)
	for _, tail := range [][]byte{
		appendRecord(nil, []byte{kindAppend, 1, 1, 3, 'x', 'y', 'z'})[:9], // cut mid-record
		{0xde, 0xad, 0xbe, 0xef, 0x01, 0x00, 0x00, 0x00, 0x42},            // a bad checksum
		make([]byte, 4096), // zeros (a length of 0)
	} {
		if err := os.WriteFile(last, append(append([]byte(nil), good...), tail...), 0o640); err != nil {
			t.Fatal(err)
		}
		s = open(t, dir)
		checkBounds(t, s.Group(1), 1, 10)
		checkEntry(t, s.Group(1), 10, 1)
		if err := s.Group(1).StoreLogs(entries(11, 11, 1)); err != nil {
			t.Fatal(err)
		}
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
		s = open(t, dir)
		checkBounds(t, s.Group(1), 1, 11)
		checkEntry(t, s.Group(1), 11, 1)
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
	}
}

// TestDamageBeforeTheTailIsRefused: a record that fails its checksum in a
// segment that is not the last cannot be a write a crash cut short: the
// log refuses to open, naming the segment, instead of dropping what
// follows.
func TestDamageBeforeTheTailIsRefused(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "wal")
	s, err := Open(dir, Options{SegmentBytes: 1 << 10})
	if err != nil {
		t.Fatal(err)
	}
	for i := uint64(1); i <= 100; i++ {
		if err := s.Group(1).StoreLogs(entries(i, i, 1)); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	files := segmentFiles(t, dir)
	if len(files) < 3 {
		t.Fatalf("%d segments, want several", len(files))
	}
	b, _ := os.ReadFile(files[1])
	b[len(segmentHeader)+recordHeader+3] ^= 0xff
	if err := os.WriteFile(files[1], b, 0o640); err != nil {
		t.Fatal(err)
	}
	if _, err := Open(dir, Options{SegmentBytes: 1 << 10}); !errors.Is(err, ErrDamaged) || !strings.Contains(err.Error(), filepath.Base(files[1])) {
		t.Fatalf("open with a damaged middle segment = %v, want ErrDamaged naming %s", err, filepath.Base(files[1]))
	}
}

// TestSegmentsAreCollected: once a group's log is compacted, the segments
// that held only what it no longer needs are deleted; a group that wrote
// a little long ago (an idle partition group) does not keep them: its
// few entries move forward, and survive a restart.
func TestSegmentsAreCollected(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "wal")
	o := Options{SegmentBytes: 4 << 10}
	s, err := Open(dir, o)
	if err != nil {
		t.Fatal(err)
	}
	idle := s.Group(2)
	if err := idle.StoreLogs(entries(1, 3, 1)); err != nil {
		t.Fatal(err)
	}
	busy := s.Group(1)
	for i := uint64(1); i <= 2000; i += 10 {
		if err := busy.StoreLogs(entries(i, i+9, 1)); err != nil {
			t.Fatal(err)
		}
		if i > 100 {
			if err := busy.DeleteRange(i-100, i-91); err != nil { // a snapshot's compaction
				t.Fatal(err)
			}
		}
	}
	if n := len(segmentFiles(t, dir)); n > tidyAfter+2 {
		t.Errorf("%d segments left after the busy group compacted; want old ones deleted", n)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s = open(t, dir)
	checkBounds(t, s.Group(2), 1, 3)
	for i := uint64(1); i <= 3; i++ {
		checkEntry(t, s.Group(2), i, 1)
	}
	checkBounds(t, s.Group(1), 1901, 2000)
	checkEntry(t, s.Group(1), 1950, 1)
}

// TestCrashAtAnyPoint: however a crash cuts the log's last segment, each
// group's log reopens as exactly the entries of a prefix of its writes
// (all of the acknowledged ones up to the cut, none invented).
func TestCrashAtAnyPoint(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "wal")
	s, err := Open(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for gid := uint64(1); gid <= 3; gid++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := uint64(1); i <= 40; i++ {
				if err := s.Group(gid).StoreLogs(entries(i, i, gid)); err != nil {
					t.Error(err)
				}
			}
		}()
	}
	wg.Wait()
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	files := segmentFiles(t, dir)
	full, _ := os.ReadFile(files[len(files)-1])
	for cut := len(segmentHeader); cut <= len(full); cut += 7 {
		cdir := filepath.Join(t.TempDir(), "cut")
		if err := os.MkdirAll(cdir, 0o750); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(cdir, filepath.Base(files[len(files)-1])), full[:cut], 0o640); err != nil {
			t.Fatal(err)
		}
		c, err := Open(cdir, Options{NoSync: true})
		if err != nil {
			t.Fatalf("cut at %d: %v", cut, err)
		}
		for gid := uint64(1); gid <= 3; gid++ {
			g := c.Group(gid)
			first, _ := g.FirstIndex()
			last, _ := g.LastIndex()
			if last > 0 && first != 1 {
				t.Fatalf("cut at %d: group %d holds %d-%d, want a prefix from 1", cut, gid, first, last)
			}
			for i := uint64(1); i <= last; i++ {
				checkEntry(t, g, i, gid)
			}
		}
		_ = c.Close()
	}
}

// TestReplayAcrossWindows: at open the log is read a window at a time;
// records that straddle a window's end, and a record larger than the
// window, come back whole, in order, at their places.
func TestReplayAcrossWindows(t *testing.T) {
	path := filepath.Join(t.TempDir(), "wal")
	s, err := Open(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	g := s.Group(1)
	// 3,000 entries of 3,001 bytes: ~9 MiB, past two windows, with
	// record boundaries that do not line up with the window's.
	data := func(i uint64) []byte {
		return bytes.Repeat([]byte{byte(i)}, 3001)
	}
	var batch []*raft.Log
	for i := uint64(1); i <= 3000; i++ {
		batch = append(batch, &raft.Log{Index: i, Term: 2, Type: raft.LogCommand, Data: data(i)})
		if len(batch) == 7 || i == 3000 {
			if err := g.StoreLogs(batch); err != nil {
				t.Fatal(err)
			}
			batch = nil
		}
	}
	huge := bytes.Repeat([]byte("h"), replayWindow+12345)
	if err := g.StoreLog(&raft.Log{Index: 3001, Term: 2, Type: raft.LogCommand, Data: huge}); err != nil {
		t.Fatal(err)
	}
	if err := g.StoreLog(&raft.Log{Index: 3002, Term: 2, Type: raft.LogCommand, Data: data(3002)}); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s = open(t, path)
	g = s.Group(1)
	checkBounds(t, g, 1, 3002)
	for i := uint64(1); i <= 3002; i++ {
		var l raft.Log
		if err := g.GetLog(i, &l); err != nil {
			t.Fatalf("entry %d: %v", i, err)
		}
		want := data(i)
		if i == 3001 {
			want = huge
		}
		if l.Index != i || l.Term != 2 || !bytes.Equal(l.Data, want) {
			t.Fatalf("entry %d came back as index %d term %d, %d bytes", i, l.Index, l.Term, len(l.Data))
		}
	}
}

// TestGetLogOwnsItsBuffer: an entry's Data is the caller's alone: changing
// it (or appending to it) changes neither what a second read returns nor
// another entry. The state machine keeps slices of it as stored values.
func TestGetLogOwnsItsBuffer(t *testing.T) {
	s := open(t, filepath.Join(t.TempDir(), "wal"))
	g := s.Group(1)
	if err := g.StoreLogs(entries(1, 2, 1)); err != nil {
		t.Fatal(err)
	}
	var a, b raft.Log
	if err := g.GetLog(1, &a); err != nil {
		t.Fatal(err)
	}
	if err := g.GetLog(1, &b); err != nil {
		t.Fatal(err)
	}
	for i := range a.Data {
		a.Data[i] = 'X'
	}
	_ = append(a.Data, "more"...) // capped: must not write past Data
	if string(b.Data) != "entry-1" {
		t.Fatalf("a second read of entry 1 saw the first one's change: %q", b.Data)
	}
	checkEntry(t, g, 1, 1)
	checkEntry(t, g, 2, 1)
	var c raft.Log
	if err := g.GetLog(1, &c); err != nil {
		t.Fatal(err)
	}
	if cap(c.Data) != len(c.Data) {
		t.Fatalf("Data has room past its end (%d of %d): an append would write into the entry's other bytes", len(c.Data), cap(c.Data))
	}
}

// TestAppliedMarks: a noted mark is written with the next commit (never on
// its own), survives a reopen, and a deletion of a suffix that reaches
// below it lowers it, live and when the log is read back; a prefix
// deletion (compaction) leaves it, a drop clears it.
func TestAppliedMarks(t *testing.T) {
	path := filepath.Join(t.TempDir(), "wal")
	s, err := Open(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	g, other := s.Group(1), s.Group(2)
	if err := g.StoreLogs(entries(1, 20, 1)); err != nil {
		t.Fatal(err)
	}
	g.NoteApplied(Applied{From: 0, Through: 15})
	if got := g.Applied(); got != (Applied{}) {
		t.Fatalf("a mark noted but not yet committed is durable: %+v", got)
	}
	if err := other.StoreLogs(entries(1, 1, 1)); err != nil { // any group's commit carries it
		t.Fatal(err)
	}
	if got := g.Applied(); got != (Applied{From: 0, Through: 15}) {
		t.Fatalf("after the next commit: %+v", got)
	}
	if err := g.DeleteRange(1, 5); err != nil { // compaction
		t.Fatal(err)
	}
	if got := g.Applied(); got != (Applied{From: 0, Through: 15}) {
		t.Fatalf("a prefix deletion changed the mark: %+v", got)
	}
	if err := g.DeleteRange(12, 20); err != nil { // a suffix reaching below the mark
		t.Fatal(err)
	}
	if got := g.Applied(); got != (Applied{From: 0, Through: 11}) {
		t.Fatalf("after a suffix deletion from 12: %+v", got)
	}
	if err := g.StoreLogs(entries(12, 30, 2)); err != nil {
		t.Fatal(err)
	}
	g.NoteApplied(Applied{From: 10, Through: 14}) // as after a restore at 10
	g.NoteApplied(Applied{From: 10, Through: 25}) // the newest wins
	if err := other.StoreLogs(entries(2, 2, 1)); err != nil {
		t.Fatal(err)
	}
	g.NoteApplied(Applied{From: 10, Through: 29}) // never committed: lost
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}

	s, err = Open(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	g = s.Group(1)
	if got := g.Applied(); got != (Applied{From: 10, Through: 25}) {
		t.Fatalf("after reopen: %+v", got)
	}
	if err := g.DeleteRange(20, 30); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s = open(t, path)
	g = s.Group(1)
	if got := g.Applied(); got != (Applied{From: 10, Through: 19}) {
		t.Fatalf("a suffix deletion after the mark, read back: %+v", got)
	}
	if err := s.Drop(1); err != nil {
		t.Fatal(err)
	}
	if got := s.Group(1).Applied(); got != (Applied{}) {
		t.Fatalf("after a drop: %+v", got)
	}
}

// TestHolds: whether a range of entries is all there, and which of them
// change raft's configuration, as written and as read back at open.
func TestHolds(t *testing.T) {
	path := filepath.Join(t.TempDir(), "wal")
	s, err := Open(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	logs := entries(1, 20, 1)
	logs[0].Type = raft.LogConfiguration
	logs[9].Type = raft.LogConfiguration
	logs[4].Type = raft.LogNoop
	if err := s.Group(1).StoreLogs(logs); err != nil {
		t.Fatal(err)
	}
	check := func(g *GroupLog) {
		t.Helper()
		if configs, ok := g.Holds(1, 20); !ok || fmt.Sprint(configs) != "[1 10]" {
			t.Errorf("Holds(1, 20) = %v, %v; want [1 10], true", configs, ok)
		}
		if configs, ok := g.Holds(2, 9); !ok || len(configs) != 0 {
			t.Errorf("Holds(2, 9) = %v, %v; want none, true", configs, ok)
		}
		for _, r := range [][2]uint64{{0, 5}, {15, 21}, {6, 5}} {
			if _, ok := g.Holds(r[0], r[1]); ok {
				t.Errorf("Holds(%d, %d) is true", r[0], r[1])
			}
		}
	}
	check(s.Group(1))
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s = open(t, path)
	check(s.Group(1))
	if err := s.Group(1).DeleteRange(1, 3); err != nil {
		t.Fatal(err)
	}
	if _, ok := s.Group(1).Holds(1, 20); ok {
		t.Error("Holds(1, 20) is true after entries 1-3 were deleted")
	}
}
