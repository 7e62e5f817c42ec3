package transport

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/kvnode/kvnode/internal/chunked"
	"github.com/kvnode/kvnode/region"
)

// Node-to-node RPC is plain HTTP/1.1 over the internal port (connections
// the mux routes to RPCListener). HTTP gives connection pooling, deadlines
// and debuggability for free; the bodies are the callers' business.
//
// A request the receiver cannot serve carries its reason in the Kv-Error
// header, a code from the Codes both sides share, so the sender can tell
// "not the leader, retry" from "outcome unknown", and sentinel errors
// survive the hop (RemoteError).
const (
	// HeaderError names the sentinel of a refusal (a Codes entry).
	HeaderError = "Kv-Error"
	// HeaderTimeout carries the caller's remaining deadline in milliseconds.
	HeaderTimeout = "Kv-Timeout-Ms"
	// HeaderForward marks a write the receiver may hand on to its leader.
	HeaderForward = "Kv-Forward"

	// CodeOther is the code of a refusal that matches no sentinel.
	CodeOther = "error"

	// MaxTimeout bounds a handler whose caller sent no deadline, or a
	// longer one.
	MaxTimeout = 60 * time.Second
)

// Frame limits. Every message between members (a forwarded command, a read
// or query answer) is at most the frame limit. It follows the largest
// request body the REST API accepts (FrameLimit), so a body the API took is
// never too large to forward; and a message over the limit is refused with
// region.ErrTooLarge, never cut: a cut command used to reach Raft's log and
// stop every replica that applied it.
const (
	// DefaultFrameBytes is the frame limit of a store configured without one.
	DefaultFrameBytes = 64 << 20
	// FrameOverhead is what a command may need beyond the request body it
	// carries: keys from the URL (at most 96 KiB), names, lengths.
	FrameOverhead = 1 << 20
	// MaxBodyBytes is the largest request body a node can be configured to
	// carry. A command is held several times over while it is forwarded,
	// logged (bbolt refuses values near 2 GiB), replicated and applied.
	MaxBodyBytes = 1 << 30
)

// FrameLimit is the frame limit that carries request bodies of up to
// maxBody bytes.
func FrameLimit(maxBody int64) int64 { return maxBody + FrameOverhead }

// ReadFrame reads all of r, or refuses with region.ErrTooLarge once it is
// longer than limit: never a silently shortened message.
func ReadFrame(r io.Reader, limit int64, what string) ([]byte, error) {
	// Not io.ReadAll: its growth copies a large frame whole, in calls the
	// scheduler cannot preempt (package chunked).
	data, err := chunked.ReadAll(r, -1, limit)
	var tooLong *chunked.TooLongError
	switch {
	case errors.As(err, &tooLong):
		return nil, fmt.Errorf("%w: %s is larger than the internal frame limit of %d bytes (set by --max-body-size)", region.ErrTooLarge, what, limit)
	case err != nil:
		return nil, fmt.Errorf("read %s: %w", what, err)
	}
	return data, nil
}

// ErrHandshake marks a connection refused in the TLS handshake of the
// internal port's mutual TLS: the other side's certificate was not
// accepted here, ours was not accepted there, or it does not speak TLS.
// Nothing was sent.
var ErrHandshake = errors.New("TLS handshake")

// ErrUnreachable marks a failure to reach another node before anything was
// sent: the operation certainly did not happen there, so it is safe to retry.
var ErrUnreachable = errors.New("node unreachable")

// Code is one sentinel error that keeps its identity across an RPC.
type Code struct {
	Code string
	Err  error
}

// Codes are the sentinels both ends of an RPC agree on, in the order they
// are checked: an error is sent with the code of the first entry it wraps
// (errors.Is), and a code is read back as the first entry that has it. So
// an old code a newer sender no longer uses can stay, after the current
// one, for the members of an older version.
type Codes []Code

// Code is the code err travels with: its first sentinel's, else CodeOther.
func (cs Codes) Code(err error) string {
	for _, e := range cs {
		if errors.Is(err, e.Err) {
			return e.Code
		}
	}
	return CodeOther
}

// Decode is the error another node sent with code and message msg (in an
// answer that carries several, such as a batch's): a *RemoteError carrying
// the code's sentinel, or one without a sentinel for an unknown code.
func (cs Codes) Decode(code, addr, msg string) error {
	for _, e := range cs {
		if e.Code == code {
			return &RemoteError{sentinel: e.Err, addr: addr, msg: msg}
		}
	}
	return &RemoteError{sentinel: errUnknownCode, addr: addr, msg: msg}
}

// errUnknownCode is the sentinel of a refusal whose code this build does
// not know: it matches none of the region's.
var errUnknownCode = errors.New("refused with an unknown code")

// WriteError answers a refused RPC: 503, the code of err's sentinel in
// HeaderError, and err's text as the body.
func (cs Codes) WriteError(w http.ResponseWriter, err error) {
	code := cs.Code(err)
	w.Header().Set(HeaderError, code)
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.WriteHeader(http.StatusServiceUnavailable)
	_, _ = io.WriteString(w, err.Error())
}

// Refusal is the error for another node's non-200 answer with body msg: a
// *RemoteError carrying the sentinel its HeaderError code names, else the
// status and message.
func (cs Codes) Refusal(resp *http.Response, addr, path, msg string) error {
	code := resp.Header.Get(HeaderError)
	for _, e := range cs {
		if e.Code == code {
			return &RemoteError{sentinel: e.Err, addr: addr, msg: msg}
		}
	}
	return fmt.Errorf("rpc to %s %s: status %d: %s", addr, path, resp.StatusCode, msg)
}

// RemoteError is a refusal from another node: its message, matching the
// sentinel it was sent with.
type RemoteError struct {
	sentinel error
	addr     string
	msg      string
}

func (e *RemoteError) Error() string { return e.msg + " (from " + e.addr + ")" }
func (e *RemoteError) Unwrap() error { return e.sentinel }

// IsDialError reports whether err happened while connecting, before any of
// the request was written.
func IsDialError(err error) bool {
	var op *net.OpError
	return errors.As(err, &op) && op.Op == "dial"
}

// RequestContext bounds a handler by the caller's remaining deadline
// (HeaderTimeout), at most MaxTimeout.
func RequestContext(req *http.Request) (context.Context, context.CancelFunc) {
	timeout := MaxTimeout
	if ms, err := strconv.ParseInt(req.Header.Get(HeaderTimeout), 10, 64); err == nil && ms > 0 {
		timeout = min(time.Duration(ms)*time.Millisecond, MaxTimeout)
	}
	return context.WithTimeout(req.Context(), timeout)
}

// SetDeadline puts ctx's deadline, if any, on req as HeaderTimeout.
func SetDeadline(ctx context.Context, req *http.Request) {
	if dl, ok := ctx.Deadline(); ok {
		req.Header.Set(HeaderTimeout, strconv.FormatInt(max(time.Until(dl).Milliseconds(), 1), 10))
	}
}

// Client calls other nodes' RPC servers over their internal ports.
type Client struct {
	hc *http.Client
	// limit is the frame limit: the largest answer read (a longer one is
	// an error, never cut short).
	limit int64
	codes Codes
}

// NewClient is a client that dials with d, reads answers of up to limit
// bytes and decodes refusals with codes.
func NewClient(d *Dialer, limit int64, codes Codes) *Client {
	tr := &http.Transport{
		DialContext: func(ctx context.Context, _, addr string) (net.Conn, error) {
			return d.DialRPC(ctx, addr)
		},
		MaxIdleConns:        256,
		MaxIdleConnsPerHost: 128,
		IdleConnTimeout:     90 * time.Second,
		DisableCompression:  true,
	}
	return &Client{hc: &http.Client{Transport: tr}, limit: limit, codes: codes}
}

// Limit is the frame limit the client reads answers with.
func (c *Client) Limit() int64 { return c.limit }

// HTTP is the client's HTTP client, for calls that stream their answer.
func (c *Client) HTTP() *http.Client { return c.hc }

// Open performs one RPC whose answer is streamed (a listing's scan, a
// snapshot): a 200's response is returned for the caller to read and
// close; failures are as CallWith's.
func (c *Client) Open(ctx context.Context, addr, path string, body []byte) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, "http://"+addr+path, bytes.NewReader(body))
	if err != nil {
		return nil, fmt.Errorf("rpc POST %s: %w", path, err)
	}
	SetDeadline(ctx, req)
	resp, err := c.hc.Do(req)
	if err != nil {
		if IsDialError(err) {
			return nil, fmt.Errorf("rpc to %s: %w: %v", addr, ErrUnreachable, err)
		}
		return nil, fmt.Errorf("rpc to %s: %w", addr, err)
	}
	if resp.StatusCode == http.StatusOK {
		return resp, nil
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	if err != nil {
		return nil, fmt.Errorf("rpc to %s: read response: %w", addr, err)
	}
	return nil, c.codes.Refusal(resp, addr, path, string(data))
}

// Close drops the idle connections.
func (c *Client) Close() {
	c.hc.CloseIdleConnections()
}

// Call performs one RPC and returns the response body of a 200.
func (c *Client) Call(ctx context.Context, method, addr, path string, body []byte) ([]byte, error) {
	return c.CallWith(ctx, method, addr, path, body, nil)
}

// CallWith is Call with extra request headers. A failure to connect wraps
// ErrUnreachable; an answer over the frame limit is region.ErrTooLarge; a
// refusal is the Codes' decoding of it.
func (c *Client) CallWith(ctx context.Context, method, addr, path string, body []byte, hdr http.Header) ([]byte, error) {
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, "http://"+addr+path, rd)
	if err != nil {
		return nil, fmt.Errorf("rpc %s %s: %w", method, path, err)
	}
	for k, v := range hdr {
		req.Header[k] = v
	}
	SetDeadline(ctx, req)
	resp, err := c.hc.Do(req)
	if err != nil {
		if IsDialError(err) {
			return nil, fmt.Errorf("rpc to %s: %w: %v", addr, ErrUnreachable, err)
		}
		return nil, fmt.Errorf("rpc to %s: %w", addr, err)
	}
	defer resp.Body.Close()
	data, err := ReadFrame(resp.Body, c.limit, "the answer to "+path)
	if err != nil {
		return nil, fmt.Errorf("rpc to %s: %w", addr, err)
	}
	if resp.StatusCode == http.StatusOK {
		return data, nil
	}
	return nil, c.codes.Refusal(resp, addr, path, string(data))
}

// Quiet tracks when a server last received a request, so that a graceful
// stop can wait until its clients have gone quiet before it closes the
// connections they keep alive: a request sent on one just as the server
// closes it is cut, and the client cannot tell it was never read (for a
// write, an unknown outcome).
type Quiet struct{ last atomic.Int64 }

// Touch records a request now.
func (q *Quiet) Touch() { q.last.Store(time.Now().UnixNano()) }

// Wait returns once no request was recorded for d, or after at most max.
func (q *Quiet) Wait(d, max time.Duration) {
	deadline := time.Now().Add(max)
	for time.Since(time.Unix(0, q.last.Load())) < d && time.Now().Before(deadline) {
		time.Sleep(d / 10)
	}
}
