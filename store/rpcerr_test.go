package store

import (
	"errors"
	"fmt"
	"net"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/kvnode/kvnode/region"
	"github.com/kvnode/kvnode/store/transport"
)

// hangUp is a node that accepts a call and drops the connection before
// answering, as one does when it dies mid-call.
func hangUp(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			buf := make([]byte, 512)
			_, _ = c.Read(buf)
			c.Close()
		}
	}()
	return ln.Addr().String()
}

// TestBrokenReadRPCIsRetried: a read-index, read or query call whose
// connection breaks is retried elsewhere (it used to reach clients as a
// 500), while a forwarded write that breaks stays indeterminate.
func TestBrokenReadRPCIsRetried(t *testing.T) {
	addr := hangUp(t)
	c := newRPCClient(&transport.Dialer{Net: &net.Dialer{Timeout: time.Second}}, transport.DefaultFrameBytes)
	defer c.Close()
	ctx := ctxT(t, 5*time.Second)

	_, err := c.readIndex(ctx, addr, 0)
	if !errors.Is(err, errNoAnswer) || !retryableRead(err) {
		t.Errorf("readIndex on a hang-up: %v; want errNoAnswer, retryable", err)
	}
	// The group RPCs of reads and queries (packages regions and query
	// send them through Router.Call).
	rt := &Router{client: c}
	_, err = rt.Call(ctx, addr, 1, "read", []byte(`{"op":"get","region":"r","keys":["k"]}`))
	if !errors.Is(err, errNoAnswer) || !retryableRead(err) {
		t.Errorf("read on a hang-up: %v; want errNoAnswer, retryable", err)
	}
	_, err = rt.Call(ctx, addr, 1, "query", []byte(`{"text":"SELECT * FROM /r"}`))
	if !errors.Is(err, errNoAnswer) || !retryableRead(err) {
		t.Errorf("query on a hang-up: %v; want errNoAnswer, retryable like a read", err)
	}
	_, err = c.apply(ctx, addr, 0, []byte("cmd"), false)
	if !errors.Is(err, region.ErrIndeterminate) || retryableWrite(err) {
		t.Errorf("apply on a hang-up: %v; want indeterminate, not retried", err)
	}
}

// TestLaggingReplicaSaysSo: a replica behind its leader refuses a read in
// its own words, locally and through another member, never as "not the
// leader" (which it used to say, wrapping errNotHosted), and the refusal
// is one a read retries on another replica. Between members it keeps the
// not-hosted code that members of earlier versions know.
func TestLaggingReplicaSaysSo(t *testing.T) {
	local := fmt.Errorf("linearizable read: group 2: applied 5, read index 7: %w", errLagging)
	if !retryableRead(local) {
		t.Errorf("%v: not retryable; a read must go to another replica", local)
	}
	if errors.Is(local, region.ErrNotLeader) || strings.Contains(local.Error(), region.ErrNotLeader.Error()) {
		t.Errorf("%v: a lagging replica is not a leadership error", local)
	}

	rec := httptest.NewRecorder()
	rpcCodes.WriteError(rec, local)
	if code := rec.Header().Get(transport.HeaderError); code != "not-hosted" {
		t.Errorf("lagging travels with code %q, want not-hosted", code)
	}
	remote := rpcCodes.Refusal(rec.Result(), "10.0.0.2:7070", "/v1/groups/2/read", rec.Body.String())
	if !retryableRead(remote) || !errors.Is(remote, errNotHosted) {
		t.Errorf("%v: through another member, want errNotHosted, retryable", remote)
	}
	if msg := remote.Error(); !strings.Contains(msg, "behind its group's leader") || strings.Contains(msg, region.ErrNotLeader.Error()) {
		t.Errorf("through another member the refusal reads %q; want the lagging text, not %q", msg, region.ErrNotLeader)
	}
}
