// Package routing is the contract between members and clients that send
// each key straight to its group's leader (single hop, as Geode's clients
// do with a bucket's primary): the routing document of GET
// /management/v1/routing, the headers a client asks for hop counts with and
// the members answer, and the outcome a refused write certifies.
//
// The document names, at one version of the partition table, the owner of
// every bucket and the leader (with its REST URL) of every group; a client
// hashes a key as the members do (region.Bucket: FNV-1a 64 of the key's
// bytes, mod the bucket count) and sends its write or linearizable read to
// that URL. Leaderships move without a new table version, so a member that
// had to ask another one (it forwarded the write, or fetched the read index
// from a leader elsewhere) says so in HeaderHops; the client then fetches
// the document again. Nothing depends on the client being right: a request
// at the wrong member is served the same way, a hop later.
//
// It imports no server package but region's vocabulary, so that the REST
// layer, the node that builds the document and the tests share one
// definition.
package routing

import (
	"context"
	"errors"
	"net/http"
	"strconv"

	"github.com/labstack/echo/v4"

	"github.com/kvnode/kvnode/region"
)

// The document is at GET /management/v1/routing (rest/access's
// RoutingPath). It needs CLUSTER:READ, not CLUSTER:MANAGE: it shows what
// GET /kv/v1/servers does, and who leads.

// HashFNV1a64 names the only key hash: bucket = FNV-1a 64(key) mod Buckets.
const HashFNV1a64 = "fnv1a64"

// Headers of the contract.
const (
	// HeaderRoute is sent by a client that routes by the document, with the
	// version it routed by; its answer then carries HeaderHops.
	HeaderRoute = "Kvnode-Route"
	// HeaderHops counts the other members the answering member had to ask
	// to serve the request; 0 means the client reached the right member.
	HeaderHops = "Kvnode-Hops"
	// HeaderOutcome, on an error answer to a single-key write, is
	// OutcomeNotApplied when the member knows nothing was written (no
	// leader, not the leader, the bucket moving): such a write may be sent
	// again. Its absence promises nothing.
	HeaderOutcome     = "Kvnode-Outcome"
	OutcomeNotApplied = "not-applied"
)

// Document is the answer of GET /management/v1/routing.
type Document struct {
	// Version is the partition table's version: a document with a higher
	// one places buckets more recently. 0 before the table exists.
	Version uint64 `json:"version"`
	// Hash is HashFNV1a64; Buckets the number of buckets keys hash into.
	Hash    string `json:"hash"`
	Buckets int    `json:"buckets"`
	// Owners[b] is the partition group that owns bucket b (empty before
	// the table exists).
	Owners []uint64 `json:"owners"`
	// Groups are the control group (0: replicated regions, definitions)
	// and every partition group, each with its leader as last known.
	Groups []Group `json:"groups"`
	// Partitioned names the partitioned regions; any other region is
	// replicated and served by the control group.
	Partitioned []string `json:"partitionedRegions"`
}

// Group is one Raft group's leader.
type Group struct {
	Group  uint64 `json:"group"`
	Leader string `json:"leader"` // "" when no member reported one
	Term   uint64 `json:"term"`
	// URL is the leader's REST base URL, "" when unknown.
	URL string `json:"url"`
}

// CountHops is Echo middleware: for a request that carries HeaderRoute,
// the store notes every hop into the request's context (region.NoteHop)
// and the answer carries their count in HeaderHops. Other requests pass
// untouched, at the cost of one header lookup.
func CountHops(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		req := c.Request()
		if req.Header.Get(HeaderRoute) == "" {
			return next(c)
		}
		ctx, hops := region.WithHops(req.Context())
		c.SetRequest(req.WithContext(ctx))
		res := c.Response()
		res.Before(func() { res.Header().Set(HeaderHops, strconv.Itoa(hops.Count())) })
		return next(c)
	}
}

// notApplied wraps the error of a write that certainly changed nothing.
type notApplied struct{ error }

func (e notApplied) Unwrap() error { return e.error }

// SingleWrite returns err, marked as not applied when the write of a
// request on keys keys (one command to one group) failed before anything
// was appended: no leader, not the leader, a bucket moving. A multi-key
// write may have been applied in some groups and not others, so it is
// never marked.
func SingleWrite(err error, keys int) error {
	if err == nil || keys != 1 || errors.Is(err, region.ErrIndeterminate) || errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	if errors.Is(err, region.ErrNoLeader) || errors.Is(err, region.ErrNotLeader) || errors.Is(err, region.ErrWrongGroup) {
		return notApplied{err}
	}
	return err
}

// SetOutcome sets HeaderOutcome on h when err was marked by SingleWrite.
func SetOutcome(h http.Header, err error) {
	var na notApplied
	if errors.As(err, &na) {
		h.Set(HeaderOutcome, OutcomeNotApplied)
	}
}
