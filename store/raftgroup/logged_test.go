package raftgroup

import (
	"bytes"
	"io"
	"log/slog"
	"strings"
	"testing"

	"github.com/hashicorp/raft"
)

// raft's info lines about events kvnode logs itself go to debug; its
// other info lines stay at info.
func TestRaftLinesKvnodeReplacesAreDebug(t *testing.T) {
	var buf bytes.Buffer
	h := newHCLog(slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelInfo})), "raft")
	h.Info("snapshot complete up to", "index", 7)
	h.Info("updating configuration", "command", "AddNonvoter")
	h.Info("entering leader state")
	out := buf.String()
	if strings.Contains(out, "snapshot complete") || strings.Contains(out, "updating configuration") {
		t.Errorf("raft's lines about snapshots and configuration changes at info:\n%s", out)
	}
	if !strings.Contains(out, `msg="entering leader state"`) {
		t.Errorf("raft's other info lines lost:\n%s", out)
	}
}

// A snapshot written is one info line with its index, term, size and
// duration, however often raft closes the sink.
func TestSnapshotWrittenLoggedOnce(t *testing.T) {
	var buf bytes.Buffer
	logger := slog.New(slog.NewTextHandler(&buf, nil)).With("group", 3)
	store := loggedSnapshots{SnapshotStore: raft.NewInmemSnapshotStore(), logger: logger}
	sink, err := store.Create(raft.SnapshotVersionMax, 42, 5, raft.Configuration{}, 1, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := sink.Write([]byte("twelve bytes")); err != nil {
		t.Fatal(err)
	}
	_ = sink.Close()
	_ = sink.Close()
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	if len(lines) != 1 || !strings.Contains(lines[0], `msg="snapshot written" group=3 index=42 term=5 size=12 duration=`) {
		t.Errorf("log of one snapshot written:\n%s", buf.String())
	}
}

// A restore is one info line with the index the state machine reached
// and the bytes it read; a failed one is a warning.
func TestSnapshotRestoredLogged(t *testing.T) {
	var buf bytes.Buffer
	logger := slog.New(slog.NewTextHandler(&buf, nil)).With("group", 2)
	f := loggedRestore{BatchingFSM: fakeFSM{}, logger: logger, applied: func() uint64 { return 99 }}
	if err := f.Restore(io.NopCloser(strings.NewReader("0123456789abcdef"))); err != nil {
		t.Fatal(err)
	}
	if err := f.Restore(io.NopCloser(strings.NewReader("bad"))); err == nil {
		t.Fatal("a bad snapshot restored")
	}
	out := buf.String()
	if !strings.Contains(out, `level=INFO msg="snapshot restored" group=2 index=99 size=16 duration=`) ||
		!strings.Contains(out, `level=WARN msg="snapshot restore failed" group=2 read=3`) {
		t.Errorf("log of a restore and a failed one:\n%s", out)
	}
}

// fakeFSM reads its whole snapshot and refuses one that says "bad".
type fakeFSM struct{ raft.BatchingFSM }

func (fakeFSM) Restore(rc io.ReadCloser) error {
	data, err := io.ReadAll(rc)
	if err == nil && string(data) == "bad" {
		err = io.ErrUnexpectedEOF
	}
	return err
}
