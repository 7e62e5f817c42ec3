package store

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/kvnode/kvnode/fsm"
	"github.com/kvnode/kvnode/region"
	"github.com/kvnode/kvnode/store/transport"
)

// Reads of one group's part (a partitioned region's share of a read, a
// query's partial, a listing's opening): on this node's replica when it
// has a usable one, else on a member that hosts the group, retried as
// reads may be. The packages above the store say what to do with the
// replica (Visit) and what a member answers (Serve, Call).

// retryPart runs one read of group gid's part until it succeeds or fails
// for good: errors a read may retry (retryableRead) are tried again after
// pause, against whichever replica once(attempt) picks, until LeaderWait
// or ctx ends. what names the operation in the final error.
func retryPart[T any](ctx context.Context, r *Router, gid uint64, what string, once func(attempt int) (T, error)) (T, error) {
	var last error
	var since time.Time
	for attempt := 0; ; attempt++ {
		v, err := once(attempt)
		if err == nil {
			return v, nil
		}
		if !retryableRead(err) {
			return v, err
		}
		last = err
		if since.IsZero() {
			since = time.Now()
		}
		if err := r.pause(ctx, r.view.localFor(gid), attempt, since, last); err != nil {
			var zero T
			return zero, fmt.Errorf("%s group %d: %w", what, gid, err)
		}
	}
}

// Visit runs local on this node's replica of group gid once a read at c
// may be served from it (a follower that cannot catch up within
// catchUpWait hands the read to another member), or remote with the
// internal address of a member that hosts the group; every retry looks
// again, since a replica opens (or moves away) while the cluster changes.
func (r *Router) Visit(ctx context.Context, gid uint64, c region.Consistency, what string, local func(*fsm.FSM) error, remote func(addr string) error) error {
	_, err := retryPart(ctx, r, gid, what, func(attempt int) (struct{}, error) {
		if g := r.view.localFor(gid); g != nil {
			err := r.localRead(ctx, g, c, catchUpWait)
			if err == nil {
				return struct{}{}, local(g.FSM())
			}
			if !errors.Is(err, errLagging) {
				return struct{}{}, err
			}
			// Behind: another member answers.
		}
		addr, err := r.view.hostFor(gid, attempt)
		if err != nil {
			return struct{}{}, err
		}
		region.NoteHop(ctx)
		return struct{}{}, remote(addr)
	})
	return err
}

// LocalPart returns this node's replica of partition group gid once a
// read at c may be served from it; an error when the node does not host
// it (any more) or it is behind.
func (r *Router) LocalPart(ctx context.Context, gid uint64, c region.Consistency) (*fsm.FSM, error) {
	g := r.view.localFor(gid)
	if g == nil {
		return nil, fmt.Errorf("partition group %d is not hosted on %s: %w", gid, r.name, errNotHosted)
	}
	if err := r.localRead(ctx, g, c, catchUpWait); err != nil {
		return nil, err
	}
	return g.FSM(), nil
}

// groupRPCPath is the path of group RPC name for group gid.
func groupRPCPath(gid uint64, name string) string {
	return "/v1/groups/" + strconv.FormatUint(gid, 10) + "/" + name
}

// Call sends body to the group RPC name of group gid on the member at
// addr (its Serve) and returns the answer. A connection that broke
// mid-call is errNoAnswer, which a read may retry.
func (r *Router) Call(ctx context.Context, addr string, gid uint64, name string, body []byte) ([]byte, error) {
	data, err := r.client.Call(ctx, http.MethodPost, addr, groupRPCPath(gid, name), body)
	if err != nil {
		return nil, readRPCErr(ctx, err)
	}
	return data, nil
}

// Serve answers the group RPC name (POST /v1/groups/{gid}/name) on this
// node: a request for a group it does not host, or whose replica halted,
// is refused with a code the caller retries elsewhere; the body (at most
// the frame limit) goes to h with replica, which returns this node's
// replica once a read at a consistency may be served from it; h's answer
// is sent as JSON, or refused whole (region.ErrTooLarge, what naming it)
// when it exceeds the frame limit.
func (r *Router) Serve(name, what string, h func(ctx context.Context, replica func(region.Consistency) (*fsm.FSM, error), body []byte) ([]byte, error)) {
	r.rpc.mux.HandleFunc("POST /v1/groups/{gid}/"+name, func(w http.ResponseWriter, req *http.Request) {
		g, ok := r.rpc.group(w, req)
		if !ok {
			return
		}
		ctx, cancel := transport.RequestContext(req)
		defer cancel()
		body, err := transport.ReadFrame(req.Body, r.cfg.MaxFrameBytes, "the "+name+" request")
		if err != nil {
			rpcCodes.WriteError(w, err)
			return
		}
		replica := func(c region.Consistency) (*fsm.FSM, error) {
			if r.view.localFor(g.ID()) == nil {
				return nil, fmt.Errorf("group %d on %s is moving away: %w", g.ID(), r.name, errNotHosted)
			}
			if err := r.localRead(ctx, g, c, catchUpWait); err != nil {
				return nil, err
			}
			return g.FSM(), nil
		}
		out, err := h(ctx, replica, body)
		if err != nil {
			rpcCodes.WriteError(w, err)
			return
		}
		r.rpc.writeFrame(w, "application/json", out, what)
	})
}
