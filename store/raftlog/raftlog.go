package raftlog

import (
	"encoding/binary"
	"errors"
	"fmt"
	"sync"

	"github.com/hashicorp/raft"
)

// Store is the Raft log of every group of a member: one write-ahead log
// (wal.go) whose records say which group they belong to, and in memory,
// per group, where each entry lies.
type Store struct {
	segs *segments

	mu     sync.Mutex
	groups map[uint64]*GroupLog

	c committer
}

// Options tunes a Store; the zero value suits production.
type Options struct {
	// SegmentBytes is the size past which the log starts a new segment
	// file (default 64 MiB). Segments are deleted whole, once no group
	// needs an entry they hold.
	SegmentBytes int64
	// NoSync skips fsync (tests only: what a power cut would lose is then
	// not on disk).
	NoSync bool
}

// DefaultSegmentBytes is Options.SegmentBytes' default.
const DefaultSegmentBytes = 64 << 20

// Open opens (creating if needed) the log in dir and reads it: where
// every group's entries are. A write that a crash cut short at the end of
// the log is cut off; a damaged record anywhere else is ErrDamaged.
func Open(dir string, o Options) (*Store, error) {
	if o.SegmentBytes == 0 {
		o.SegmentBytes = DefaultSegmentBytes
	}
	segs, err := openSegments(dir, o.SegmentBytes, !o.NoSync)
	if err != nil {
		return nil, fmt.Errorf("open the raft log in %s: %w", dir, err)
	}
	s := &Store{segs: segs, groups: map[uint64]*GroupLog{}}
	s.c.s = s
	if err := segs.replay(s.replayRecord); err != nil {
		segs.close()
		return nil, err
	}
	if err := segs.collect(); err != nil {
		segs.close()
		return nil, err
	}
	return s, nil
}

// Close closes the log's files; writes after it fail.
func (s *Store) Close() error {
	s.c.close()
	s.segs.mu.Lock()
	s.segs.close()
	s.segs.mu.Unlock()
	return nil
}

// Groups lists the groups whose log holds entries.
func (s *Store) Groups() []uint64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []uint64
	for gid, g := range s.groups {
		g.mu.RLock()
		n := len(g.locs)
		g.mu.RUnlock()
		if n > 0 {
			out = append(out, gid)
		}
	}
	return out
}

// Group is group gid's log (empty when it has none yet).
func (s *Store) Group(gid uint64) *GroupLog {
	s.mu.Lock()
	defer s.mu.Unlock()
	g := s.groups[gid]
	if g == nil {
		g = &GroupLog{s: s, gid: gid, locs: map[uint64]loc{}}
		s.groups[gid] = g
	}
	return g
}

// Drop deletes group gid's log, durably: a group that comes back to this
// member later starts from an empty log.
func (s *Store) Drop(gid uint64) error {
	if err := s.c.submit(&write{kind: kindDrop, g: s.Group(gid)}); err != nil {
		return fmt.Errorf("drop the raft log of group %d: %w", gid, err)
	}
	return nil
}

// loc is where an entry's encoding lies, and the entry's type (Holds).
type loc struct {
	seg *segment
	off int64
	n   uint32
	typ raft.LogType
}

// GroupLog is one group's Raft log: a raft.LogStore.
type GroupLog struct {
	s   *Store
	gid uint64

	mu          sync.RWMutex
	first, last uint64
	locs        map[uint64]loc
	applied     Applied // the newest durable mark (applied.go)
}

var _ raft.LogStore = (*GroupLog)(nil)

// FirstIndex is the first index in the log, 0 when it is empty.
func (g *GroupLog) FirstIndex() (uint64, error) {
	g.mu.RLock()
	defer g.mu.RUnlock()
	return g.first, nil
}

// LastIndex is the last index in the log, 0 when it is empty.
func (g *GroupLog) LastIndex() (uint64, error) {
	g.mu.RLock()
	defer g.mu.RUnlock()
	return g.last, nil
}

// GetLog reads the entry at index into out; raft.ErrLogNotFound when the
// log does not hold it. Each call reads into a buffer of its own that out's
// Data then aliases: nothing here writes to it again, so the caller (the
// state machine, which may keep slices of a command's values) owns it.
func (g *GroupLog) GetLog(index uint64, out *raft.Log) error {
	for attempt := 0; ; attempt++ {
		g.mu.RLock()
		l, ok := g.locs[index]
		g.mu.RUnlock()
		if !ok {
			return raft.ErrLogNotFound
		}
		b, err := g.s.segs.read(l.seg.seq, l.off, l.n)
		if errors.Is(err, errSegmentGone) && attempt < 3 {
			continue // moved forward meanwhile: look its place up again
		}
		if err != nil {
			return fmt.Errorf("raft log of group %d, entry %d: %w", g.gid, index, err)
		}
		if err := decode(b, out); err != nil {
			return fmt.Errorf("raft log of group %d, entry %d: %w", g.gid, index, err)
		}
		return nil
	}
}

// StoreLog appends one entry.
func (g *GroupLog) StoreLog(l *raft.Log) error { return g.StoreLogs([]*raft.Log{l}) }

// StoreLogs writes entries, durably, in one commit with whatever the
// member's other groups write at the same time.
func (g *GroupLog) StoreLogs(logs []*raft.Log) error {
	if len(logs) == 0 {
		return nil
	}
	w := &write{kind: kindAppend, g: g, entries: make([][]byte, len(logs))}
	for i, l := range logs {
		w.entries[i] = encode(nil, l)
	}
	if err := g.s.c.submit(w); err != nil {
		return fmt.Errorf("store %d entries in the raft log of group %d: %w", len(logs), g.gid, err)
	}
	return nil
}

// DeleteRange deletes the entries from min to max, inclusive: a prefix
// once a snapshot covers it, or a suffix a new leader overwrites.
func (g *GroupLog) DeleteRange(min, max uint64) error {
	if err := g.s.c.submit(&write{kind: kindDelete, g: g, min: min, max: max}); err != nil {
		return fmt.Errorf("delete entries %d-%d of the raft log of group %d: %w", min, max, g.gid, err)
	}
	return nil
}

// put records that entry index lies at l, releasing the place it had.
// The committer (or the replay) calls it, with g.mu held.
func (g *GroupLog) put(index uint64, l loc) {
	if old, ok := g.locs[index]; ok {
		old.seg.live--
		old.seg.liveBytes -= int64(old.n)
	}
	l.seg.live++
	l.seg.liveBytes += int64(l.n)
	g.locs[index] = l
	if len(g.locs) == 1 || index < g.first {
		g.first = index
	}
	if index > g.last {
		g.last = index
	}
}

// deleteRange forgets entries min..max, with g.mu held.
func (g *GroupLog) deleteRange(min, max uint64) {
	if max < min {
		return
	}
	if max >= g.last && min <= g.applied.Through {
		// A suffix goes (or the whole log): entries written there later
		// were not applied under the mark (applied.go).
		g.applied.Through = min - 1
		if min == 0 {
			g.applied = Applied{}
		}
	}
	if len(g.locs) == 0 {
		return
	}
	drop := func(i uint64) {
		if l, ok := g.locs[i]; ok {
			l.seg.live--
			l.seg.liveBytes -= int64(l.n)
			delete(g.locs, i)
		}
	}
	if max-min < uint64(len(g.locs)) {
		for i := min; ; i++ {
			drop(i)
			if i == max {
				break
			}
		}
	} else {
		for i := range g.locs {
			if i >= min && i <= max {
				drop(i)
			}
		}
	}
	g.first, g.last = 0, 0
	for i := range g.locs {
		if g.first == 0 || i < g.first {
			g.first = i
		}
		if i > g.last {
			g.last = i
		}
	}
}

// replayRecord applies one record read back at open.
func (s *Store) replayRecord(seg *segment, off int64, body []byte) error {
	kind, rest := body[0], body[1:]
	gid, n := binary.Uvarint(rest)
	if n <= 0 {
		return errMalformed
	}
	rest = rest[n:]
	g := s.Group(gid)
	g.mu.Lock()
	defer g.mu.Unlock()
	switch kind {
	case kindAppend:
		count, n := binary.Uvarint(rest)
		if n <= 0 {
			return errMalformed
		}
		pos := off + 1 + int64(len(body)-1-len(rest)) + int64(n)
		rest = rest[n:]
		for range count {
			size, n := binary.Uvarint(rest)
			if n <= 0 || size > uint64(len(rest)-n) {
				return errMalformed
			}
			entry := rest[n : n+int(size)]
			index, typ, ok := entryHead(entry)
			if !ok {
				return errMalformed
			}
			g.put(index, loc{seg: seg, off: pos + int64(n), n: uint32(size), typ: typ})
			pos += int64(n) + int64(size)
			rest = rest[n+int(size):]
		}
	case kindDelete:
		min, n := binary.Uvarint(rest)
		if n <= 0 {
			return errMalformed
		}
		max, m := binary.Uvarint(rest[n:])
		if m <= 0 {
			return errMalformed
		}
		g.deleteRange(min, max)
	case kindDrop:
		g.deleteRange(0, ^uint64(0))
		g.applied = Applied{}
	case kindApplied:
		from, n := binary.Uvarint(rest)
		if n <= 0 {
			return errMalformed
		}
		through, m := binary.Uvarint(rest[n:])
		if m <= 0 {
			return errMalformed
		}
		g.applied = Applied{From: from, Through: through}
	default:
		return fmt.Errorf("unknown record kind %d", kind)
	}
	return nil
}

// entryHead reads an encoded entry's index and type.
func entryHead(entry []byte) (index uint64, typ raft.LogType, ok bool) {
	if len(entry) < 2 || entry[0] != encodingV1 {
		return 0, 0, false
	}
	index, n := binary.Uvarint(entry[1:])
	if n <= 0 {
		return 0, 0, false
	}
	rest := entry[1+n:]
	_, m := binary.Uvarint(rest) // the term
	if m <= 0 || len(rest) <= m {
		return 0, 0, false
	}
	return index, raft.LogType(rest[m]), true
}
