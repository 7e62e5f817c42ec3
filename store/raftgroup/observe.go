package raftgroup

import (
	"io"
	"sync/atomic"
	"time"

	"github.com/hashicorp/raft"

	"github.com/kvnode/kvnode/fsm"
)

// Observer is told what one group's Raft does on this member, for its
// metrics (package metrics implements it; node wires it through
// store.Config.Observe). Options.Observe nil observes nothing and wraps
// nothing. The methods run on raft's goroutines, so they must be cheap
// and safe for concurrent use.
//
// hashicorp/raft reports its own timings only to go-metrics' global sink,
// without the group (see package metrics): these are measured here
// instead, around the interfaces raft calls (observed* below).
type Observer interface {
	// LeaderChanged: the group elected a leader (raft's leader
	// observation, with a leader).
	LeaderChanged()
	// LogStored: one write of entries to the log (append and fsync) took d.
	LogStored(d time.Duration)
	// Applied: the state machine applied one batch of entries in d.
	Applied(d time.Duration)
	// Committed: on the leader, an entry reached the state machine d after
	// the leader appended it (replication, quorum fsync, apply queue).
	Committed(d time.Duration)
	// SnapshotWritten: a snapshot of size bytes was written (taken here,
	// or received from the leader) in d.
	SnapshotWritten(d time.Duration, size int64)
	// SnapshotFailed: a snapshot could not be taken or written.
	SnapshotFailed()
	// Restored: the state machine was replaced by a snapshot.
	Restored()
}

// observedLogs times the writes to a group's log.
type observedLogs struct {
	raft.LogStore
	obs Observer
}

func (l observedLogs) StoreLog(e *raft.Log) error {
	start := time.Now()
	err := l.LogStore.StoreLog(e)
	l.obs.LogStored(time.Since(start))
	return err
}

func (l observedLogs) StoreLogs(es []*raft.Log) error {
	start := time.Now()
	err := l.LogStore.StoreLogs(es)
	l.obs.LogStored(time.Since(start))
	return err
}

// IsMonotonic passes on what the log says of itself (raft.LogCache asks).
func (l observedLogs) IsMonotonic() bool {
	m, ok := l.LogStore.(raft.MonotonicLogStore)
	return ok && m.IsMonotonic()
}

// observedSnapshots counts and times the snapshots a group writes.
type observedSnapshots struct {
	raft.SnapshotStore
	obs Observer
}

func (s observedSnapshots) Create(version raft.SnapshotVersion, index, term uint64, configuration raft.Configuration, configurationIndex uint64, trans raft.Transport) (raft.SnapshotSink, error) {
	start := time.Now()
	sink, err := s.SnapshotStore.Create(version, index, term, configuration, configurationIndex, trans)
	if err != nil {
		s.obs.SnapshotFailed()
		return nil, err
	}
	return &observedSink{SnapshotSink: sink, obs: s.obs, start: start}, nil
}

// observedSink is one snapshot being written: Close reports it written,
// Cancel (raft's way to abandon it) or a failed Close failed. Only the
// first of them reports: the state machine's Persist closes the sink and
// raft closes it again.
type observedSink struct {
	raft.SnapshotSink
	obs   Observer
	start time.Time
	size  int64
	done  bool
}

func (s *observedSink) Write(p []byte) (int, error) {
	n, err := s.SnapshotSink.Write(p)
	s.size += int64(n)
	return n, err
}

func (s *observedSink) Close() error {
	err := s.SnapshotSink.Close()
	if !s.done {
		s.done = true
		if err != nil {
			s.obs.SnapshotFailed()
		} else {
			s.obs.SnapshotWritten(time.Since(s.start), s.size)
		}
	}
	return err
}

func (s *observedSink) Cancel() error {
	if !s.done {
		s.done = true
		s.obs.SnapshotFailed()
	}
	return s.SnapshotSink.Cancel()
}

// observedFSM times the state machine's batches and, on the leader, how
// long each command took from its append to its apply.
type observedFSM struct {
	*fsm.FSM
	obs  Observer
	raft atomic.Pointer[raft.Raft] // set once raft runs
}

// Interfaces hashicorp/raft looks for.
var (
	_ raft.BatchingFSM       = (*observedFSM)(nil)
	_ raft.MonotonicLogStore = observedLogs{}
	_ raft.SnapshotStore     = observedSnapshots{}
)

func (f *observedFSM) Apply(l *raft.Log) interface{} {
	return f.ApplyBatch([]*raft.Log{l})[0]
}

func (f *observedFSM) ApplyBatch(logs []*raft.Log) []interface{} {
	start := time.Now()
	out := f.FSM.ApplyBatch(logs)
	f.obs.Applied(time.Since(start))
	if r := f.raft.Load(); r != nil && r.State() == raft.Leader {
		for _, l := range logs {
			// AppendedAt is the leader's clock: only the leader compares it.
			if l.Type == raft.LogCommand && !l.AppendedAt.IsZero() {
				f.obs.Committed(start.Sub(l.AppendedAt))
			}
		}
	}
	return out
}

func (f *observedFSM) Snapshot() (raft.FSMSnapshot, error) {
	s, err := f.FSM.Snapshot()
	if err != nil {
		f.obs.SnapshotFailed()
	}
	return s, err
}

func (f *observedFSM) Restore(rc io.ReadCloser) error {
	err := f.FSM.Restore(rc)
	if err == nil {
		f.obs.Restored()
	}
	return err
}

// observed wraps what raft is given so that obs sees what the group does;
// with obs nil it wraps nothing. started hands the state machine's
// wrapper the group's Raft instance once it exists.
func observed(obs Observer, f *fsm.FSM, logs raft.LogStore, snaps raft.SnapshotStore) (raft.FSM, raft.LogStore, raft.SnapshotStore, func(*raft.Raft)) {
	if obs == nil {
		return f, logs, snaps, func(*raft.Raft) {}
	}
	of := &observedFSM{FSM: f, obs: obs}
	return of, observedLogs{LogStore: logs, obs: obs}, observedSnapshots{SnapshotStore: snaps, obs: obs}, func(r *raft.Raft) { of.raft.Store(r) }
}
