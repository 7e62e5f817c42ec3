package raftgroup

import (
	"errors"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"
)

// sinkRecorder counts snapshot outcomes.
type sinkRecorder struct {
	Observer // nil: only the snapshot methods are called
	written  int
	size     int64
	failed   int
}

func (r *sinkRecorder) SnapshotWritten(_ time.Duration, size int64) {
	r.written, r.size = r.written+1, size
}
func (r *sinkRecorder) SnapshotFailed() { r.failed++ }

// TestObservedSnapshots: a snapshot written to the end counts as written
// with its size, once however often it is closed; one raft cancels, or
// whose store cannot create it, as failed.
func TestObservedSnapshots(t *testing.T) {
	dir := t.TempDir()
	fss, err := raft.NewFileSnapshotStoreWithLogger(dir, 2, hclog.NewNullLogger())
	if err != nil {
		t.Fatal(err)
	}
	rec := &sinkRecorder{}
	s := observedSnapshots{SnapshotStore: fss, obs: rec}

	sink, err := s.Create(raft.SnapshotVersionMax, 10, 2, raft.Configuration{}, 1, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := sink.Write([]byte("12345")); err != nil {
		t.Fatal(err)
	}
	if _, err := sink.Write([]byte("678")); err != nil {
		t.Fatal(err)
	}
	if err := sink.Close(); err != nil {
		t.Fatal(err)
	}
	_ = sink.Close() // raft closes what the state machine's Persist closed
	if rec.written != 1 || rec.size != 8 || rec.failed != 0 {
		t.Errorf("closed: %d written (%d bytes), %d failed; want 1 (8 bytes), 0", rec.written, rec.size, rec.failed)
	}

	sink, err = s.Create(raft.SnapshotVersionMax, 11, 2, raft.Configuration{}, 1, nil)
	if err != nil {
		t.Fatal(err)
	}
	_ = sink.Cancel()
	if rec.written != 1 || rec.failed != 1 {
		t.Errorf("cancelled: %d written, %d failed; want 1, 1", rec.written, rec.failed)
	}

	bad := observedSnapshots{SnapshotStore: failingStore{fss}, obs: rec}
	if _, err := bad.Create(raft.SnapshotVersionMax, 12, 2, raft.Configuration{}, 1, nil); err == nil {
		t.Fatal("the failing store created a snapshot")
	}
	if rec.failed != 2 {
		t.Errorf("create failed: %d failures counted, want 2", rec.failed)
	}
}

// failingStore cannot create snapshots (a full disk).
type failingStore struct{ raft.SnapshotStore }

func (failingStore) Create(raft.SnapshotVersion, uint64, uint64, raft.Configuration, uint64, raft.Transport) (raft.SnapshotSink, error) {
	return nil, errors.New("no space left on device")
}
