package client_test

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/kvnode/kvnode/client"
)

// stub is a member that answers every request with answer, counting them.
type stub struct {
	srv   *httptest.Server
	calls atomic.Int32
}

func newStub(t *testing.T, answer func(w http.ResponseWriter, r *http.Request)) *stub {
	s := &stub{}
	s.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.calls.Add(1)
		answer(w, r)
	}))
	t.Cleanup(s.srv.Close)
	return s
}

// unavailable answers 503 as a member does, certifying that nothing was
// written when notApplied.
func unavailable(notApplied bool) func(http.ResponseWriter, *http.Request) {
	return func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Retry-After", "1")
		if notApplied {
			w.Header().Set("Kvnode-Outcome", "not-applied")
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusServiceUnavailable)
		_, _ = w.Write([]byte(`{"cause":"no leader for the group"}`))
	}
}

func stubClient(t *testing.T, endpoints ...string) *client.Client {
	c, err := client.New(client.Config{Endpoints: endpoints, DisableSingleHop: true, RetryFor: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// TestNoResendOfUnknownWrite: a put-if-absent, replace, compare-and-set or
// delete answered by a 503 that does not say nothing was written is sent
// once and fails with ErrOutcomeUnknown.
func TestNoResendOfUnknownWrite(t *testing.T) {
	ops := map[string]func(r *client.Region) error{
		"create": func(r *client.Region) error {
			_, err := r.Create(context.Background(), "k", map[string]int{"a": 1})
			return err
		},
		"replace": func(r *client.Region) error { return r.Replace(context.Background(), "k", map[string]int{"a": 1}) },
		"cas": func(r *client.Region) error {
			return r.CompareAndSet(context.Background(), "k", map[string]int{"a": 1}, map[string]int{"a": 2})
		},
		"delete": func(r *client.Region) error { return r.Delete(context.Background(), "k") },
	}
	for name, op := range ops {
		t.Run(name, func(t *testing.T) {
			a, b := newStub(t, unavailable(false)), newStub(t, unavailable(false))
			c := stubClient(t, a.srv.URL, b.srv.URL)
			err := op(c.Region("r"))
			if !errors.Is(err, client.ErrOutcomeUnknown) || !errors.Is(err, client.ErrUnavailable) {
				t.Fatalf("err = %v, want ErrOutcomeUnknown (and ErrUnavailable)", err)
			}
			if n := a.calls.Load() + b.calls.Load(); n != 1 {
				t.Fatalf("sent %d times, want once", n)
			}
		})
	}
}

// TestResendWhenNotApplied: the same writes answered 503 with
// Kvnode-Outcome: not-applied go again, to the next member, and succeed
// there.
func TestResendWhenNotApplied(t *testing.T) {
	a := newStub(t, unavailable(true))
	b := newStub(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Location", "http://x/kv/v1/r/k")
		w.WriteHeader(http.StatusCreated)
	})
	c := stubClient(t, a.srv.URL, b.srv.URL)
	for range 4 { // whichever member each call starts with
		if _, err := c.Region("r").Create(context.Background(), "k", map[string]int{"a": 1}); err != nil {
			t.Fatalf("Create = %v, want success on the second member", err)
		}
	}
	if a.calls.Load() == 0 || b.calls.Load() != 4 {
		t.Fatalf("calls: refusing member %d, serving member %d; want >0 and 4", a.calls.Load(), b.calls.Load())
	}
}

// TestIdempotentRetried: a put or read answered 503 (no certificate) goes
// again; with every member refusing it fails with ErrUnavailable once
// RetryFor has passed, never with ErrOutcomeUnknown.
func TestIdempotentRetried(t *testing.T) {
	a := newStub(t, unavailable(false))
	c := stubClient(t, a.srv.URL)
	start := time.Now()
	err := c.Region("r").Put(context.Background(), "k", map[string]int{"a": 1})
	if !errors.Is(err, client.ErrUnavailable) || errors.Is(err, client.ErrOutcomeUnknown) {
		t.Fatalf("Put = %v, want ErrUnavailable only", err)
	}
	if n := a.calls.Load(); n < 3 {
		t.Fatalf("sent %d times, want retries", n)
	}
	if d := time.Since(start); d > 3*time.Second {
		t.Fatalf("gave up after %v, RetryFor is 2 s", d)
	}
}

// TestRefusedConnectionMovesOn: a member that refuses connections is
// skipped (the write was never sent), and skipped for a while after.
func TestRefusedConnectionMovesOn(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	dead := "http://" + ln.Addr().String()
	ln.Close() // nothing listens there now
	ok := newStub(t, func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusCreated) })
	c := stubClient(t, dead, ok.srv.URL)
	for range 5 {
		if _, err := c.Region("r").Create(context.Background(), "k", map[string]int{"a": 1}); err != nil {
			t.Fatalf("Create = %v: a refused connection must move on to the next member", err)
		}
	}
	if ok.calls.Load() != 5 {
		t.Fatalf("the live member served %d of 5", ok.calls.Load())
	}
	// Every member refusing: ErrUnavailable.
	c2 := stubClient(t, dead)
	if _, err := c2.Region("r").Create(context.Background(), "k", map[string]int{"a": 1}); !errors.Is(err, client.ErrUnavailable) || errors.Is(err, client.ErrOutcomeUnknown) {
		t.Fatalf("Create with no member = %v, want ErrUnavailable", err)
	}
}

// TestBrokenAnswerIsUnknown: a write whose connection breaks after it was
// sent is not sent again: ErrOutcomeUnknown. A read is.
func TestBrokenAnswerIsUnknown(t *testing.T) {
	hijack := func(w http.ResponseWriter) {
		conn, _, err := http.NewResponseController(w).Hijack()
		if err == nil {
			conn.Close()
		}
	}
	a := newStub(t, func(w http.ResponseWriter, r *http.Request) { hijack(w) })
	b := newStub(t, func(w http.ResponseWriter, r *http.Request) { hijack(w) })
	c := stubClient(t, a.srv.URL, b.srv.URL)
	_, err := c.Region("r").Create(context.Background(), "k", map[string]int{"a": 1})
	if !errors.Is(err, client.ErrOutcomeUnknown) {
		t.Fatalf("Create with the connection cut = %v, want ErrOutcomeUnknown", err)
	}
	if n := a.calls.Load() + b.calls.Load(); n != 1 {
		t.Fatalf("sent %d times, want once", n)
	}
	_, err = c.Region("r").Get(context.Background(), "k")
	if errors.Is(err, client.ErrOutcomeUnknown) || err == nil {
		t.Fatalf("Get with every connection cut = %v, want a failure that is not ErrOutcomeUnknown", err)
	}
	if n := a.calls.Load() + b.calls.Load(); n < 3 {
		t.Fatalf("the read was sent %d times in all, want retries", n)
	}
}
