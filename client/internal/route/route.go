// Package route is the client's single-hop routing, apart from HTTP: the
// key hash the members use, a routing document made quick to look up, and
// the router that keeps the newest one and reads it again, in the
// background and at most every RefreshEvery, when told it is stale. The
// standard library only; package client fetches the document.
package route

import (
	"context"
	"hash/fnv"
	"sync"
	"sync/atomic"
	"time"
)

// Bucket is the bucket of key among buckets buckets, as the members hash
// it: FNV-1a 64 of the key's bytes, mod buckets.
func Bucket(key string, buckets int) int {
	h := fnv.New64a()
	_, _ = h.Write([]byte(key))
	return int(h.Sum64() % uint64(buckets))
}

// Table is one routing document, quick to look up.
type Table struct {
	version     uint64
	owners      []uint64
	leaders     map[uint64]string // group → leader's base URL
	partitioned map[string]bool
}

// NewTable builds the table of a document at version: owners[b] owns
// bucket b (ignored, so that every region goes to the control group, when
// it does not have buckets entries), leaders maps groups to their
// leader's base URL.
func NewTable(version uint64, buckets int, owners []uint64, partitioned []string, leaders map[uint64]string) *Table {
	t := &Table{version: version, leaders: leaders, partitioned: map[string]bool{}}
	if buckets > 0 && len(owners) == buckets {
		t.owners = owners
		for _, p := range partitioned {
			t.partitioned[p] = true
		}
	}
	return t
}

// Leader is the base URL of the leader serving key of region and the
// table's version (at least 1), or "" when the table does not know it.
func (t *Table) Leader(region, key string) (string, uint64) {
	var g uint64
	if t.partitioned[region] {
		g = t.owners[Bucket(key, len(t.owners))]
	}
	u := t.leaders[g]
	if u == "" {
		return "", 0
	}
	return u, max(t.version, 1)
}

// RefreshEvery spaces the reads of the routing document.
const RefreshEvery = 500 * time.Millisecond

// OffFor is how long a router whose cluster refused the document (no
// permission, or a cluster without it) waits before asking again.
const OffFor = time.Minute

// Router keeps the newest table and reads the document again when told.
type Router struct {
	// fetch reads the document and installs it; refused says that the
	// cluster refused it (no reads for OffFor then).
	fetch   func(ctx context.Context) (refused bool)
	current atomic.Pointer[Table]
	mu      sync.Mutex
	running bool
	last    time.Time // the last read's start
	off     time.Time // no reads before this
}

// NewRouter is a router that reads the document with fetch.
func NewRouter(fetch func(ctx context.Context) (refused bool)) *Router {
	return &Router{fetch: fetch}
}

// Leader is Table.Leader on the current table; while none is known, or it
// does not know the key's leader, "" and a read of the document started.
func (r *Router) Leader(region, key string) (string, uint64) {
	if t := r.current.Load(); t != nil {
		if u, v := t.Leader(region, key); u != "" {
			return u, v
		}
	}
	r.Stale()
	return "", 0
}

// Install routes by t unless the installed table is newer.
func (r *Router) Install(t *Table) {
	for {
		cur := r.current.Load()
		if cur != nil && cur.version > t.version {
			return
		}
		if r.current.CompareAndSwap(cur, t) {
			return
		}
	}
}

// Stale starts a read of the document unless one runs or ran lately.
func (r *Router) Stale() {
	r.mu.Lock()
	now := time.Now()
	if r.running || now.Sub(r.last) < RefreshEvery || now.Before(r.off) {
		r.mu.Unlock()
		return
	}
	r.running, r.last = true, now
	r.mu.Unlock()
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		refused := r.fetch(ctx)
		r.mu.Lock()
		defer r.mu.Unlock()
		r.running = false
		if refused {
			r.off = time.Now().Add(OffFor)
		}
	}()
}
