package raftgroup

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"sync/atomic"
	"time"

	"github.com/hashicorp/raft"

	"github.com/kvnode/kvnode/fsm"
	"github.com/kvnode/kvnode/store/raftlog"
)

// A restarted member applies the committed tail of its own log while the
// group elects a leader, and raft starts from where that replay will end:
// it neither waits for a leader to apply those entries nor reads them
// again.
//
// hashicorp/raft applies nothing past the snapshot it restored until a
// leader of the new term has committed an entry: when every member of a
// cluster restarts at once (a power cut, kill -9 of all), each waits for
// the election and only then replays its log, reading every entry a second
// time (its start-up scan for configurations read them all once already).
// With a million entries in the log those reads, the replay and the
// election were the whole restart (docs/performance.md, "Restarts and
// COUNT"). The log knows how far the state machine had applied it before
// the restart (raftlog.Applied, a mark noted after every batch and written
// with the log's next commit); entries up to there are committed, so they
// may be applied again at once.
//
// How it stays safe:
//   - the state machine is restored from the newest snapshot here rather
//     than by raft (Config.NoSnapshotRestoreOnStart), so the snapshot's
//     index is known exactly; the snapshot is opened (its checksum checked)
//     before raft starts, and read beside raft's start, before the replay; a mark is used only when that index is at or
//     after the mark's From (entries at or below From may be of a lost
//     term), and only the entries after the snapshot up to Through are
//     replayed;
//   - before raft starts, the log must hold every one of those entries
//     (raftlog's Holds, from what it read at open) and none may be of
//     raft's deprecated peer types; the configuration in force at Through
//     is the last configuration entry among them, or the snapshot's;
//   - raft is then told, through the snapshot store's listing during
//     NewRaft only (startSnapshots), that the state machine holds a
//     snapshot at Through, with that entry's term and that configuration:
//     with NoSnapshotRestoreOnStart raft opens no snapshot at start, takes
//     its applied index, last snapshot and configuration from the listing,
//     and will apply from Through+1 on, as after any snapshot. The entries
//     stay in the log: a follower that lacks them gets them from there, as
//     before (raft sends a snapshot only for entries the log lacks, and
//     then opens a real one);
//   - raft's calls into the state machine (ApplyBatch, Snapshot, Restore)
//     wait until the replay is over: the state machine is at Through when
//     raft's first apply, snapshot or restore reaches it. Nothing deletes
//     the entries meanwhile (raft compacts only after a snapshot, which
//     waits too, and never rewrites a committed entry). An entry the state
//     machine cannot apply halts it (fsm.Halted) as it would under raft;
//     an entry the log cannot read then is the error raft itself panics on.
//
// While the replay runs raft elects, answers votes and heartbeats; a
// leader's commits wait in raft's queue to the state machine (128
// batches), as they would behind a slow apply.
//
// A restore that raft makes while it runs (a leader's snapshot) has an
// index this wrapper does not see: the marks noted after it have From
// noFrom, which no restart's snapshot reaches, until the next start.

// appliedLog is a Raft log that keeps applied marks (raftlog.GroupLog).
type appliedLog interface {
	NoteApplied(raftlog.Applied)
	Applied() raftlog.Applied
}

// noFrom is the From of marks whose restore point is not known.
const noFrom = math.MaxUint64

// replayBatch is how many entries the replay applies under one hold of
// the state machine's lock (readers wait for it).
const replayBatch = 64

// replayer is the state machine raft is given: the group's, wrapped.
type replayer struct {
	raft.BatchingFSM // the logged and observed state machine
	f                *fsm.FSM
	log              appliedLog // nil: the log keeps no marks
	// from is the index of the snapshot the state machine was last
	// restored from (0: none), noFrom when it is not known.
	from atomic.Uint64
	// ready is closed once no replay runs; raft's calls wait for it.
	ready chan struct{}
}

func newReplayer(inner raft.BatchingFSM, f *fsm.FSM, logs raft.LogStore) *replayer {
	c := &replayer{BatchingFSM: inner, f: f, ready: make(chan struct{})}
	c.log, _ = logs.(appliedLog)
	close(c.ready)
	return c
}

// openNewest opens the newest snapshot in snaps, before raft starts, for
// a restore beside raft's start and election (start). raft's file store
// checks the snapshot's CRC-64 as it opens it, so a damaged one is found
// here: then raft makes its own restore (falling back to older snapshots)
// and nothing is replayed, as before. It returns the snapshot's metadata
// and contents (both nil: there is none) and whether raft should leave
// its restore out.
func (c *replayer) openNewest(snaps raft.SnapshotStore, logger *slog.Logger) (*raft.SnapshotMeta, io.ReadCloser, bool, error) {
	list, err := snaps.List()
	if err != nil {
		return nil, nil, false, fmt.Errorf("list snapshots: %w", err)
	}
	if len(list) == 0 {
		c.from.Store(0)
		return nil, nil, true, nil
	}
	c.from.Store(noFrom)
	meta, rc, err := snaps.Open(list[0].ID)
	if err != nil {
		logger.Warn("the newest snapshot does not open; raft tries the older ones, and the log is not replayed before the election",
			"snapshot", list[0].ID, "error", err)
		return nil, nil, false, nil
	}
	return meta, rc, true, nil
}

// restore restores the state machine from rc, the snapshot meta describes
// (nil: none), and records its index as the replay's starting point.
func (c *replayer) restore(meta *raft.SnapshotMeta, rc io.ReadCloser) error {
	if rc == nil {
		return nil
	}
	if err := c.BatchingFSM.Restore(rc); err != nil {
		return err
	}
	c.from.Store(meta.Index)
	return nil
}

// start restores the snapshot openNewest opened (rc nil: none), then
// replays entries first..last (none when last < first), while raft starts
// and elects: a restart from a snapshot cost its restore, then the
// election (docs/performance.md, "A million entries"). raft's calls wait
// for both (hold was called). raft was told the state machine holds the
// snapshot, so one whose checksum held but that the state machine cannot
// read (written by a newer kvnode) stops the member, as raft stops on a
// committed entry it cannot read.
func (c *replayer) start(meta *raft.SnapshotMeta, rc io.ReadCloser, logs raft.LogStore, first, last uint64, stop <-chan struct{}, logger *slog.Logger) {
	if err := c.restore(meta, rc); err != nil {
		panic(fmt.Sprintf("raft snapshot %s: its checksum holds but the state machine cannot read it: %v", meta.ID, err))
	}
	if last < first {
		close(c.ready)
		return
	}
	c.replay(logs, first, last, stop, logger)
}

// plan says which entries a replay after a restore at index may apply:
// first..last, none when last < first.
func (c *replayer) plan(index uint64) (first, last uint64) {
	if c.log == nil {
		return 1, 0
	}
	m := c.log.Applied()
	if m.From == noFrom || index < m.From || m.Through <= index {
		return 1, 0
	}
	return index + 1, m.Through
}

// prepare checks that the log holds entries first..last of a replay after
// the snapshot snap (nil: none), and returns the listing that tells raft
// the state machine is at last; nil when it cannot (see above).
func (c *replayer) prepare(logs raft.LogStore, first, last uint64, snap *raft.SnapshotMeta) (*raft.SnapshotMeta, error) {
	h, ok := logs.(holder)
	if !ok {
		return nil, nil
	}
	configs, ok := h.Holds(first, last)
	if !ok {
		return nil, nil
	}
	at := &raft.SnapshotMeta{Version: raft.SnapshotVersionMax, Index: last}
	if snap != nil {
		at.Configuration, at.ConfigurationIndex = snap.Configuration, snap.ConfigurationIndex
	}
	for _, i := range configs {
		var l raft.Log
		if err := logs.GetLog(i, &l); err != nil {
			return nil, fmt.Errorf("read configuration entry %d: %w", i, err)
		}
		if l.Type != raft.LogConfiguration {
			return nil, nil // raft's old peer entries: left to raft
		}
		at.Configuration, at.ConfigurationIndex = raft.DecodeConfiguration(l.Data), l.Index
	}
	if at.ConfigurationIndex == 0 {
		return nil, nil
	}
	var l raft.Log
	if err := logs.GetLog(last, &l); err != nil {
		return nil, fmt.Errorf("read entry %d: %w", last, err)
	}
	at.Term = l.Term
	at.ID = fmt.Sprintf("replayed-%d-%d", at.Term, at.Index)
	return at, nil
}

// holder is a log that knows, without reading, which entries it holds
// (raftlog.GroupLog).
type holder interface {
	Holds(first, last uint64) (configs []uint64, ok bool)
}

// hold makes raft's calls wait until the replay ends; called before raft
// starts, and before the replay.
func (c *replayer) hold() { c.ready = make(chan struct{}) }

// wait returns once no replay runs.
func (c *replayer) wait() { <-c.ready }

// replay applies entries first..last of logs (prepare said the log holds
// them), then lets raft's calls in. It stops early only when the state
// machine halts (raft's applies then meet the halt), or when stop closes
// (the group closes).
func (c *replayer) replay(logs raft.LogStore, first, last uint64, stop <-chan struct{}, logger *slog.Logger) {
	defer close(c.ready)
	start := time.Now()
	batch := make([]*raft.Log, 0, replayBatch)
	for next := first; next <= last; {
		select {
		case <-stop:
			return
		default:
		}
		batch = batch[:0]
		for ; next <= last && len(batch) < replayBatch; next++ {
			l := new(raft.Log)
			if err := logs.GetLog(next, l); err != nil {
				// raft panics alike when it cannot read a committed entry
				// (processLogs); carrying on would leave the state machine
				// short of the index raft was told.
				panic(fmt.Sprintf("raft log: replay of entry %d, which the log holds: %v", next, err))
			}
			// What raft hands a state machine; noops and barriers it
			// only counts.
			if l.Type == raft.LogCommand || l.Type == raft.LogConfiguration {
				batch = append(batch, l)
			}
		}
		if len(batch) > 0 {
			c.apply(batch)
		}
		if err := c.f.Halted(); err != nil {
			logger.Warn("stopped replaying the committed log: the state machine halted", "from", first, "through", last, "error", err)
			return
		}
	}
	c.note()
	logger.Info("replayed the committed log while raft started", "from", first, "through", last,
		"duration", time.Since(start).Round(time.Millisecond))
}

// apply applies logs but those at or below the applied index (replayed
// already), and returns each one's result (nil for the skipped).
func (c *replayer) apply(logs []*raft.Log) []interface{} {
	out := make([]interface{}, len(logs))
	applied := c.f.AppliedIndex()
	i := 0
	for i < len(logs) && logs[i].Index <= applied {
		i++
	}
	if i < len(logs) {
		copy(out[i:], c.BatchingFSM.ApplyBatch(logs[i:]))
	}
	return out
}

// note records how far the state machine got in the log's marks.
func (c *replayer) note() {
	if c.log != nil {
		c.log.NoteApplied(raftlog.Applied{From: c.from.Load(), Through: c.f.AppliedIndex()})
	}
}

func (c *replayer) Apply(l *raft.Log) interface{} {
	return c.ApplyBatch([]*raft.Log{l})[0]
}

func (c *replayer) ApplyBatch(logs []*raft.Log) []interface{} {
	<-c.ready
	out := c.apply(logs)
	c.note()
	return out
}

func (c *replayer) Snapshot() (raft.FSMSnapshot, error) {
	<-c.ready
	return c.BatchingFSM.Snapshot()
}

func (c *replayer) Restore(rc io.ReadCloser) error {
	<-c.ready
	if err := c.BatchingFSM.Restore(rc); err != nil {
		return err
	}
	c.from.Store(noFrom)
	c.note()
	return nil
}

// startSnapshots is the snapshot store raft is given: while raft starts, its
// listing begins with where the replay leaves the state machine (at);
// after, it is the store's own.
type startSnapshots struct {
	raft.SnapshotStore
	at atomic.Pointer[raft.SnapshotMeta]
}

// errReplayedSnapshot: the listing's first entry while raft starts has no
// data to open (raft opens none at start: NoSnapshotRestoreOnStart).
var errReplayedSnapshot = errors.New("the replayed log is not a snapshot that can be opened")

func (s *startSnapshots) List() ([]*raft.SnapshotMeta, error) {
	list, err := s.SnapshotStore.List()
	if at := s.at.Load(); at != nil && err == nil {
		list = append([]*raft.SnapshotMeta{at}, list...)
	}
	return list, err
}

func (s *startSnapshots) Open(id string) (*raft.SnapshotMeta, io.ReadCloser, error) {
	if at := s.at.Load(); at != nil && id == at.ID {
		return nil, nil, errReplayedSnapshot
	}
	return s.SnapshotStore.Open(id)
}

// started ends the start-up listing.
func (s *startSnapshots) started() { s.at.Store(nil) }
