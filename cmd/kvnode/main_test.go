package main

import (
	"context"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kvnode/kvnode/internal/waitfor"
	"github.com/kvnode/kvnode/node/nodetest"
)

// TestRunServesUntilCancelled runs the real entry point with flags and env
// and cancels it as SIGTERM would.
func TestRunServesUntilCancelled(t *testing.T) {
	dir := t.TempDir()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	httpAddr := nodetest.FreeAddr(t)
	go func() {
		done <- runWithOutput(ctx, []string{
			"--name", "solo", "--http-addr", httpAddr, "--internal-addr", "127.0.0.1:0",
			"--regions", "orders:REPLICATE",
		}, []string{
			"KVNODE_DATA_DIR=" + dir, "KVNODE_GOSSIP_ADDR=127.0.0.1:0", "KVNODE_LOG_LEVEL=warn",
		}, io.Discard)
	}()
	url := "http://" + httpAddr
	waitfor.Cond(t, 15*time.Second, "the region from --regions to exist", func() bool {
		resp, err := http.Get(url + "/kv/v1/orders")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == 200
	})
	req, _ := http.NewRequest("PUT", url+"/kv/v1/orders/1", strings.NewReader(`{"a":1}`))
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("PUT: %v %v", resp, err)
	}
	resp.Body.Close()
	if _, err := os.Stat(filepath.Join(dir, "raft", "g0", "raft.db")); err != nil {
		t.Fatalf("KVNODE_DATA_DIR not used: %v", err)
	}
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("run returned %v after cancel, want nil", err)
		}
	case <-time.After(20 * time.Second):
		t.Fatalf("run did not return within 20s of cancel")
	}
}

func TestRunRejectsBadConfig(t *testing.T) {
	err := runWithOutput(context.Background(), []string{"--bootstrap-expect", "0"}, nil, io.Discard)
	if err == nil || !strings.Contains(err.Error(), "bootstrap-expect") {
		t.Fatalf("run with a bad flag = %v, want an error naming it", err)
	}
}
