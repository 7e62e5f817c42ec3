package waitfor

import (
	"testing"
	"time"
)

const (
	firstPoll = 10 * time.Millisecond
	maxPoll   = 250 * time.Millisecond
)

// Cond polls cond until it holds, and fails t after timeout with
// "timed out after <timeout> waiting for <what>". Waits over a second are
// logged, so slow steps show in -v output.
func Cond(t testing.TB, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	start := time.Now()
	deadline := start.Add(timeout)
	poll := firstPoll
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s", timeout, what)
		}
		time.Sleep(poll)
		poll = min(poll*3/2, maxPoll)
	}
	if d := time.Since(start); d > time.Second {
		t.Logf("waited %v for %s", d.Round(time.Millisecond), what)
	}
}
