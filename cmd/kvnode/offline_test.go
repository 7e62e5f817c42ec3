package main

import (
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kvnode/kvnode/cli"
	"github.com/kvnode/kvnode/internal/waitfor"
	"github.com/kvnode/kvnode/node"
	"github.com/kvnode/kvnode/node/nodetest"
	"github.com/kvnode/kvnode/store/datadir"
)

// TestRestoreAndRecoverCommands: restore verifies the whole archive
// before writing anything (every flipped byte is refused, by
// --verify-only too, and the data dir stays absent), refuses a non-empty
// data dir, and seeds an empty one; recover asks for --yes, then rewrites
// a stopped member's dir and says what it did.
func TestRestoreAndRecoverCommands(t *testing.T) {
	base := t.TempDir()
	ip := nodetest.New(t)
	ip.Tune = func(name string, cfg *node.Config) { cfg.DataDir = filepath.Join(base, name) }
	a := ip.Start("a", 1)
	ip.Leader()
	nodetest.MustCall(t, a, "POST", "/management/v1/regions", `{"name":"orders","type":"REPLICATE"}`, 201)
	nodetest.MustCall(t, a, "PUT", "/kv/v1/orders/1", `{"a":1}`, 200)
	nodetest.MustCall(t, a, "POST", "/management/v1/regions", `{"name":"events","type":"PARTITION"}`, 201)
	waitfor.Cond(t, 20*time.Second, "a partitioned write", func() bool {
		return nodetest.Call(t, a, "PUT", "/kv/v1/events/1", `{"e":1}`).Status == 200
	})
	resp, err := http.Get("http://" + a.HTTPAddr() + "/management/v1/backup")
	if err != nil {
		t.Fatal(err)
	}
	data, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("backup: %d %v", resp.StatusCode, err)
	}
	good := filepath.Join(base, "good.backup")
	if err := os.WriteFile(good, data, 0o600); err != nil {
		t.Fatal(err)
	}

	out, err := kvnode(t, "", nil, "restore", "--from", good, "--verify-only")
	if err != nil || !strings.Contains(out, "verified") || !strings.Contains(out, "2 entries") {
		t.Errorf("restore --verify-only of a good backup: %v\n%s", err, out)
	}
	bad := filepath.Join(base, "bad.backup")
	dir := filepath.Join(base, "restored")
	// Every byte of the archive, flipped in turn.
	for at := range data {
		flipped := append([]byte(nil), data...)
		flipped[at] ^= 0x10
		if err := os.WriteFile(bad, flipped, 0o600); err != nil {
			t.Fatal(err)
		}
		if _, err := kvnode(t, "", nil, "restore", "--from", bad, "--verify-only"); err == nil || cli.ExitCode(err) == 0 {
			t.Fatalf("verify of a backup with byte %d flipped succeeded", at)
		}
		_, err := kvnode(t, "", nil, "restore", "--from", bad, "--data-dir", dir, "--name", "r", "--internal-addr", "127.0.0.1:7070")
		if err == nil || !strings.Contains(err.Error(), "nothing written") || !strings.Contains(err.Error(), "damaged backup archive") {
			t.Fatalf("restore of a backup with byte %d flipped: %v", at, err)
		}
		if _, err := os.Stat(dir); !os.IsNotExist(err) {
			t.Fatalf("restore of a damaged backup created %s (%v)", dir, err)
		}
	}

	used := filepath.Join(base, "used")
	if err := os.MkdirAll(used, 0o750); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(used, "x"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := kvnode(t, "", nil, "restore", "--from", good, "--data-dir", used, "--name", "r", "--internal-addr", "127.0.0.1:7070"); err == nil || !strings.Contains(err.Error(), "not empty") {
		t.Errorf("restore into a non-empty dir: %v", err)
	}
	out, err = kvnode(t, "", nil, "restore", "--from", good, "--data-dir", dir, "--name", "r", "--internal-addr", "127.0.0.1:7070")
	if err != nil || !strings.Contains(out, "as member r") || !strings.Contains(out, "group 0: index") {
		t.Errorf("restore: %v\n%s", err, out)
	}
	if name, err := os.ReadFile(filepath.Join(dir, "node-name")); err != nil || string(name) != "r\n" {
		t.Errorf("restored node-name %q, %v", name, err)
	}
	if v, _, err := datadir.CheckFormat(dir); err != nil || v != datadir.Format {
		t.Errorf("restored data dir of format %d (%v), want %d", v, err, datadir.Format)
	}

	// recover: --yes first; then on the stopped member.
	if _, err := kvnode(t, "", nil, "recover", "--data-dir", filepath.Join(base, "a")); cli.ExitCode(err) != cli.ExitBadInput || !strings.Contains(err.Error(), "--yes") {
		t.Errorf("recover without --yes: %v", err)
	}
	ip.Stop("a", false)
	out, err = kvnode(t, "", nil, "recover", "--data-dir", filepath.Join(base, "a"), "--yes")
	if err != nil || !strings.Contains(out, "member a is now the only voter") || !strings.Contains(out, "group 4:") {
		t.Errorf("recover: %v\n%s", err, out)
	}
	a = ip.Start("a", 1)
	ip.Leader()
	if r := nodetest.MustCall(t, a, "GET", "/kv/v1/orders/1", "", 200); r.Body != `{"a":1}` {
		t.Errorf("after recover: orders/1 = %s", r.Body)
	}
	waitfor.Cond(t, 20*time.Second, "the partitioned entry after recover", func() bool {
		r := nodetest.Call(t, a, "GET", "/kv/v1/events/1", "")
		return r.Status == 200 && r.Body == `{"e":1}`
	})
}
