package raftgroup

import (
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
// group elects a leader, instead of after.
//
// hashicorp/raft applies nothing past the snapshot it restored until a
// leader of the new term has committed an entry: when every member of a
// cluster restarts at once (a power cut, kill -9 of all), each waits for
// the election (0.5-1 s of election timeout) and only then replays its log
// (with a million entries in the log, about as long again:
// docs/performance.md, "Restarts and COUNT"). The log knows how far the
// state machine had applied it before the restart (raftlog.Applied, a mark
// noted after every batch and written with the log's next commit); entries
// up to there are committed, so they may be applied again at once.
//
// How it stays safe:
//   - the state machine is restored from the newest snapshot here, before
//     raft starts (Config.NoSnapshotRestoreOnStart), so the snapshot's
//     index is known exactly; a mark is used only when that index is at or
//     after the mark's From (entries at or below From may be of a lost
//     term), and only the entries after the snapshot up to Through are
//     replayed, stopping at the first the log no longer holds;
//   - raft's calls into the state machine (ApplyBatch, Snapshot, Restore)
//     wait until the replay is over, so the replay never interleaves with
//     raft's own applies, and a snapshot never labels a state that holds
//     more than raft knows it applied;
//   - raft then applies from the snapshot's index on, as always: the
//     entries the replay applied come again, and are skipped by index
//     (every entry at or below the state machine's applied index), the
//     same entries in the same order (raft never rewrites a committed
//     entry).
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

// restoreNewest restores the state machine from the newest snapshot in
// snaps, before raft starts. It returns that snapshot's index (0: there is
// none) and whether raft should leave its restore out; when the restore
// fails, raft makes its own (falling back to older snapshots) and nothing
// is replayed.
func (c *replayer) restoreNewest(snaps raft.SnapshotStore) (index uint64, done bool, err error) {
	list, err := snaps.List()
	if err != nil {
		return 0, false, fmt.Errorf("list snapshots: %w", err)
	}
	if len(list) == 0 {
		c.from.Store(0)
		return 0, true, nil
	}
	meta, rc, err := snaps.Open(list[0].ID)
	if err != nil {
		c.from.Store(noFrom)
		return 0, false, nil
	}
	if err := c.BatchingFSM.Restore(rc); err != nil {
		c.from.Store(noFrom)
		return 0, false, nil
	}
	c.from.Store(meta.Index)
	return meta.Index, true, nil
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

// hold makes raft's calls wait until the replay ends; called before raft
// starts, and before the replay.
func (c *replayer) hold() { c.ready = make(chan struct{}) }

// wait returns once no replay runs.
func (c *replayer) wait() { <-c.ready }

// replay applies entries first..last of logs, then lets raft's calls in.
// It stops at the first entry the log does not hold, when the state
// machine halts, or when stop closes.
func (c *replayer) replay(logs raft.LogStore, first, last uint64, stop <-chan struct{}, logger *slog.Logger) {
	defer close(c.ready)
	start := time.Now()
	batch := make([]*raft.Log, 0, replayBatch)
	next := first
	var stopped error
	for next <= last && stopped == nil {
		select {
		case <-stop:
			return
		default:
		}
		batch = batch[:0]
		for ; next <= last && len(batch) < replayBatch; next++ {
			l := new(raft.Log)
			if err := logs.GetLog(next, l); err != nil {
				stopped = fmt.Errorf("entry %d: %w", next, err)
				break
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
			stopped = err
		}
	}
	c.note()
	args := []any{"from", first, "through", last, "applied", c.f.AppliedIndex(), "duration", time.Since(start).Round(time.Millisecond)}
	if stopped != nil {
		logger.Warn("stopped replaying the committed log before the election's end; raft applies the rest", append(args, "error", stopped)...)
		return
	}
	logger.Info("replayed the committed log tail during the election", args...)
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
