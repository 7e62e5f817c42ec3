package raftgroup

import (
	"fmt"
	"path/filepath"
	"testing"

	"github.com/hashicorp/raft"
	raftboltdb "github.com/hashicorp/raft-boltdb/v2"

	"github.com/kvnode/kvnode/store/raftlog"
)

// TestMoveLogsFromTheGroupFile: entries a group's own raft.db held (the
// layout before the member-wide log) move into the member's log when the
// group opens, and only once: a second open finds nothing to move, and an
// open cut short after the copy copies again without harm.
func TestMoveLogsFromTheGroupFile(t *testing.T) {
	dir := t.TempDir()
	old, err := raftboltdb.NewBoltStore(filepath.Join(dir, "raft.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer old.Close()
	var logs []*raft.Log
	for i := uint64(5); i <= 600; i++ {
		logs = append(logs, &raft.Log{Index: i, Term: 2, Type: raft.LogCommand, Data: []byte(fmt.Sprint(i))})
	}
	if err := old.StoreLogs(logs); err != nil {
		t.Fatal(err)
	}
	if err := old.SetUint64([]byte("CurrentTerm"), 2); err != nil {
		t.Fatal(err)
	}
	shared, err := raftlog.Open(filepath.Join(dir, "wal"), raftlog.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer shared.Close()
	to := shared.Group(7)

	// A copy made before an interruption, then the real move.
	if err := to.StoreLogs(logs[:100]); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if err := moveLogs(old, to); err != nil {
			t.Fatal(err)
		}
	}
	if first, _ := to.FirstIndex(); first != 5 {
		t.Errorf("first index %d, want 5", first)
	}
	if last, _ := to.LastIndex(); last != 600 {
		t.Errorf("last index %d, want 600", last)
	}
	var l raft.Log
	if err := to.GetLog(321, &l); err != nil || string(l.Data) != "321" || l.Term != 2 {
		t.Errorf("entry 321 = %+v, %v", l, err)
	}
	if last, _ := old.LastIndex(); last != 0 {
		t.Errorf("the old file still holds entries up to %d", last)
	}
	if term, err := old.GetUint64([]byte("CurrentTerm")); err != nil || term != 2 {
		t.Errorf("the old file's term = %d, %v; the stable store stays there", term, err)
	}
}
