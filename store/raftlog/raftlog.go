package raftlog

import (
	"encoding/binary"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/hashicorp/raft"
	"go.etcd.io/bbolt"
)

// Store is the Raft log of every group of a member, in one bbolt file:
// a bucket per group ("g<id>"), entries keyed by their big-endian index.
// Writes of all groups are committed together (see committer).
type Store struct {
	db *bbolt.DB

	mu     sync.Mutex
	groups map[uint64]*GroupLog

	c committer
}

// Options tunes a Store; the zero value suits production.
type Options struct {
	// OpenTimeout bounds the wait for the file lock another process holds
	// (default 2 s): a second kvnode on the same data dir fails fast.
	OpenTimeout time.Duration
	// NoSync skips fsync (tests only: what a power cut would lose is then
	// not on disk).
	NoSync bool
}

// Open opens (creating if needed) the log file at path and loads the
// first and last index of every group it holds.
func Open(path string, o Options) (*Store, error) {
	if o.OpenTimeout == 0 {
		o.OpenTimeout = 2 * time.Second
	}
	db, err := bbolt.Open(path, 0o600, &bbolt.Options{
		Timeout: o.OpenTimeout,
		// Do not write the freelist on every commit (it grows with the
		// log's churn); rebuild it on open instead: fewer bytes per fsync,
		// the same durability (Consul runs raft-boltdb this way).
		NoFreelistSync: true,
		FreelistType:   bbolt.FreelistMapType,
		NoSync:         o.NoSync,
	})
	if err != nil {
		return nil, fmt.Errorf("open raft log %s (is another kvnode using this data dir?): %w", path, err)
	}
	s := &Store{db: db, groups: map[uint64]*GroupLog{}}
	s.c.db = db
	err = db.View(func(tx *bbolt.Tx) error {
		return tx.ForEach(func(name []byte, b *bbolt.Bucket) error {
			gid, ok := parseBucket(name)
			if !ok {
				return nil
			}
			// name is bbolt's memory, valid only in this transaction.
			g := &GroupLog{s: s, gid: gid, name: bucketName(gid)}
			g.first, g.last = bounds(b)
			s.groups[gid] = g
			return nil
		})
	})
	if err != nil {
		_ = db.Close()
		return nil, fmt.Errorf("read raft log %s: %w", path, err)
	}
	return s, nil
}

// Close closes the file; writes after it fail.
func (s *Store) Close() error {
	s.c.close()
	return s.db.Close()
}

// Groups lists the groups that have a log here.
func (s *Store) Groups() []uint64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]uint64, 0, len(s.groups))
	for gid := range s.groups {
		out = append(out, gid)
	}
	return out
}

// Group is group gid's log (empty when it has none yet).
func (s *Store) Group(gid uint64) *GroupLog {
	s.mu.Lock()
	defer s.mu.Unlock()
	g := s.groups[gid]
	if g == nil {
		g = &GroupLog{s: s, gid: gid, name: bucketName(gid)}
		s.groups[gid] = g
	}
	return g
}

// Drop deletes group gid's log, durably: a group that comes back to this
// member later starts from an empty log.
func (s *Store) Drop(gid uint64) error {
	name := bucketName(gid)
	err := s.c.submit(func(tx *bbolt.Tx) (func(), error) {
		if err := tx.DeleteBucket(name); err != nil && !errors.Is(err, bbolt.ErrBucketNotFound) {
			return nil, err
		}
		return func() {
			s.mu.Lock()
			if g := s.groups[gid]; g != nil {
				g.setBounds(0, 0)
				delete(s.groups, gid)
			}
			s.mu.Unlock()
		}, nil
	})
	if err != nil {
		return fmt.Errorf("drop the raft log of group %d: %w", gid, err)
	}
	return nil
}

func bucketName(gid uint64) []byte { return []byte("g" + strconv.FormatUint(gid, 10)) }

func parseBucket(name []byte) (uint64, bool) {
	if len(name) < 2 || name[0] != 'g' {
		return 0, false
	}
	gid, err := strconv.ParseUint(string(name[1:]), 10, 64)
	return gid, err == nil
}

// bounds are the first and last index held in b, 0 and 0 when empty.
func bounds(b *bbolt.Bucket) (first, last uint64) {
	c := b.Cursor()
	if k, _ := c.First(); k != nil {
		first = binary.BigEndian.Uint64(k)
	}
	if k, _ := c.Last(); k != nil {
		last = binary.BigEndian.Uint64(k)
	}
	return first, last
}

func key(index uint64) []byte { return binary.BigEndian.AppendUint64(nil, index) }

// GroupLog is one group's Raft log: a raft.LogStore.
type GroupLog struct {
	s    *Store
	gid  uint64
	name []byte

	mu          sync.RWMutex
	first, last uint64
}

var _ raft.LogStore = (*GroupLog)(nil)

func (g *GroupLog) setBounds(first, last uint64) {
	g.mu.Lock()
	g.first, g.last = first, last
	g.mu.Unlock()
}

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
// log does not hold it.
func (g *GroupLog) GetLog(index uint64, out *raft.Log) error {
	return g.s.db.View(func(tx *bbolt.Tx) error {
		b := tx.Bucket(g.name)
		if b == nil {
			return raft.ErrLogNotFound
		}
		v := b.Get(key(index))
		if v == nil {
			return raft.ErrLogNotFound
		}
		if err := decode(v, out); err != nil {
			return fmt.Errorf("raft log of group %d, entry %d: %w", g.gid, index, err)
		}
		return nil
	})
}

// StoreLog appends one entry.
func (g *GroupLog) StoreLog(l *raft.Log) error { return g.StoreLogs([]*raft.Log{l}) }

// StoreLogs writes entries, durably, in one commit with whatever the
// member's other groups write at the same time.
func (g *GroupLog) StoreLogs(logs []*raft.Log) error {
	if len(logs) == 0 {
		return nil
	}
	vals := make([][]byte, len(logs))
	for i, l := range logs {
		vals[i] = encode(nil, l)
	}
	err := g.s.c.submit(func(tx *bbolt.Tx) (func(), error) {
		b, err := tx.CreateBucketIfNotExists(g.name)
		if err != nil {
			return nil, err
		}
		for i, l := range logs {
			if err := b.Put(key(l.Index), vals[i]); err != nil {
				return nil, err
			}
		}
		first, last := bounds(b)
		return func() { g.setBounds(first, last) }, nil
	})
	if err != nil {
		return fmt.Errorf("store %d entries in the raft log of group %d: %w", len(logs), g.gid, err)
	}
	return nil
}

// DeleteRange deletes the entries from min to max, inclusive: a prefix
// once a snapshot covers it, or a suffix a new leader overwrites.
func (g *GroupLog) DeleteRange(min, max uint64) error {
	err := g.s.c.submit(func(tx *bbolt.Tx) (func(), error) {
		b := tx.Bucket(g.name)
		if b == nil {
			return nil, nil
		}
		c := b.Cursor()
		for k, _ := c.Seek(key(min)); k != nil && binary.BigEndian.Uint64(k) <= max; k, _ = c.Seek(key(min)) {
			if err := c.Delete(); err != nil {
				return nil, err
			}
		}
		first, last := bounds(b)
		return func() { g.setBounds(first, last) }, nil
	})
	if err != nil {
		return fmt.Errorf("delete entries %d-%d of the raft log of group %d: %w", min, max, g.gid, err)
	}
	return nil
}
