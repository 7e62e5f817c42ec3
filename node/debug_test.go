package node_test

import (
	"context"
	"io"
	"net/http"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kvnode/kvnode/node"
	"github.com/kvnode/kvnode/node/nodetest"
)

// TestPprofListener: --pprof-addr serves Go's profiles on its own
// listener, off the REST port, and only when asked for.
func TestPprofListener(t *testing.T) {
	start := func(t *testing.T, pprof string) *node.Node {
		cfg := node.Default()
		cfg.Name = "p"
		cfg.DataDir = filepath.Join(t.TempDir(), "data")
		cfg.HTTPAddr, cfg.InternalAddr, cfg.GossipAddr = "127.0.0.1:0", "127.0.0.1:0", "127.0.0.1:0"
		cfg.PprofAddr = pprof
		cfg.Logger = nodetest.Logger("p")
		nodetest.Fast(&cfg)
		n, err := node.Start(context.Background(), cfg)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = n.Close() })
		return n
	}
	get := func(url string) (int, string) {
		resp, err := http.Get(url)
		if err != nil {
			return 0, err.Error()
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}

	n := start(t, "127.0.0.1:0")
	if n.PprofAddr() == "" {
		t.Fatal("no debug listener with --pprof-addr set")
	}
	if code, body := get("http://" + n.PprofAddr() + "/debug/pprof/"); code != 200 || !strings.Contains(body, "goroutine") || !strings.Contains(body, "block") {
		t.Errorf("/debug/pprof/ = %d %.200s; want the profile index", code, body)
	}
	if code, body := get("http://" + n.PprofAddr() + "/debug/pprof/heap?debug=1"); code != 200 || !strings.Contains(body, "heap profile") {
		t.Errorf("heap profile = %d %.100s", code, body)
	}
	if code, _ := get("http://" + n.HTTPAddr() + "/debug/pprof/"); code == 200 {
		t.Error("the REST port serves /debug/pprof/; profiles belong on the debug listener only")
	}

	if off := start(t, ""); off.PprofAddr() != "" {
		t.Errorf("debug listener on %s without --pprof-addr", off.PprofAddr())
	}

	cfg := node.Default()
	cfg.Name, cfg.DataDir, cfg.PprofAddr = "x", "d", "localhost"
	if err := cfg.Validate(); err == nil || !strings.Contains(err.Error(), "--pprof-addr") {
		t.Errorf("Validate with --pprof-addr localhost = %v, want an error naming the flag", err)
	}
}
