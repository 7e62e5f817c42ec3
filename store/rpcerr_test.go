package store

import (
	"errors"
	"net"
	"testing"
	"time"

	"github.com/kvnode/kvnode/region"
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
	c := newRPCClient(&dialer{net: &net.Dialer{Timeout: time.Second}}, DefaultFrameBytes)
	defer c.close()
	ctx := ctxT(t, 5*time.Second)

	_, err := c.readIndex(ctx, addr, 0)
	if !errors.Is(err, errNoAnswer) || !retryableRead(err) {
		t.Errorf("readIndex on a hang-up: %v; want errNoAnswer, retryable", err)
	}
	_, err = c.read(ctx, addr, 1, readReq{Op: readGet, Region: "r", Keys: []string{"k"}})
	if !errors.Is(err, errNoAnswer) || !retryableRead(err) {
		t.Errorf("read on a hang-up: %v; want errNoAnswer, retryable", err)
	}
	_, err = c.query(ctx, addr, 1, queryReq{Text: "SELECT * FROM /r"})
	if !errors.Is(err, errNoAnswer) || !retryableRead(err) {
		t.Errorf("query on a hang-up: %v; want errNoAnswer, retryable like a read", err)
	}
	_, err = c.apply(ctx, addr, 0, []byte("cmd"), false)
	if !errors.Is(err, region.ErrIndeterminate) || retryableWrite(err) {
		t.Errorf("apply on a hang-up: %v; want indeterminate, not retried", err)
	}
}
