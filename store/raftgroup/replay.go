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

// A restarted member applies the committed tail of its own log before raft
// starts, and raft starts from there: it neither reads those entries again
// nor waits for a leader to apply them.
//
// hashicorp/raft applies nothing past the snapshot it restored until a
// leader of the new term has committed an entry: when every member of a
// cluster restarts at once (a power cut, kill -9 of all), each waits for
// the election and only then replays its log, reading every entry a second
// time (its start-up scan for configurations read them all once already).
// With a million entries in the log those reads and the replay were most
// of a restart (docs/performance.md, "Restarts and COUNT"). The log knows
// how far the state machine had applied it before the restart
// (raftlog.Applied, a mark noted after every batch and written with the
// log's next commit); entries up to there are committed, so they may be
// applied again at once.
//
// How it stays safe:
//   - the state machine is restored from the newest snapshot here, before
//     raft starts (Config.NoSnapshotRestoreOnStart), so the snapshot's
//     index is known exactly; a mark is used only when that index is at or
//     after the mark's From (entries at or below From may be of a lost
//     term), and only the entries after the snapshot up to Through are
//     replayed, stopping at the first the log no longer holds;
//   - raft is then told, through the snapshot store's listing during
//     NewRaft only (startSnapshots), that the state machine holds a
//     snapshot at the last entry replayed, with that entry's term and the
//     configuration in force there (the restored snapshot's, or the last
//     configuration entry replayed): with NoSnapshotRestoreOnStart raft
//     opens no snapshot at start, it takes its applied index, last
//     snapshot and configuration from the listing, and applies from the
//     next entry on, as after any snapshot. The entries stay in the log:
//     a follower that lacks them gets them from there, as before (raft
//     sends a snapshot only for entries the log lacks, and then opens a
//     real one);
//   - when no such listing can be made (nothing replayed, no configuration
//     known), raft applies from the restored snapshot on as always, and the
//     entries the replay applied are skipped by index (apply): the same
//     entries in the same order, as raft never rewrites a committed entry.
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
// the state machine's lock.
const replayBatch = 64

// replayer is the state machine raft is given: the group's, wrapped.
type replayer struct {
	raft.BatchingFSM // the logged and observed state machine
	f                *fsm.FSM
	log              appliedLog // nil: the log keeps no marks
	// from is the index of the snapshot the state machine was last
	// restored from (0: none), noFrom when it is not known. Raft's calls
	// come from its one FSM goroutine; Open's, before raft starts.
	from atomic.Uint64
}

func newReplayer(inner raft.BatchingFSM, f *fsm.FSM, logs raft.LogStore) *replayer {
	c := &replayer{BatchingFSM: inner, f: f}
	c.log, _ = logs.(appliedLog)
	return c
}

// restoreNewest restores the state machine from the newest snapshot in
// snaps, before raft starts. It returns that snapshot's metadata (nil:
// there is none) and whether raft should leave its restore out; when the
// restore fails, raft makes its own (falling back to older snapshots) and
// nothing is replayed.
func (c *replayer) restoreNewest(snaps raft.SnapshotStore) (*raft.SnapshotMeta, bool, error) {
	list, err := snaps.List()
	if err != nil {
		return nil, false, fmt.Errorf("list snapshots: %w", err)
	}
	if len(list) == 0 {
		c.from.Store(0)
		return nil, true, nil
	}
	c.from.Store(noFrom)
	meta, rc, err := snaps.Open(list[0].ID)
	if err != nil {
		return nil, false, nil
	}
	if err := c.BatchingFSM.Restore(rc); err != nil {
		return nil, false, nil
	}
	c.from.Store(meta.Index)
	return meta, true, nil
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

// replay applies entries first..last of logs, after the snapshot snap
// (nil: none), and returns the snapshot listing that tells raft where the
// state machine now is (nil when it cannot: see the package comment). It
// stops at the first entry the log does not hold, at an entry of raft's
// old peer types, and when the state machine halts.
func (c *replayer) replay(logs raft.LogStore, first, last uint64, snap *raft.SnapshotMeta, logger *slog.Logger) *raft.SnapshotMeta {
	start := time.Now()
	at := &raft.SnapshotMeta{Version: raft.SnapshotVersionMax}
	if snap != nil {
		at.Configuration, at.ConfigurationIndex = snap.Configuration, snap.ConfigurationIndex
	}
	batch := make([]*raft.Log, 0, replayBatch)
	next := first
	var stopped error
	for next <= last && stopped == nil {
		batch = batch[:0]
		var conf *raft.Log // the batch's last configuration entry
		for ; next <= last && len(batch) < replayBatch; next++ {
			l := new(raft.Log)
			if err := logs.GetLog(next, l); err != nil {
				stopped = fmt.Errorf("entry %d: %w", next, err)
				break
			}
			if l.Type == raft.LogAddPeerDeprecated || l.Type == raft.LogRemovePeerDeprecated {
				stopped = fmt.Errorf("entry %d is of raft's old peer type %v", next, l.Type)
				break
			}
			// What raft hands a state machine; noops and barriers it
			// only counts.
			if l.Type == raft.LogCommand || l.Type == raft.LogConfiguration {
				batch = append(batch, l)
			}
			if l.Type == raft.LogConfiguration {
				conf = l
			}
			at.Index, at.Term = l.Index, l.Term
		}
		if len(batch) > 0 {
			c.apply(batch)
		}
		if conf != nil {
			at.Configuration, at.ConfigurationIndex = raft.DecodeConfiguration(conf.Data), conf.Index
		}
		if h := c.f.Halted(); h != nil {
			var he *fsm.HaltError
			if errors.As(h, &he) && he.Index <= at.Index {
				// Raft must apply the entry again (and halt there too).
				at.Index = 0
			}
			stopped = h
		}
	}
	c.note()
	args := []any{"from", first, "through", last, "replayed", at.Index, "duration", time.Since(start).Round(time.Millisecond)}
	if stopped != nil {
		logger.Warn("stopped replaying the committed log at start; raft applies the rest", append(args, "error", stopped)...)
	} else {
		logger.Info("replayed the committed log at start", args...)
	}
	if at.Index < first || at.ConfigurationIndex == 0 {
		return nil
	}
	at.ID = fmt.Sprintf("replayed-%d-%d", at.Term, at.Index)
	return at
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
	out := c.apply(logs)
	c.note()
	return out
}

func (c *replayer) Restore(rc io.ReadCloser) error {
	if err := c.BatchingFSM.Restore(rc); err != nil {
		return err
	}
	c.from.Store(noFrom)
	c.note()
	return nil
}

// startSnapshots is the snapshot store raft is given: while raft starts, its
// listing begins with where the replay left the state machine (at); after,
// it is the store's own.
type startSnapshots struct {
	raft.SnapshotStore
	at atomic.Pointer[raft.SnapshotMeta]
}

// errReplayedSnapshot: the listing's first entry while raft started has no
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
