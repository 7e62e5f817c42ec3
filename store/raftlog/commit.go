package raftlog

import (
	"encoding/binary"
	"errors"
	"sync"
	"sync/atomic"

	"github.com/kvnode/kvnode/internal/chunked"
)

// committer writes the records of every group. A write that arrives while
// no commit is under way is committed at once (a lone writer pays
// nothing); writes that arrive while one is under way wait and go into the
// next commit together, whatever group they belong to: one write of their
// records and one fdatasync for all of them.
type committer struct {
	s *Store

	mu      sync.Mutex
	pending []*write
	busy    bool
	closed  bool
	running sync.WaitGroup // the run goroutine, while busy
	// marks are the groups' Applied noted since the last commit, written
	// with the next one (applied.go).
	marks map[*GroupLog]Applied
	// failed is the error that stopped the log: after a failed write or
	// fsync the file's state is unknown (Linux may have dropped the dirty
	// pages), so nothing more is written and every write fails with it.
	failed error

	// commits counts the commits made (tests, metrics).
	commits atomic.Uint64
}

// write is one group's change.
type write struct {
	kind     byte
	g        *GroupLog
	entries  [][]byte   // append: the encoded entries
	min, max uint64     // delete: the range; applied: From and Through
	done     chan error // nil for an applied mark: nobody waits for it
}

var errClosed = errors.New("the raft log is closed")

// submit commits w and returns once it is durable.
func (c *committer) submit(w *write) error {
	w.done = make(chan error, 1)
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return errClosed
	}
	if c.failed != nil {
		err := c.failed
		c.mu.Unlock()
		return err
	}
	c.pending = append(c.pending, w)
	start := !c.busy
	c.busy = true
	if start {
		c.running.Add(1)
	}
	c.mu.Unlock()
	if start {
		go c.run()
	}
	return <-w.done
}

// run commits batches until nothing is pending.
func (c *committer) run() {
	defer c.running.Done()
	for {
		c.mu.Lock()
		batch := c.pending
		c.pending = nil
		if len(batch) == 0 {
			c.busy = false
			c.mu.Unlock()
			return
		}
		failed := c.failed
		// The marks go after the batch's writes: a mark never precedes a
		// deletion it was noted after (applied.go).
		batch = append(batch, c.takeMarksLocked()...)
		c.mu.Unlock()
		if failed != nil {
			reply(batch, failed)
			continue
		}
		if err := c.commit(batch); err != nil {
			c.mu.Lock()
			c.failed = err
			c.mu.Unlock()
			reply(batch, err)
			continue
		}
		reply(batch, nil)
		// Housekeeping between commits, never on a writer's time: move
		// forward the few live entries that keep old segments alive,
		// delete the segments nobody needs.
		if err := c.tidy(); err != nil {
			c.mu.Lock()
			c.failed = err
			c.mu.Unlock()
		}
	}
}

// reply tells the writers of batch how their commit ended.
func reply(batch []*write, err error) {
	for _, w := range batch {
		if w.done != nil {
			w.done <- err
		}
	}
}

// commit writes batch's records at the head of the log, makes them
// durable, and then applies them to the groups' maps, in order.
func (c *committer) commit(batch []*write) error {
	ss := c.s.segs
	seg, err := ss.head()
	if err != nil {
		return err
	}
	// One buffer of exactly the batch's size, filled a step at a time: a
	// batch of staged chunks holds 100s of MiB, and growing a buffer (or
	// checksumming it) in single built-in calls stalled the whole member,
	// Raft's heartbeats included (package chunked).
	total := 0
	for _, w := range batch {
		total += recordHeader + bodySize(w)
	}
	buf := make([]byte, 0, total)
	// For each append, where its entries will lie.
	places := make([][]loc, len(batch))
	for i, w := range batch {
		rec := len(buf)
		buf = append(buf, make([]byte, recordHeader)...)
		buf = append(buf, w.kind)
		buf = binary.AppendUvarint(buf, w.g.gid)
		switch w.kind {
		case kindAppend:
			buf = binary.AppendUvarint(buf, uint64(len(w.entries)))
			places[i] = make([]loc, len(w.entries))
			for j, e := range w.entries {
				buf = binary.AppendUvarint(buf, uint64(len(e)))
				places[i][j] = loc{seg: seg, off: seg.size + int64(len(buf)), n: uint32(len(e))}
				buf = chunked.Append(buf, e)
			}
		case kindDelete, kindApplied:
			buf = binary.AppendUvarint(buf, w.min)
			buf = binary.AppendUvarint(buf, w.max)
		}
		sealRecord(buf[rec:])
	}
	if err := ss.write(seg, buf); err != nil {
		return err
	}
	c.commits.Add(1)
	for i, w := range batch {
		g := w.g
		g.mu.Lock()
		switch w.kind {
		case kindAppend:
			for j, e := range w.entries {
				index, typ, _ := entryHead(e)
				l := places[i][j]
				l.typ = typ
				g.put(index, l)
			}
		case kindDelete:
			g.deleteRange(w.min, w.max)
		case kindDrop:
			g.deleteRange(0, ^uint64(0))
		case kindApplied:
			g.applied = Applied{From: w.min, Through: w.max}
		}
		g.mu.Unlock()
	}
	return nil
}

// Segments are tidied once the log has more than tidyAfter of them: the
// oldest one's live entries are moved to the head when they are few (at
// most a quarter of a segment), then every segment nobody needs goes. A
// group that writes little (an idle partition group) never compacts its
// log, and its entries would otherwise keep every later segment on disk.
const tidyAfter = 4

func (c *committer) tidy() error {
	ss := c.s.segs
	ss.mu.RLock()
	n := len(ss.files)
	var oldest *segment
	if n > tidyAfter {
		oldest = ss.files[0]
	}
	ss.mu.RUnlock()
	if oldest != nil && oldest.live > 0 && oldest.liveBytes <= ss.max/4 {
		if err := c.relocate(oldest); err != nil {
			return err
		}
	}
	return ss.collect()
}

// relocate writes the live entries of seg again at the head, as appends
// of their groups: replayed later, they put the same entries at the same
// indexes, after everything older.
func (c *committer) relocate(seg *segment) error {
	var batch []*write
	c.s.mu.Lock()
	groups := make([]*GroupLog, 0, len(c.s.groups))
	for _, g := range c.s.groups {
		groups = append(groups, g)
	}
	c.s.mu.Unlock()
	for _, g := range groups {
		g.mu.RLock()
		var here []loc
		for _, l := range g.locs {
			if l.seg == seg {
				here = append(here, l)
			}
		}
		g.mu.RUnlock()
		if len(here) == 0 {
			continue
		}
		w := &write{kind: kindAppend, g: g}
		for _, l := range here {
			b, err := c.s.segs.read(seg.seq, l.off, l.n)
			if err != nil {
				return err
			}
			w.entries = append(w.entries, b)
		}
		batch = append(batch, w)
	}
	if len(batch) == 0 {
		return nil
	}
	return c.commit(batch)
}

// close makes later writes fail and waits for the writes under way.
func (c *committer) close() {
	c.mu.Lock()
	c.closed = true
	c.mu.Unlock()
	c.running.Wait()
}

// bodySize is the size of w's record body, as commit writes it.
func bodySize(w *write) int {
	n := 1 + uvarintLen(w.g.gid)
	switch w.kind {
	case kindAppend:
		n += uvarintLen(uint64(len(w.entries)))
		for _, e := range w.entries {
			n += uvarintLen(uint64(len(e))) + len(e)
		}
	case kindDelete, kindApplied:
		n += uvarintLen(w.min) + uvarintLen(w.max)
	}
	return n
}

// uvarintLen is the length of x as a uvarint.
func uvarintLen(x uint64) int {
	n := 1
	for ; x >= 0x80; x >>= 7 {
		n++
	}
	return n
}
