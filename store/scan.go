package store

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"

	"github.com/kvnode/kvnode/fsm"
	"github.com/kvnode/kvnode/region"
	"github.com/kvnode/kvnode/store/listing"
	"github.com/kvnode/kvnode/store/transport"
)

// Streamed region listings (GET /kv/v1/{region}?limit= and .../keys): the
// store decides what each group's part is read from, after which read
// barrier, with which retries, and serves the scan RPC; package
// store/listing streams and merges the parts and owns the scan framing;
// package store/regions opens one part per group. See DESIGN.md,
// "Listings".
//
//	POST /v1/groups/{gid}/scan   body: JSON scanReq → a listing frame stream

// scanReq asks a member for its replica's part of a region, streamed.
type scanReq struct {
	Region   string `json:"region"`
	ID       uint64 `json:"id"`
	Limit    int    `json:"limit"`
	KeysOnly bool   `json:"keysOnly,omitempty"`
	Peek     int    `json:"peek,omitempty"`
	Stale    bool   `json:"stale,omitempty"`
}

// OpenPart opens group gid's part of region name (ID id) as a listing
// source: a frozen clone of this node's replica once a read at c may be
// served from it, else a member's stream. It retries as every read of a
// part does until the stream has begun: from then on nothing is retried,
// since part of it may have been sent on.
func (r *Router) OpenPart(ctx context.Context, gid uint64, c region.Consistency, name string, id uint64, opt region.ListOptions) (listing.Source, error) {
	var src listing.Source
	err := r.Visit(ctx, gid, c, "list", func(f *fsm.FSM) error {
		var err error
		src, err = listing.Local(f, name, id, opt)
		return err
	}, func(addr string) error {
		var err error
		src, err = r.client.scan(ctx, addr, gid, scanReq{
			Region: name, ID: id, Limit: opt.Limit, KeysOnly: opt.KeysOnly,
			Peek: opt.PeekBytes, Stale: c == region.Stale,
		})
		return err
	})
	if err != nil {
		return nil, err
	}
	return src, nil
}

// ---- the scan RPC: server ----

// scan serves POST /v1/groups/{gid}/scan: this replica's part of a region,
// after the read barrier the request asks for, from a frozen clone, as a
// frame stream. The stream goes at the reader's pace (the writes block on
// TCP flow control); a reader that goes away ends it at the next write, and
// the request's deadline at the next context check.
func (r *rpcServer) scan(w http.ResponseWriter, req *http.Request) {
	g, ok := r.group(w, req)
	if !ok {
		return
	}
	ctx, cancel := transport.RequestContext(req)
	defer cancel()
	var sr scanReq
	if err := json.NewDecoder(io.LimitReader(req.Body, 1<<20)).Decode(&sr); err != nil {
		rpcCodes.WriteError(w, fmt.Errorf("%w: scan request: %v", region.ErrInvalid, err))
		return
	}
	if !r.readable(ctx, w, g, sr.Stale) {
		return
	}
	src, err := listing.Local(g.FSM(), sr.Region, sr.ID, region.ListOptions{Limit: sr.Limit, KeysOnly: sr.KeysOnly, PeekBytes: sr.Peek})
	if err != nil {
		rpcCodes.WriteError(w, err)
		return
	}
	rc := http.NewResponseController(w)
	// A reader that stops reading blocks our writes; the deadline ends
	// them too, not just the context checks between entries. (net/http
	// clears a connection's write deadline after each request, so a pooled
	// connection does not keep it.)
	if dl, ok := ctx.Deadline(); ok {
		_ = rc.SetWriteDeadline(dl)
	}
	w.Header().Set("Content-Type", "application/octet-stream")
	w.WriteHeader(http.StatusOK)
	fw := listing.NewWriter(w)
	fw.Head(src.Peek())
	// The caller waits for the head of every group before it reads on.
	if fw.Flush() != nil || rc.Flush() != nil {
		return
	}
	var sent uint64
	for {
		e, ok, _ := src.Next() // a local source does not fail
		if !ok {
			break
		}
		fw.Entry(e, sr.KeysOnly)
		if fw.Err() != nil {
			return // the reader went away
		}
		if sent++; sent%listing.CtxEvery == 0 && ctx.Err() != nil {
			fw.Fail(fmt.Sprintf("scan of group %d on %s stopped after %d entries: %v", g.ID(), r.s.name, sent, ctx.Err()))
			_ = fw.Flush()
			return
		}
	}
	fw.End(sent)
	_ = fw.Flush()
}

// ---- the scan RPC: client ----

// scan opens a member's stream of group gid's part and reads its head.
// Until the head has arrived nothing of the stream has been used, so
// failures up to then are classified like any read RPC's (and retried by
// openPart).
func (c *rpcClient) scan(ctx context.Context, addr string, gid uint64, sr scanReq) (listing.Source, error) {
	body, err := json.Marshal(sr)
	if err != nil {
		return nil, err
	}
	resp, err := c.Open(ctx, addr, groupRPCPath(gid, "scan"), body)
	if err != nil {
		return nil, readRPCErr(ctx, err)
	}
	src, err := listing.Remote(resp.Body, addr, gid, sr.Peek)
	if err != nil {
		return nil, readRPCErr(ctx, err)
	}
	return src, nil
}
