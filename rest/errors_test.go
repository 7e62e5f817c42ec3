package rest

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kvnode/kvnode/region"
	"github.com/kvnode/kvnode/rest/middleware"
	"github.com/kvnode/kvnode/rest/watch"
)

// fakeStore answers every read of entries (Get) with get; it is how tests
// make the store fail in ways a healthy in-memory store never does. Other
// methods are not implemented (the embedded nil interface panics).
type fakeStore struct {
	Store
	get func(ctx context.Context) ([]json.RawMessage, error)
}

func (f fakeStore) Get(ctx context.Context, _ region.Consistency, _ string, _ []string) ([]json.RawMessage, error) {
	return f.get(ctx)
}

func failingStore(err error) fakeStore {
	return fakeStore{get: func(context.Context) ([]json.RawMessage, error) { return nil, err }}
}

// TestErrorTable has one row per mapping of errors.go: the status, the
// {"cause"} body with the error's message, and Retry-After on 503 only.
func TestErrorTable(t *testing.T) {
	wrap := func(err error) error { return fmt.Errorf("read orders/k: %w", err) }
	for _, tc := range []struct {
		name   string
		err    error
		status int
	}{
		{"ErrInvalid", wrap(region.ErrInvalid), 400},
		{"ErrKeyAbsent", wrap(region.ErrKeyAbsent), 400},
		{"ErrRegionNotFound", wrap(region.ErrRegionNotFound), 404},
		{"ErrKeyNotFound", wrap(region.ErrKeyNotFound), 404},
		{"ErrKeyExists", wrap(region.ErrKeyExists), 409},
		{"ConflictError ErrKeyExists", wrap(&region.ConflictError{Err: region.ErrKeyExists, Key: "k"}), 409},
		{"ErrCASMismatch", wrap(region.ErrCASMismatch), 409},
		{"ErrRegionExists", wrap(region.ErrRegionExists), 409},
		{"ErrNotSupported", wrap(region.ErrNotSupported), 405},
		{"MaxBytesError", wrap(&http.MaxBytesError{Limit: 10}), 413},
		{"ErrTooLarge", wrap(region.ErrTooLarge), 413},
		{"unsupported media type", wrap(errUnsupportedMediaType), 415},
		{"unsupported content encoding", wrap(middleware.ErrUnsupportedEncoding), 415},
		{"ErrNoLeader", wrap(region.ErrNoLeader), 503},
		{"ErrTooManyWatchers", wrap(watch.ErrTooManyWatchers), 503},
		{"ErrNotLeader", wrap(region.ErrNotLeader), 503},
		{"ErrIndeterminate", wrap(region.ErrIndeterminate), 503},
		{"DeadlineExceeded", wrap(context.DeadlineExceeded), 503},
		{"anything else", wrap(errors.New("disk on fire")), 500},
		{"context canceled is not a 503", wrap(context.Canceled), 500},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := statusOf(tc.err); got != tc.status {
				t.Errorf("statusOf(%v) = %d, want %d", tc.err, got, tc.status)
			}
			ts := serveUnchecked(t, Config{}, failingStore(tc.err))
			r := ts.do(t, "GET", "/kv/v1/orders/k", "", "")
			retry := ""
			if tc.status == 503 {
				retry = "1"
			}
			expect{status: tc.status, cause: tc.err.Error(), header: map[string]string{"Retry-After": retry}}.check(t, ts, r)
			if !strings.Contains(r.body, `"cause":"read orders/k: `) {
				t.Errorf("body = %s, want the cause to be the whole chain of messages", r.body)
			}
		})
	}
}

// TestErrorCauseIsEscaped: a cause with quotes, backslashes and control
// characters is still one valid JSON string.
func TestErrorCauseIsEscaped(t *testing.T) {
	msg := "bad \"thing\" \\ <tag> & \n\t\x01 ü"
	ts := serve(t, Config{}, failingStore(errors.New(msg)), nil)
	r := ts.do(t, "GET", "/kv/v1/orders/k", "", "")
	var doc struct{ Cause string }
	if err := json.Unmarshal([]byte(r.body), &doc); err != nil || doc.Cause != msg {
		t.Fatalf("body = %s (%v), want cause %q", r.body, err, msg)
	}
}

// TestNoLeader: a store without a leader answers 503 with Retry-After and
// a JSON cause, for reads and writes.
func TestNoLeader(t *testing.T) {
	err := fmt.Errorf("group 0: %w", region.ErrNoLeader)
	ts := serve(t, Config{}, failingStore(err), nil)
	want := expect{status: 503, cause: "no leader", header: map[string]string{"Retry-After": "1"}}
	want.check(t, ts, ts.do(t, "GET", "/kv/v1/orders/k", "", ""))
	want.check(t, ts, ts.do(t, "GET", "/kv/v1/orders/k,j", "", ""))
}

// TestRequestDeadline: every request carries RequestTimeout as its
// deadline, and a store that runs into it answers 503, not a hang.
func TestRequestDeadline(t *testing.T) {
	const timeout = 50 * time.Millisecond
	left := make(chan time.Duration, 1)
	st := fakeStore{get: func(ctx context.Context) ([]json.RawMessage, error) {
		deadline, ok := ctx.Deadline()
		if !ok {
			return nil, errors.New("request context has no deadline")
		}
		left <- time.Until(deadline)
		<-ctx.Done()
		return nil, fmt.Errorf("waiting for the leader: %w", ctx.Err())
	}}
	ts := serve(t, Config{RequestTimeout: timeout}, st, nil)
	start := time.Now()
	r := ts.do(t, "GET", "/kv/v1/orders/k", "", "")
	expect{status: 503, cause: "deadline exceeded", header: map[string]string{"Retry-After": "1"}}.check(t, ts, r)
	if seen := <-left; seen <= 0 || seen > timeout {
		t.Errorf("time left before the deadline = %v, want in (0, %v]", seen, timeout)
	}
	if elapsed := time.Since(start); elapsed > 5*time.Second {
		t.Errorf("request took %v, want about %v", elapsed, timeout)
	}
}

// syncBuffer is a log destination tests can read while the server writes.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// TestPanicRecovered: a panicking handler answers 500 with a JSON cause and
// no stack; the stack goes to the log, and the server keeps serving.
func TestPanicRecovered(t *testing.T) {
	type opaque struct{ n int }
	for _, tc := range []struct {
		name  string
		value any
		cause string
	}{
		{"string", "boom", "internal error: handler panicked: boom"},
		{"error", fmt.Errorf("wrapped: %w", errors.New("bad state")), "internal error: handler panicked: wrapped: bad state"},
		{"other value", &opaque{n: 1}, "internal error: handler panicked"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var logs syncBuffer
			st := fakeStore{get: func(context.Context) ([]json.RawMessage, error) { panic(tc.value) }}
			ts := serve(t, Config{Logger: slog.New(slog.NewTextHandler(&logs, nil))}, st, nil)
			r := ts.do(t, "GET", "/kv/v1/orders/k", "", "")
			expect{status: 500, cause: tc.cause}.check(t, ts, r)
			var doc struct{ Cause string }
			_ = json.Unmarshal([]byte(r.body), &doc)
			if doc.Cause != tc.cause {
				t.Errorf("cause = %q, want %q", doc.Cause, tc.cause)
			}
			if strings.Contains(r.body, "goroutine") || strings.Contains(r.body, "0x") {
				t.Errorf("body = %s, want no stack or address", r.body)
			}
			if log := logs.String(); !strings.Contains(log, "handler panicked") || !strings.Contains(log, "goroutine") {
				t.Errorf("log = %q, want the panic and its stack", log)
			}
			expect{status: 200}.check(t, ts, ts.do(t, "GET", "/kv/v1/ping", "", ""))
		})
	}
}

// TestAccessLog: every request is logged at debug level with its status.
func TestAccessLog(t *testing.T) {
	var logs syncBuffer
	logger := slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	ts := serve(t, Config{Logger: logger}, newTestStore(t), nil)
	ts.do(t, "GET", "/kv/v1/ping", "", "")
	ts.do(t, "GET", "/kv/v1/nope/k", "", "")
	log := logs.String()
	for _, want := range []string{
		"level=DEBUG msg=request method=GET path=/kv/v1/ping status=200",
		"level=DEBUG msg=request method=GET path=/kv/v1/nope/k status=404",
	} {
		if !strings.Contains(log, want) {
			t.Errorf("log = %q, want a line containing %q", log, want)
		}
	}
}
