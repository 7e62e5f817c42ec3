package store

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/kvnode/kvnode/fsm/codec"
	"github.com/kvnode/kvnode/oql"
	"github.com/kvnode/kvnode/region"
	"github.com/kvnode/kvnode/store/forward"
	"github.com/kvnode/kvnode/store/raftgroup"
	"github.com/kvnode/kvnode/store/transport"
)

// The store's RPCs (package transport carries them):
//
//	POST /v1/groups/{gid}/apply      body: encoded codec.Command → encoded codec.Result
//	POST /v1/groups/{gid}/read       body: JSON readReq → JSON readResp
//	POST /v1/groups/{gid}/scan       body: JSON scanReq → framed stream (scan.go)
//	POST /v1/groups/{gid}/readindex  → uvarint read index (leader only)
//	POST /v1/groups/{gid}/term?id=   → uvarint term of the group here, if this is member id
//	POST /v1/groups/{gid}/query      body: JSON queryReq → oql.EncodePartial
//	POST /v1/groups/{gid}/leave?id=&reason= → the leader removes server id from the group
//	POST /v1/groups/{gid}/snapshot   → the fsm snapshot stream after the read barrier, header Kv-Term (snapshot.go)
//	GET  /v1/status                  → JSON NodeStatus
//
// An apply goes to the group's leader, except from a node that does not host
// the group: it marks the request Kv-Forward and the receiving member hands
// it to its leader, once (the second hop is never marked, so no loops).

// rpcServer answers other nodes' RPCs.
type rpcServer struct {
	s   *Store
	srv *http.Server
	// mux routes the RPCs; HandleRPC adds others' (function calls).
	mux   *http.ServeMux
	quiet transport.Quiet // touched by every write a member sends here
}

func newRPCServer(s *Store) *rpcServer {
	mux := http.NewServeMux()
	r := &rpcServer{s: s, mux: mux}
	mux.HandleFunc("POST /v1/groups/{gid}/apply", r.apply)
	mux.HandleFunc("POST /v1/groups/{gid}/applybatch", r.applyBatch)
	mux.HandleFunc("POST /v1/groups/{gid}/scan", r.scan) // scan.go
	mux.HandleFunc("POST /v1/groups/{gid}/readindex", r.readIndex)
	mux.HandleFunc("POST /v1/groups/{gid}/term", r.term)
	mux.HandleFunc("POST /v1/groups/{gid}/leave", r.leave)
	mux.HandleFunc("POST /v1/groups/{gid}/snapshot", r.snapshotRPC) // snapshot.go
	mux.HandleFunc("GET /v1/status", r.status)
	r.srv = &http.Server{
		// A body that drips in is cut off (transport.GuardBodies).
		Handler:           transport.GuardBodies(mux),
		ReadHeaderTimeout: raftgroup.InternalTimeout,
		IdleTimeout:       2 * time.Minute,
		ErrorLog:          slog.NewLogLogger(s.logger.Handler(), slog.LevelWarn),
	}
	return r
}

func (r *rpcServer) group(w http.ResponseWriter, req *http.Request) (*raftgroup.Group, bool) {
	gid, err := strconv.ParseUint(req.PathValue("gid"), 10, 64)
	if err != nil {
		rpcCodes.WriteError(w, fmt.Errorf("bad group id %q", req.PathValue("gid")))
		return nil, false
	}
	g := r.s.groups.get(gid)
	if g == nil {
		rpcCodes.WriteError(w, fmt.Errorf("raft group %d on %s: %w", gid, r.s.name, errNotHosted))
		return nil, false
	}
	if err := g.Halted(); err != nil {
		// Serve nothing from it; the sender tries another member.
		rpcCodes.WriteError(w, fmt.Errorf("%s: %w", r.s.name, err))
		return nil, false
	}
	return g, true
}

func (r *rpcServer) apply(w http.ResponseWriter, req *http.Request) {
	r.quiet.Touch()
	g, ok := r.group(w, req)
	if !ok {
		return
	}
	ctx, cancel := transport.RequestContext(req)
	defer cancel()
	data, err := transport.ReadFrame(req.Body, r.s.cfg.MaxFrameBytes, "the forwarded command")
	if err != nil {
		rpcCodes.WriteError(w, err)
		return
	}
	// Decoded here too, not only by the leader's Group.Apply: a command that
	// is handed on to our leader must not reach it broken either.
	if _, err := codec.CheckCommand(data); err != nil {
		rpcCodes.WriteError(w, fmt.Errorf("%w from %s: %v", raftgroup.ErrBadCommand, req.RemoteAddr, err))
		return
	}
	var res *codec.Result
	switch {
	case g.IsLeader():
		res, err = g.Apply(ctx, data)
	case req.Header.Get(transport.HeaderForward) != "":
		// From a node that does not host the group: one more hop, to our
		// leader, and not further.
		id, addr := g.Leader()
		if id == "" || id == r.s.name {
			err = fmt.Errorf("group %d on %s: %w", g.ID(), r.s.name, region.ErrNoLeader)
		} else {
			res, err = r.s.client.apply(ctx, addr, g.ID(), data, false)
		}
	default:
		// The sender retries against the leader it learns about.
		err = fmt.Errorf("%s is not the leader of group %d: %w", r.s.name, g.ID(), region.ErrNotLeader)
	}
	if err != nil {
		rpcCodes.WriteError(w, err)
		return
	}
	w.Header().Set("Content-Type", "application/octet-stream")
	_, _ = w.Write(codec.EncodeResult(nil, res))
}

// applyBatch serves a batch of commands forwarded to this member, the
// group's leader (package forward batches them).
func (r *rpcServer) applyBatch(w http.ResponseWriter, req *http.Request) {
	r.quiet.Touch()
	g, ok := r.group(w, req)
	if !ok {
		return
	}
	ctx, cancel := transport.RequestContext(req)
	defer cancel()
	body, err := transport.ReadFrame(req.Body, r.s.cfg.MaxFrameBytes, "the forwarded batch")
	if err != nil {
		rpcCodes.WriteError(w, err)
		return
	}
	if !g.IsLeader() {
		rpcCodes.WriteError(w, fmt.Errorf("%s is not the leader of group %d: %w", r.s.name, g.ID(), region.ErrNotLeader))
		return
	}
	// Group.Apply decodes every command before it enters the log.
	out, err := forward.ServeBatch(ctx, body, rpcCodes, g.Apply)
	if err != nil {
		rpcCodes.WriteError(w, fmt.Errorf("%w from %s: %v", raftgroup.ErrBadCommand, req.RemoteAddr, err))
		return
	}
	w.Header().Set("Content-Type", "application/octet-stream")
	_, _ = w.Write(out)
}

// readable reports whether this node's replica of g may answer a read now
// (stale: at once; else after the read barrier), or writes why not.
func (r *rpcServer) readable(ctx context.Context, w http.ResponseWriter, g *raftgroup.Group, stale bool) bool {
	c := region.Linearizable
	if stale {
		c = region.Stale
	}
	if r.s.router.view.localFor(g.ID()) == nil {
		rpcCodes.WriteError(w, fmt.Errorf("group %d on %s is moving away: %w", g.ID(), r.s.name, errNotHosted))
		return false
	}
	if err := r.s.router.localRead(ctx, g, c, catchUpWait); err != nil {
		rpcCodes.WriteError(w, err)
		return false
	}
	return true
}

// writeFrame sends an answer, or refuses it with region.ErrTooLarge when
// it is larger than the frame limit (the caller would refuse it anyway):
// a clear error for the client, instead of a cut answer.
func (r *rpcServer) writeFrame(w http.ResponseWriter, contentType string, out []byte, what string) {
	if limit := r.s.cfg.MaxFrameBytes; int64(len(out)) > limit {
		rpcCodes.WriteError(w, fmt.Errorf("%w: %s (%d bytes) is larger than the internal frame limit of %d bytes (set by --max-body-size): ask for fewer keys or rows at a time",
			region.ErrTooLarge, what, len(out), limit))
		return
	}
	w.Header().Set("Content-Type", contentType)
	_, _ = w.Write(out)
}

func (r *rpcServer) readIndex(w http.ResponseWriter, req *http.Request) {
	g, ok := r.group(w, req)
	if !ok {
		return
	}
	ctx, cancel := transport.RequestContext(req)
	defer cancel()
	if !g.IsLeader() {
		rpcCodes.WriteError(w, fmt.Errorf("%s is not the leader of group %d: %w", r.s.name, g.ID(), region.ErrNotLeader))
		return
	}
	idx, err := g.ReadIndex(ctx)
	if err != nil {
		rpcCodes.WriteError(w, err)
		return
	}
	_, _ = w.Write(binary.AppendUvarint(nil, idx))
}

// term answers a leader confirming its leadership (confirmLeadership) with
// this member's current term in the group. It refuses a request meant for
// another member: the caller dialed an address that is no longer its.
func (r *rpcServer) term(w http.ResponseWriter, req *http.Request) {
	if id := req.URL.Query().Get("id"); id != r.s.name {
		rpcCodes.WriteError(w, fmt.Errorf("this is %s, not %q: %w", r.s.name, id, transport.ErrUnreachable))
		return
	}
	g, ok := r.group(w, req)
	if !ok {
		return
	}
	_, _ = w.Write(binary.AppendUvarint(nil, g.Raft().CurrentTerm()))
}

func (r *rpcServer) leave(w http.ResponseWriter, req *http.Request) {
	g, ok := r.group(w, req)
	if !ok {
		return
	}
	ctx, cancel := transport.RequestContext(req)
	defer cancel()
	reason := req.URL.Query().Get("reason")
	if reason == "" { // a member of an older release
		reason = "left gracefully"
	}
	if err := g.RemoveServer(ctx, req.URL.Query().Get("id"), reason); err != nil {
		rpcCodes.WriteError(w, err)
		return
	}
	w.WriteHeader(http.StatusOK)
}

func (r *rpcServer) status(w http.ResponseWriter, _ *http.Request) {
	if r.s.stopping.Load() { // no place for leadership or a vote (HandOver)
		rpcCodes.WriteError(w, fmt.Errorf("%s: %w", r.s.name, region.ErrShuttingDown))
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(r.s.Status())
}

// rpcCodes are the sentinels that keep their identity across the store's
// RPCs, in the order they are checked.
var rpcCodes = transport.Codes{
	{Code: "not-leader", Err: region.ErrNotLeader},
	{Code: "no-leader", Err: region.ErrNoLeader},
	{Code: "indeterminate", Err: region.ErrIndeterminate},
	{Code: "not-hosted", Err: errNotHosted},
	// Sent with not-hosted's code (see errLagging); decodes as errNotHosted.
	{Code: "not-hosted", Err: errLagging},
	{Code: "region-not-found", Err: region.ErrRegionNotFound},
	{Code: "invalid", Err: region.ErrInvalid},
	// Members before oql's own sentinel was merged into region's send
	// this code; it decodes as region.ErrRegionNotFound, which encodes as
	// region-not-found (the first row that matches).
	{Code: "query-region-not-found", Err: region.ErrRegionNotFound},
	{Code: "query-too-large", Err: oql.ErrTooManyRows},
	{Code: "query-bind", Err: oql.ErrBind},
	{Code: "too-large", Err: region.ErrTooLarge},
	{Code: "bad-command", Err: raftgroup.ErrBadCommand},
	{Code: "wrong-group", Err: region.ErrWrongGroup},
}

// errNotHosted: the receiver does not host the group (it moved); the
// sender tries another member.
var errNotHosted = fmt.Errorf("%w: group not hosted here", region.ErrNotLeader)

// apply sends an encoded command to addr; forward lets the receiver hand it
// on to its leader once (the sender does not host the group).
// rpcClient is the store's typed calls over a transport.Client.
type rpcClient struct{ *transport.Client }

func newRPCClient(d *transport.Dialer, limit int64) *rpcClient {
	return &rpcClient{transport.NewClient(d, limit, rpcCodes)}
}

func (c *rpcClient) apply(ctx context.Context, addr string, gid uint64, cmd []byte, forward bool) (*codec.Result, error) {
	var hdr http.Header
	if forward {
		hdr = http.Header{transport.HeaderForward: {"1"}}
	}
	data, err := c.CallWith(ctx, http.MethodPost, addr, "/v1/groups/"+strconv.FormatUint(gid, 10)+"/apply", cmd, hdr)
	if err != nil {
		// An explicit refusal says what happened (its sentinel travels), and
		// a dial failure sent nothing; but a request that reached the other
		// node and got no answer may have been applied: outcome unknown.
		var re *transport.RemoteError
		if errors.As(err, &re) || errors.Is(err, transport.ErrUnreachable) {
			return nil, err
		}
		return nil, fmt.Errorf("%w: forwarding to %s failed: %v", region.ErrIndeterminate, addr, err)
	}
	res, err := codec.DecodeResult(data)
	if err != nil {
		return nil, fmt.Errorf("decode result from %s: %w", addr, err)
	}
	return res, nil
}

func (c *rpcClient) readIndex(ctx context.Context, addr string, gid uint64) (uint64, error) {
	data, err := c.Call(ctx, http.MethodPost, addr, "/v1/groups/"+strconv.FormatUint(gid, 10)+"/readindex", nil)
	if err != nil {
		return 0, readRPCErr(ctx, err)
	}
	idx, n := binary.Uvarint(data)
	if n <= 0 {
		return 0, fmt.Errorf("read index from %s: malformed answer", addr)
	}
	return idx, nil
}

// readRPCErr classifies a failed read RPC. A read changes nothing, so a
// connection that broke mid-call (the other node died or was cut off) is
// as safe to retry as one never made: it becomes errNoAnswer, which
// retryableRead accepts, where it used to surface as a 500.
func readRPCErr(ctx context.Context, err error) error {
	var re *transport.RemoteError
	if errors.As(err, &re) || errors.Is(err, transport.ErrUnreachable) || errors.Is(err, region.ErrTooLarge) || ctx.Err() != nil {
		return err
	}
	return fmt.Errorf("%w: %v", errNoAnswer, err)
}

// term asks member id, at addr, for its term in group gid.
func (c *rpcClient) term(ctx context.Context, addr string, gid uint64, id string) (uint64, error) {
	data, err := c.Call(ctx, http.MethodPost, addr, "/v1/groups/"+strconv.FormatUint(gid, 10)+"/term?id="+url.QueryEscape(id), nil)
	if err != nil {
		return 0, err
	}
	t, n := binary.Uvarint(data)
	if n <= 0 {
		return 0, fmt.Errorf("term from %s: bad answer", addr)
	}
	return t, nil
}

func (c *rpcClient) leave(ctx context.Context, addr string, gid uint64, id, reason string) error {
	_, err := c.Call(ctx, http.MethodPost, addr, "/v1/groups/"+strconv.FormatUint(gid, 10)+"/leave?id="+url.QueryEscape(id)+"&reason="+url.QueryEscape(reason), nil)
	return err
}

func (c *rpcClient) status(ctx context.Context, addr string) (NodeStatus, error) {
	var st NodeStatus
	data, err := c.Call(ctx, http.MethodGet, addr, "/v1/status", nil)
	if err != nil {
		return st, err
	}
	if err := json.Unmarshal(data, &st); err != nil {
		return st, fmt.Errorf("status from %s: %w", addr, err)
	}
	return st, nil
}
