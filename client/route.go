package client

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"

	"github.com/kvnode/kvnode/client/internal/route"
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

// Bucket is the bucket of key among buckets buckets, as the members hash
// it: FNV-1a 64 of the key's bytes, mod buckets.
func Bucket(key string, buckets int) int { return route.Bucket(key, buckets) }

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
		c.route.Install(rt.table())
	}
	return &rt, nil
}

// newRouter is c's router: it reads the document with c.Routing.
func newRouter(c *Client) *route.Router {
	return route.NewRouter(func(ctx context.Context) bool {
		_, err := c.Routing(ctx)
		return errors.Is(err, ErrForbidden) || errors.Is(err, ErrUnauthorized) || errors.Is(err, ErrNotFound)
	})
}

// table is rt made quick to look up.
func (rt *Routing) table() *route.Table {
	leaders := map[uint64]string{}
	for _, g := range rt.Groups {
		if base, err := ParseBase(g.URL, false); g.URL != "" && err == nil {
			leaders[g.Group] = base
		}
	}
	return route.NewTable(rt.Version, rt.Buckets, rt.Owners, rt.Partitioned, leaders)
}

// decodeError is an answer that is not what the API promises.
type decodeError struct {
	what string
	err  error
}

func (e *decodeError) Error() string { return "client: reading the " + e.what + ": " + e.err.Error() }
func (e *decodeError) Unwrap() error { return e.err }
