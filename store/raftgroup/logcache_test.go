package raftgroup

import (
	"bytes"
	"testing"

	"github.com/hashicorp/raft"
)

// countingStore counts the reads that reach the store behind the cache.
type countingStore struct {
	*raft.InmemStore
	reads int
}

func (s *countingStore) GetLog(index uint64, out *raft.Log) error {
	s.reads++
	return s.InmemStore.GetLog(index, out)
}

func entry(index uint64, size int) *raft.Log {
	return &raft.Log{Index: index, Term: 1, Type: raft.LogCommand, Data: bytes.Repeat([]byte{byte(index)}, size)}
}

func mustGet(t *testing.T, c *logCache, index uint64, size int) {
	t.Helper()
	var l raft.Log
	if err := c.GetLog(index, &l); err != nil {
		t.Fatalf("GetLog(%d): %v", index, err)
	}
	if l.Index != index || len(l.Data) != size || (size > 0 && l.Data[0] != byte(index)) {
		t.Fatalf("GetLog(%d) = index %d, %d bytes; want index %d, %d bytes", index, l.Index, len(l.Data), index, size)
	}
}

func TestLogCacheBoundsBytesButKeepsTheNewestEntry(t *testing.T) {
	store := &countingStore{InmemStore: raft.NewInmemStore()}
	c := newLogCache(store, 8, 1000)
	for i := uint64(1); i <= 5; i++ {
		if err := c.StoreLog(entry(i, 300)); err != nil {
			t.Fatal(err)
		}
	}
	// 5 × (300+96) bytes > 1000: only the last two fit.
	for i := uint64(1); i <= 5; i++ {
		mustGet(t, c, i, 300)
	}
	if store.reads != 3 {
		t.Fatalf("store reads = %d, want 3 (entries 1-3 evicted by the byte bound, 4-5 cached)", store.reads)
	}
	// An entry larger than the whole bound is still kept: it is the newest.
	if err := c.StoreLog(entry(6, 5000)); err != nil {
		t.Fatal(err)
	}
	store.reads = 0
	mustGet(t, c, 6, 5000)
	mustGet(t, c, 5, 300)
	if store.reads != 1 {
		t.Fatalf("store reads = %d, want 1 (only the newest entry cached)", store.reads)
	}
	if c.bytes > 5000+96 || c.n != 1 {
		t.Fatalf("cache holds %d entries, %d bytes", c.n, c.bytes)
	}
}

func TestLogCacheBoundsEntries(t *testing.T) {
	store := &countingStore{InmemStore: raft.NewInmemStore()}
	c := newLogCache(store, 4, 1<<20)
	var logs []*raft.Log
	for i := uint64(1); i <= 10; i++ {
		logs = append(logs, entry(i, 10))
	}
	if err := c.StoreLogs(logs); err != nil {
		t.Fatal(err)
	}
	for i := uint64(1); i <= 10; i++ {
		mustGet(t, c, i, 10)
	}
	if store.reads != 6 {
		t.Fatalf("store reads = %d, want 6 (the 4 newest cached)", store.reads)
	}
}

func TestLogCacheForgetsOnRewriteAndDelete(t *testing.T) {
	store := &countingStore{InmemStore: raft.NewInmemStore()}
	c := newLogCache(store, 16, 1<<20)
	for i := uint64(1); i <= 4; i++ {
		if err := c.StoreLog(entry(i, 10)); err != nil {
			t.Fatal(err)
		}
	}
	// A follower told to drop its tail: 3 and 4 go, then a new 3 arrives.
	if err := c.DeleteRange(3, 4); err != nil {
		t.Fatal(err)
	}
	var l raft.Log
	if err := c.GetLog(4, &l); err != raft.ErrLogNotFound {
		t.Fatalf("GetLog(4) after DeleteRange: %v, want ErrLogNotFound", err)
	}
	newer := entry(3, 20)
	newer.Term = 2
	if err := c.StoreLog(newer); err != nil {
		t.Fatal(err)
	}
	if err := c.GetLog(3, &l); err != nil || l.Term != 2 || len(l.Data) != 20 {
		t.Fatalf("GetLog(3) = term %d, %d bytes, %v; want the rewritten entry", l.Term, len(l.Data), err)
	}
	// A gap (entries stored out of order) empties the cache rather than
	// serving a wrong neighbour.
	if err := c.StoreLog(entry(9, 10)); err != nil {
		t.Fatal(err)
	}
	if c.n != 1 || c.ring[c.head].Index != 9 {
		t.Fatalf("cache after a gap holds %d entries", c.n)
	}
	mustGet(t, c, 2, 10)
}
