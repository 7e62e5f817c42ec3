package store

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/kvnode/kvnode/region"
)

// TestWaitLeaderClosed: WaitLeader on a closed store, or on one closed
// while it waits, answers at once that the node is shutting down (it used
// to dereference the nil control group after Close, and to wait for the
// whole ctx when Close came during the wait).
func TestWaitLeaderClosed(t *testing.T) {
	tc := newTestCluster(t, 2) // two expected, one started: never a leader
	n := tc.start("solo")

	waited := make(chan error, 1)
	go func() { waited <- n.WaitLeader(context.Background()) }()
	if err := n.Close(); err != nil {
		t.Fatalf("close: %v", err)
	}
	select {
	case err := <-waited:
		if !errors.Is(err, region.ErrNoLeader) || !strings.Contains(err.Error(), "shutting down") {
			t.Fatalf("WaitLeader during Close = %v, want ErrNoLeader saying the node is shutting down", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("WaitLeader still waits 10 s after Close")
	}

	err := n.WaitLeader(ctxT(t, 10*time.Second))
	if !errors.Is(err, region.ErrNoLeader) || !strings.Contains(err.Error(), "shutting down") {
		t.Fatalf("WaitLeader after Close = %v, want ErrNoLeader saying the node is shutting down", err)
	}
}
