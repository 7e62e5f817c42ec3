package raftgroup

import (
	"io"
	"log/slog"
	"time"

	"github.com/hashicorp/raft"

	"github.com/kvnode/kvnode/fsm"
)

// A group logs each snapshot it writes and each restore of its state
// machine once, at info level, with the group, index, size and duration
// (operators' questions: which group, how far, how big, how slow).
// hashicorp/raft's own lines about them say less, in several lines each
// and, before the adapter added the group, without saying which group:
// replacedByKvnode (hclog.go) moves those to debug.

// loggedSnapshots logs every snapshot written to the group's store: one
// it took, or one its leader sent it.
type loggedSnapshots struct {
	raft.SnapshotStore
	logger *slog.Logger
}

func (s loggedSnapshots) Create(version raft.SnapshotVersion, index, term uint64, configuration raft.Configuration, configurationIndex uint64, trans raft.Transport) (raft.SnapshotSink, error) {
	sink, err := s.SnapshotStore.Create(version, index, term, configuration, configurationIndex, trans)
	if err != nil {
		return nil, err
	}
	return &loggedSink{SnapshotSink: sink, logger: s.logger, index: index, term: term, start: time.Now()}, nil
}

// loggedSink is one snapshot being written; the first Close or Cancel
// decides what is logged (raft closes a sink the state machine closed).
type loggedSink struct {
	raft.SnapshotSink
	logger      *slog.Logger
	index, term uint64
	start       time.Time
	size        int64
	done        bool
}

func (s *loggedSink) Write(p []byte) (int, error) {
	n, err := s.SnapshotSink.Write(p)
	s.size += int64(n)
	return n, err
}

func (s *loggedSink) Close() error {
	err := s.SnapshotSink.Close()
	if !s.done {
		s.done = true
		if err != nil {
			s.logger.Warn("snapshot not written", "index", s.index, "term", s.term, "error", err)
		} else {
			s.logger.Info("snapshot written", "index", s.index, "term", s.term, "size", s.size,
				"duration", time.Since(s.start).Round(time.Microsecond), "id", s.ID())
		}
	}
	return err
}

func (s *loggedSink) Cancel() error {
	s.done = true
	return s.SnapshotSink.Cancel()
}

// Open wraps whichever state machine observed returns: both batch.
var (
	_ raft.BatchingFSM = (*fsm.FSM)(nil)
	_ raft.BatchingFSM = (*observedFSM)(nil)
)

// loggedRestore logs each restore of the group's state machine from a
// snapshot: at start from the newest one on disk, or one the leader sent.
type loggedRestore struct {
	raft.BatchingFSM
	logger  *slog.Logger
	applied func() uint64
}

func (f loggedRestore) Restore(rc io.ReadCloser) error {
	start := time.Now()
	counted := &countingReader{ReadCloser: rc}
	if err := f.BatchingFSM.Restore(counted); err != nil {
		f.logger.Warn("snapshot restore failed", "read", counted.n, "error", err)
		return err
	}
	f.logger.Info("snapshot restored", "index", f.applied(), "size", counted.n,
		"duration", time.Since(start).Round(time.Microsecond))
	return nil
}

type countingReader struct {
	io.ReadCloser
	n int64
}

func (r *countingReader) Read(p []byte) (int, error) {
	n, err := r.ReadCloser.Read(p)
	r.n += int64(n)
	return n, err
}
