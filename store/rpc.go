package store

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/kvnode/kvnode/fsm"
	"github.com/kvnode/kvnode/region"
)

// Node-to-node RPC is plain HTTP/1.1 over the internal port (connections
// tagged kindRPC by the mux). HTTP gives connection pooling, deadlines and
// debuggability for free; bodies are the binary command and result codecs of
// package fsm, so forwarding adds no re-encoding.
//
//	POST /v1/groups/{gid}/apply      body: encoded fsm.Command → encoded fsm.Result
//	POST /v1/groups/{gid}/readindex  → uvarint read index (leader only)
//	POST /v1/groups/{gid}/leave?id=  → the leader removes server id from the group
//	GET  /v1/status                  → JSON nodeStatus
//
// A request the receiver cannot serve carries its reason in the Kv-Error
// header, so the sender can tell "not the leader, retry" from "outcome unknown".
const (
	hdrError   = "Kv-Error"
	hdrTimeout = "Kv-Timeout-Ms"

	errCodeNotLeader     = "not-leader"
	errCodeNoLeader      = "no-leader"
	errCodeIndeterminate = "indeterminate"
	errCodeOther         = "error"

	maxRPCBody    = 64 << 20
	maxRPCTimeout = 60 * time.Second
)

// rpcServer answers other nodes' RPCs.
type rpcServer struct {
	s   *Store
	srv *http.Server
}

func newRPCServer(s *Store) *rpcServer {
	mux := http.NewServeMux()
	r := &rpcServer{s: s}
	mux.HandleFunc("POST /v1/groups/{gid}/apply", r.apply)
	mux.HandleFunc("POST /v1/groups/{gid}/readindex", r.readIndex)
	mux.HandleFunc("POST /v1/groups/{gid}/leave", r.leave)
	mux.HandleFunc("GET /v1/status", r.status)
	r.srv = &http.Server{
		Handler:           mux,
		ReadHeaderTimeout: 10 * time.Second,
		IdleTimeout:       2 * time.Minute,
		ErrorLog:          slog.NewLogLogger(s.logger.Handler(), slog.LevelWarn),
	}
	return r
}

// requestContext bounds the handler by the caller's remaining deadline.
func requestContext(req *http.Request) (context.Context, context.CancelFunc) {
	timeout := maxRPCTimeout
	if ms, err := strconv.ParseInt(req.Header.Get(hdrTimeout), 10, 64); err == nil && ms > 0 {
		timeout = min(time.Duration(ms)*time.Millisecond, maxRPCTimeout)
	}
	return context.WithTimeout(req.Context(), timeout)
}

func (r *rpcServer) group(w http.ResponseWriter, req *http.Request) (*group, bool) {
	gid, err := strconv.ParseUint(req.PathValue("gid"), 10, 64)
	if err != nil {
		writeRPCError(w, fmt.Errorf("bad group id %q", req.PathValue("gid")))
		return nil, false
	}
	g := r.s.groupByID(gid)
	if g == nil {
		writeRPCError(w, fmt.Errorf("raft group %d is not hosted on %s", gid, r.s.name))
		return nil, false
	}
	return g, true
}

func (r *rpcServer) apply(w http.ResponseWriter, req *http.Request) {
	g, ok := r.group(w, req)
	if !ok {
		return
	}
	ctx, cancel := requestContext(req)
	defer cancel()
	data, err := io.ReadAll(io.LimitReader(req.Body, maxRPCBody))
	if err != nil {
		writeRPCError(w, fmt.Errorf("read command: %w", err))
		return
	}
	// Only the leader applies; never forward again (no forwarding loops):
	// the sender retries against the leader it learns about.
	if !g.isLeader() {
		writeRPCError(w, fmt.Errorf("%s is not the leader of group %d: %w", r.s.name, g.id, region.ErrNotLeader))
		return
	}
	res, err := r.s.applyLocal(ctx, g, data)
	if err != nil {
		writeRPCError(w, err)
		return
	}
	w.Header().Set("Content-Type", "application/octet-stream")
	_, _ = w.Write(fsm.EncodeResult(nil, res))
}

func (r *rpcServer) readIndex(w http.ResponseWriter, req *http.Request) {
	g, ok := r.group(w, req)
	if !ok {
		return
	}
	ctx, cancel := requestContext(req)
	defer cancel()
	if !g.isLeader() {
		writeRPCError(w, fmt.Errorf("%s is not the leader of group %d: %w", r.s.name, g.id, region.ErrNotLeader))
		return
	}
	idx, err := g.reads.readIndex(ctx)
	if err != nil {
		writeRPCError(w, err)
		return
	}
	_, _ = w.Write(binary.AppendUvarint(nil, idx))
}

func (r *rpcServer) leave(w http.ResponseWriter, req *http.Request) {
	g, ok := r.group(w, req)
	if !ok {
		return
	}
	ctx, cancel := requestContext(req)
	defer cancel()
	if err := r.s.removeServer(ctx, g, req.URL.Query().Get("id"), "left gracefully"); err != nil {
		writeRPCError(w, err)
		return
	}
	w.WriteHeader(http.StatusOK)
}

func (r *rpcServer) status(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(r.s.Status())
}

func writeRPCError(w http.ResponseWriter, err error) {
	code := errCodeOther
	switch {
	case errors.Is(err, region.ErrNotLeader):
		code = errCodeNotLeader
	case errors.Is(err, region.ErrNoLeader):
		code = errCodeNoLeader
	case errors.Is(err, region.ErrIndeterminate):
		code = errCodeIndeterminate
	}
	w.Header().Set(hdrError, code)
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.WriteHeader(http.StatusServiceUnavailable)
	_, _ = io.WriteString(w, err.Error())
}

// rpcClient calls other nodes' RPC servers.
type rpcClient struct {
	hc *http.Client
}

func newRPCClient(dialer *net.Dialer) *rpcClient {
	tr := &http.Transport{
		DialContext: func(ctx context.Context, _, addr string) (net.Conn, error) {
			return dialMux(ctx, dialer, addr, kindRPC, 0)
		},
		MaxIdleConns:        256,
		MaxIdleConnsPerHost: 128,
		IdleConnTimeout:     90 * time.Second,
		DisableCompression:  true,
	}
	return &rpcClient{hc: &http.Client{Transport: tr}}
}

func (c *rpcClient) close() {
	c.hc.CloseIdleConnections()
}

// call performs one RPC and returns the response body of a 200.
func (c *rpcClient) call(ctx context.Context, method, addr, path string, body []byte) ([]byte, error) {
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, "http://"+addr+path, rd)
	if err != nil {
		return nil, fmt.Errorf("rpc %s %s: %w", method, path, err)
	}
	if dl, ok := ctx.Deadline(); ok {
		req.Header.Set(hdrTimeout, strconv.FormatInt(max(time.Until(dl).Milliseconds(), 1), 10))
	}
	resp, err := c.hc.Do(req)
	if err != nil {
		if isDialError(err) {
			return nil, fmt.Errorf("rpc to %s: %w: %v", addr, errUnreachable, err)
		}
		return nil, fmt.Errorf("rpc to %s: %w", addr, err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, maxRPCBody))
	if err != nil {
		return nil, fmt.Errorf("rpc to %s: read response: %w", addr, err)
	}
	if resp.StatusCode == http.StatusOK {
		return data, nil
	}
	msg := string(data)
	switch resp.Header.Get(hdrError) {
	case errCodeNotLeader:
		return nil, fmt.Errorf("%w (from %s: %s)", region.ErrNotLeader, addr, msg)
	case errCodeNoLeader:
		return nil, fmt.Errorf("%w (from %s: %s)", region.ErrNoLeader, addr, msg)
	case errCodeIndeterminate:
		return nil, fmt.Errorf("%w (from %s: %s)", region.ErrIndeterminate, addr, msg)
	}
	return nil, fmt.Errorf("rpc to %s %s: status %d: %s", addr, path, resp.StatusCode, msg)
}

// isDialError reports whether err happened while connecting, before any of
// the request was written.
func isDialError(err error) bool {
	var op *net.OpError
	return errors.As(err, &op) && op.Op == "dial"
}

func (c *rpcClient) apply(ctx context.Context, addr string, gid uint64, cmd []byte) (*fsm.Result, error) {
	data, err := c.call(ctx, http.MethodPost, addr, "/v1/groups/"+strconv.FormatUint(gid, 10)+"/apply", cmd)
	if err != nil {
		// A request that reached the leader but got no answer may have been
		// applied: only dial failures and explicit refusals are retry-safe.
		if !retryableWrite(err) && !errors.Is(err, region.ErrIndeterminate) {
			return nil, fmt.Errorf("%w: forwarding to the leader at %s failed: %v", region.ErrIndeterminate, addr, err)
		}
		return nil, err
	}
	res, err := fsm.DecodeResult(data)
	if err != nil {
		return nil, fmt.Errorf("decode result from %s: %w", addr, err)
	}
	return res, nil
}

func (c *rpcClient) readIndex(ctx context.Context, addr string, gid uint64) (uint64, error) {
	data, err := c.call(ctx, http.MethodPost, addr, "/v1/groups/"+strconv.FormatUint(gid, 10)+"/readindex", nil)
	if err != nil {
		return 0, err
	}
	idx, n := binary.Uvarint(data)
	if n <= 0 {
		return 0, fmt.Errorf("read index from %s: malformed answer", addr)
	}
	return idx, nil
}

func (c *rpcClient) leave(ctx context.Context, addr string, gid uint64, id string) error {
	_, err := c.call(ctx, http.MethodPost, addr, "/v1/groups/"+strconv.FormatUint(gid, 10)+"/leave?id="+url.QueryEscape(id), nil)
	return err
}

func (c *rpcClient) status(ctx context.Context, addr string) (NodeStatus, error) {
	var st NodeStatus
	data, err := c.call(ctx, http.MethodGet, addr, "/v1/status", nil)
	if err != nil {
		return st, err
	}
	if err := json.Unmarshal(data, &st); err != nil {
		return st, fmt.Errorf("status from %s: %w", addr, err)
	}
	return st, nil
}
