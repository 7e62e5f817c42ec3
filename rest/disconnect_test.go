package rest

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// TestClientDisconnect: a client that goes away while its request waits on
// the store is no server error: nothing is logged above debug level, the
// debug line says the client disconnected, and the status recorded is 499
// with no body (the client is gone). A context.Canceled with the client
// still connected stays a 500 (TestErrorTable).
func TestClientDisconnect(t *testing.T) {
	var logs syncBuffer
	logger := slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	started := make(chan struct{})
	st := fakeStore{get: func(ctx context.Context) ([]json.RawMessage, error) {
		close(started)
		<-ctx.Done()
		return nil, fmt.Errorf("read orders/k: waiting for the leader: %w", ctx.Err())
	}}
	h := validated(t, New(Config{Logger: logger}, st, nil, nil).Handler())

	ctx, disconnect := context.WithCancel(context.Background())
	req := httptest.NewRequest("GET", "/kv/v1/orders/k", nil).WithContext(ctx)
	rec := httptest.NewRecorder()
	served := make(chan struct{})
	go func() {
		defer close(served)
		h.ServeHTTP(rec, req)
	}()
	select {
	case <-started:
	case <-time.After(10 * time.Second):
		t.Fatal("the request did not reach the store")
	}
	disconnect() // what net/http does when the client's connection closes
	select {
	case <-served:
	case <-time.After(10 * time.Second):
		t.Fatal("the request was not answered after the client went away")
	}

	if rec.Code != statusClientClosedRequest || rec.Body.Len() != 0 {
		t.Errorf("answer = %d %q, want %d and no body", rec.Code, rec.Body.String(), statusClientClosedRequest)
	}
	log := logs.String()
	for _, line := range strings.Split(strings.TrimSpace(log), "\n") {
		if !strings.HasPrefix(line, "time=") || !strings.Contains(line, "level=DEBUG") {
			t.Errorf("logged above debug level: %s", line)
		}
	}
	if !strings.Contains(log, `msg="client disconnected before the answer" method=GET path=/kv/v1/orders/k`) {
		t.Errorf("log = %q, want a debug line saying the client disconnected", log)
	}
	if !strings.Contains(log, "msg=request method=GET path=/kv/v1/orders/k status=499") {
		t.Errorf("log = %q, want the access log to record status 499", log)
	}
	if strings.Contains(log, "status=500") {
		t.Errorf("log = %q, want no 500", log)
	}
}

// TestCanceledWithClientPresent: a context.Canceled that is not the
// client's leaving (the client's request context is live) is a server
// error, logged and answered as a 500.
func TestCanceledWithClientPresent(t *testing.T) {
	var logs syncBuffer
	logger := slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	h := validated(t, New(Config{Logger: logger}, failingStore(fmt.Errorf("read orders/k: %w", context.Canceled)), nil, nil).Handler())
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest("GET", "/kv/v1/orders/k", nil))
	if rec.Code != http.StatusInternalServerError {
		t.Errorf("status = %d, want 500", rec.Code)
	}
	if log := logs.String(); !strings.Contains(log, "level=WARN msg=\"request failed\"") {
		t.Errorf("log = %q, want the failure logged as a warning", log)
	}
}
