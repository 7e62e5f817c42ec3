package client_test

import (
	"context"
	"errors"
	"net"
	"net/http"
	"testing"
	"time"

	"github.com/kvnode/kvnode/client"
)

// TestAtMostOnce: a put answered 503 without the certificate goes again,
// unless AtMostOnce: then it is sent once and its outcome is unknown. A
// 503 that certifies nothing was written goes again either way.
func TestAtMostOnce(t *testing.T) {
	a := newStub(t, unavailable(false))
	c := stubClient(t, a.srv.URL)
	r := c.Region("r")
	v := map[string]int{"v": 1}
	if err := r.Put(context.Background(), "k", v, client.AtMostOnce()); !errors.Is(err, client.ErrOutcomeUnknown) || a.calls.Load() != 1 {
		t.Fatalf("Put AtMostOnce after a 503 = %v, sent %d times; want ErrOutcomeUnknown after one", err, a.calls.Load())
	}
	err := r.PutAll(context.Background(), []client.Entry{{Key: "a", Value: v}, {Key: "b", Value: v}}, client.AtMostOnce())
	if !errors.Is(err, client.ErrOutcomeUnknown) || a.calls.Load() != 2 {
		t.Fatalf("PutAll AtMostOnce after a 503 = %v, sent %d times in all; want ErrOutcomeUnknown after one more", err, a.calls.Load())
	}
	for name, op := range map[string]func() error{
		"replace-all": func() error {
			return r.ReplaceAll(context.Background(), []client.Entry{{Key: "a", Value: v}, {Key: "b", Value: v}})
		},
		"cas-all": func() error {
			return r.CompareAndSetAll(context.Background(), []client.Swap{{Key: "a", Old: v, New: v}, {Key: "b", Old: v, New: v}})
		},
	} {
		a.calls.Store(0)
		if err := op(); !errors.Is(err, client.ErrOutcomeUnknown) || a.calls.Load() != 1 {
			t.Fatalf("%s after a 503 = %v, sent %d times; want ErrOutcomeUnknown after one", name, err, a.calls.Load())
		}
	}

	certified := newStub(t, unavailable(true))
	c = stubClient(t, certified.srv.URL)
	err = c.Region("r").Put(context.Background(), "k", v, client.AtMostOnce())
	if !errors.Is(err, client.ErrUnavailable) || errors.Is(err, client.ErrOutcomeUnknown) || certified.calls.Load() < 2 {
		t.Fatalf("Put AtMostOnce after certified 503s = %v, sent %d times; want ErrUnavailable, not unknown, after several", err, certified.calls.Load())
	}
}

// TestWriteUnknownWhenContextEnds: a write sent and not answered before
// its context ended has an unknown outcome; the context's end does not
// make it a plain failure. A read fails with the context's error.
func TestWriteUnknownWhenContextEnds(t *testing.T) {
	slow := newStub(t, func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
		case <-time.After(2 * time.Second):
		}
	})
	c := stubClient(t, slow.srv.URL)
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	if _, err := c.Region("r").Create(ctx, "k", map[string]int{"v": 1}); !errors.Is(err, client.ErrOutcomeUnknown) {
		t.Fatalf("Create unanswered until its context ended = %v, want ErrOutcomeUnknown", err)
	}
	ctx, cancel = context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	if _, err := c.Region("r").Get(ctx, "k"); errors.Is(err, client.ErrOutcomeUnknown) || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Get unanswered = %v, want the context's deadline", err)
	}
}

// TestOwnTransportRefused: with a Config.Transport of the program's own,
// a refused connection is still known to have sent nothing: a
// put-if-absent moves on to the next member instead of failing with an
// unknown outcome.
func TestOwnTransportRefused(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	dead := "http://" + ln.Addr().String()
	ln.Close()
	ok := newStub(t, func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusCreated) })
	c, err := client.New(client.Config{Endpoints: []string{dead, ok.srv.URL}, DisableSingleHop: true, Transport: &http.Transport{}})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	for range 3 {
		if _, err := c.Region("r").Create(context.Background(), "k", map[string]int{"v": 1}); err != nil {
			t.Fatalf("Create = %v: a refused connection must move on to the next member", err)
		}
	}
}
