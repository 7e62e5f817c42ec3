package client

import (
	"context"
	"encoding/json"
	"errors"
	"hash/fnv"
	"net/http"
	"sync"
	"sync/atomic"
	"time"
)

// Routing is the routing document (GET /management/v1/routing): which
// partition group owns each bucket, and each group's leader.
type Routing struct {
	// Version is the partition table's version: higher is newer.
	Version uint64 `json:"version"`
	// Hash names the key hash ("fnv1a64": FNV-1a 64 of the key's bytes,
	// mod Buckets).
	Hash    string `json:"hash"`
	Buckets int    `json:"buckets"`
	// Owners[b] is the partition group owning bucket b.
	Owners []uint64 `json:"owners"`
	// Groups are the control group (0), which serves the replicated
	// regions, and the partition groups.
	Groups []RoutingGroup `json:"groups"`
	// Partitioned names the partitioned regions.
	Partitioned []string `json:"partitionedRegions"`
}

// RoutingGroup is one Raft group and its leader.
type RoutingGroup struct {
	Group  uint64 `json:"group"`
	Leader string `json:"leader"`
	Term   uint64 `json:"term"`
	URL    string `json:"url"` // the leader's REST base URL; "" when unknown
}

// Bucket is the bucket of key among buckets buckets, as the members hash it.
func Bucket(key string, buckets int) int {
	h := fnv.New64a()
	_, _ = h.Write([]byte(key))
	return int(h.Sum64() % uint64(buckets))
}

// GroupOf is the group serving key of region: the owner of its bucket in
// a partitioned region, the control group (0) in a replicated one.
func (rt *Routing) GroupOf(region, key string) uint64 {
	for _, p := range rt.Partitioned {
		if p == region {
			if rt.Buckets <= 0 || len(rt.Owners) != rt.Buckets {
				return 0
			}
			return rt.Owners[Bucket(key, rt.Buckets)]
		}
	}
	return 0
}

// LeaderURL is the REST base URL of the leader serving key of region,
// "" when the document does not know it.
func (rt *Routing) LeaderURL(region, key string) string {
	g := rt.GroupOf(region, key)
	for _, grp := range rt.Groups {
		if grp.Group == g {
			return grp.URL
		}
	}
	return ""
}

// Routing reads the routing document from the cluster (it needs
// CLUSTER:READ) and, unless single hop is off, routes by it from now on.
func (c *Client) Routing(ctx context.Context) (*Routing, error) {
	resp, err := c.do(ctx, &request{method: http.MethodGet, path: "/management/v1/routing", idempotent: true})
	if err != nil {
		return nil, err
	}
	var rt Routing
	if err := json.Unmarshal(resp.body, &rt); err != nil {
		return nil, &decodeError{what: "routing document", err: err}
	}
	if c.route != nil {
		c.route.install(&rt)
	}
	return &rt, nil
}

// router keeps the routing document a client routes by and reads it again
// when told it is stale, in the background and at most every
// refreshEvery, so that a burst of answers saying so costs one read.
type router struct {
	c       *Client
	current atomic.Pointer[table]
	mu      sync.Mutex
	running bool
	last    time.Time // the last read's start
	off     time.Time // no reads before this (refused: 401, 403, 404)
}

// refreshEvery spaces the reads of the routing document.
const refreshEvery = 500 * time.Millisecond

// offFor is how long a client that may not read the document (or a
// cluster without it) waits before asking again.
const offFor = time.Minute

func newRouter(c *Client) *router { return &router{c: c} }

// table is a routing document made quick to look up.
type table struct {
	version     uint64
	owners      []uint64
	leaders     map[uint64]string // group → leader's URL
	partitioned map[string]bool
}

// leaderFor is the URL of the leader serving key of region and the
// document's version (at least 1), or "" (and a read of the document
// started) while none is known.
func (r *router) leaderFor(region, key string) (string, uint64) {
	t := r.current.Load()
	if t == nil {
		r.stale()
		return "", 0
	}
	var g uint64
	if t.partitioned[region] {
		g = t.owners[Bucket(key, len(t.owners))]
	}
	u := t.leaders[g]
	if u == "" {
		r.stale()
		return "", 0
	}
	return u, max(t.version, 1)
}

// install routes by rt unless an installed document is newer.
func (r *router) install(rt *Routing) {
	t := &table{version: rt.Version, leaders: map[uint64]string{}, partitioned: map[string]bool{}}
	if rt.Buckets > 0 && len(rt.Owners) == rt.Buckets {
		t.owners = rt.Owners
		for _, p := range rt.Partitioned {
			t.partitioned[p] = true
		}
	}
	for _, g := range rt.Groups {
		if g.URL == "" {
			continue
		}
		if base, err := ParseBase(g.URL, false); err == nil {
			t.leaders[g.Group] = base
		}
	}
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

// stale starts a read of the document unless one runs or ran lately.
func (r *router) stale() {
	r.mu.Lock()
	now := time.Now()
	if r.running || now.Sub(r.last) < refreshEvery || now.Before(r.off) {
		r.mu.Unlock()
		return
	}
	r.running, r.last = true, now
	r.mu.Unlock()
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_, err := r.c.Routing(ctx)
		r.mu.Lock()
		defer r.mu.Unlock()
		r.running = false
		if errors.Is(err, ErrForbidden) || errors.Is(err, ErrUnauthorized) || errors.Is(err, ErrNotFound) {
			r.off = time.Now().Add(offFor)
		}
	}()
}

// decodeError is an answer that is not what the API promises.
type decodeError struct {
	what string
	err  error
}

func (e *decodeError) Error() string { return "client: reading the " + e.what + ": " + e.err.Error() }
func (e *decodeError) Unwrap() error { return e.err }
