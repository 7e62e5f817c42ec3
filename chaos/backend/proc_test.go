package backend

import (
	"context"
	"net/netip"
	"strings"
	"testing"
	"time"
)

// TestStartProcClusterReportsAnExit: a member that dies at start fails the
// start at once, with the end of its log, instead of a readiness timeout
// that says nothing.
func TestStartProcClusterReportsAnExit(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	start := time.Now()
	pc, err := StartProcCluster(ctx, ProcConfig{Binary: "/bin/false", Dir: t.TempDir(), FirstIP: netip.MustParseAddr("127.0.0.41")})
	if err == nil {
		_ = pc.Close()
		t.Fatal("a cluster of /bin/false started")
	}
	if !strings.Contains(err.Error(), "member n1 exited") || !strings.Contains(err.Error(), "exit status 1") {
		t.Errorf("error = %v, want n1's exit and its log", err)
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Errorf("took %v to notice", d)
	}
}
