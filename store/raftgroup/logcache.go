package raftgroup

import (
	"sync"

	"github.com/hashicorp/raft"
)

// logCache keeps the latest entries of a group's log in memory, bounded
// both in entries and in bytes, in front of the log store.
//
// Why not raft.NewLogCache: it bounds the count only, and it holds every
// entry it caches until it is overwritten. With bulk loads (a multi-key
// PUT of 1,000 entries is one ~270 KB log entry) its 512 slots pinned
// ~140 MB per group on every member: half of the live heap of a member
// holding 1 million entries, to save reads that the page cache serves
// anyway. This cache keeps at most maxEntries and at most maxBytes of
// entry data, but always the newest entry, however large: the leader
// reads the last entry's term before every AppendEntries, and re-reading a
// 100 MiB entry for each round is what the cache exists to avoid.
//
// Entries are kept as one run of consecutive indexes (Raft appends in
// order); anything else (a gap, a rewrite after a conflict, a DeleteRange)
// empties the cache, which is always safe: it only ever misses.
type logCache struct {
	raft.LogStore

	maxEntries int
	maxBytes   int

	mu    sync.Mutex
	ring  []*raft.Log // capacity maxEntries; ring[(head+i)%len] is the i-th oldest
	head  int
	n     int
	bytes int
}

func newLogCache(store raft.LogStore, maxEntries, maxBytes int) *logCache {
	return &logCache{
		LogStore:   store,
		maxEntries: maxEntries,
		maxBytes:   maxBytes,
		ring:       make([]*raft.Log, maxEntries),
	}
}

// entrySize is what an entry costs the cache: its data and extensions,
// plus the struct.
func entrySize(l *raft.Log) int { return len(l.Data) + len(l.Extensions) + 96 }

// GetLog serves index from memory when it is cached.
func (c *logCache) GetLog(index uint64, out *raft.Log) error {
	c.mu.Lock()
	if c.n > 0 {
		first := c.ring[c.head].Index
		if index >= first && index < first+uint64(c.n) {
			*out = *c.ring[(c.head+int(index-first))%len(c.ring)]
			c.mu.Unlock()
			return nil
		}
	}
	c.mu.Unlock()
	return c.LogStore.GetLog(index, out)
}

// StoreLog stores one entry.
func (c *logCache) StoreLog(l *raft.Log) error { return c.StoreLogs([]*raft.Log{l}) }

// StoreLogs writes through to the store, then caches the entries; when
// the store fails, the cache is emptied (it cannot know what was kept).
func (c *logCache) StoreLogs(logs []*raft.Log) error {
	err := c.LogStore.StoreLogs(logs)
	c.mu.Lock()
	defer c.mu.Unlock()
	if err != nil {
		c.reset()
		return err
	}
	for _, l := range logs {
		c.add(l)
	}
	return nil
}

// DeleteRange deletes from the store and empties the cache.
func (c *logCache) DeleteRange(min, max uint64) error {
	c.mu.Lock()
	c.reset()
	c.mu.Unlock()
	return c.LogStore.DeleteRange(min, max)
}

// add appends l, evicting the oldest entries past either bound. Holds mu.
func (c *logCache) add(l *raft.Log) {
	if c.n > 0 {
		last := c.ring[(c.head+c.n-1)%len(c.ring)]
		if l.Index != last.Index+1 {
			c.reset()
		}
	}
	if c.n == len(c.ring) {
		c.evict()
	}
	c.ring[(c.head+c.n)%len(c.ring)] = l
	c.n++
	c.bytes += entrySize(l)
	for c.n > 1 && c.bytes > c.maxBytes {
		c.evict()
	}
}

// evict drops the oldest entry. Holds mu.
func (c *logCache) evict() {
	old := c.ring[c.head]
	c.ring[c.head] = nil
	c.head = (c.head + 1) % len(c.ring)
	c.n--
	c.bytes -= entrySize(old)
}

// reset empties the cache. Holds mu.
func (c *logCache) reset() {
	clear(c.ring)
	c.head, c.n, c.bytes = 0, 0, 0
}
