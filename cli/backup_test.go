package cli_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kvnode/kvnode/backup/archive"
	"github.com/kvnode/kvnode/cli"
	"github.com/kvnode/kvnode/node"
)

// TestBackupCommand: with security on, kvnode backup needs CLUSTER:MANAGE
// (no credentials: 401, a reader: 403, and no file either way); with it,
// the file is a verified archive of the cluster and the summary says
// what it holds.
func TestBackupCommand(t *testing.T) {
	dir := t.TempDir()
	security := securityFile(t, dir)
	c := startCluster(t, 3, "http", func(_ string, cfg *node.Config) { cfg.SecurityFile = security })
	urls := "KVNODE_URL=" + strings.Join(c.urls, ",")
	admin := []string{urls, "KVNODE_USER=admin", "KVNODE_PASSWORD=admin-pw"}
	waitReady(t, admin)
	must(t, admin, "", "region", "create", "orders")
	must(t, admin, "", "region", "create", "events", "--type", "partition")
	for _, k := range []string{"1", "2", "3"} {
		must(t, admin, "", "put", "orders", k, `{"a":1}`)
		must(t, admin, "", "put", "events", k, `{"b":2}`)
	}
	out := filepath.Join(dir, "cluster.backup")

	r := kvnode(t, []string{urls}, "", "backup", "--out", out)
	if r.code != cli.ExitDenied || !strings.Contains(r.err, "401") {
		t.Errorf("backup without credentials: exit %d (%s), want %d and a 401", r.code, r.err, cli.ExitDenied)
	}
	r = kvnode(t, []string{urls, "KVNODE_USER=viewer", "KVNODE_PASSWORD=viewer-pw"}, "", "backup", "--out", out)
	if r.code != cli.ExitDenied || !strings.Contains(r.err, "403") || !strings.Contains(r.err, "CLUSTER:MANAGE") {
		t.Errorf("backup as a reader: exit %d (%s), want %d and a 403 naming CLUSTER:MANAGE", r.code, r.err, cli.ExitDenied)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 1 { // security.json, and nothing else
		t.Errorf("refused backups left files: %v", entries)
	}
	expect(t, kvnode(t, admin, "", "backup"), cli.ExitBadInput, "")

	r = kvnode(t, admin, "", "backup", "--out", out)
	if r.code != 0 {
		t.Fatalf("backup: exit %d, %s", r.code, r.err)
	}
	f, err := os.Open(out)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	m, sum, err := archive.Verify(f)
	if err != nil {
		t.Fatalf("the saved backup does not verify: %v", err)
	}
	for _, want := range []string{"saved " + out, "sha256 " + sum, "5 groups (4 partition groups), 2 regions, 6 entries"} {
		if !strings.Contains(r.out, want) {
			t.Errorf("backup's summary does not say %q:\n%s", want, r.out)
		}
	}
	if m.Entries() != 6 || len(m.Regions) != 2 {
		t.Errorf("manifest: %d entries, %d regions; want 6 and 2", m.Entries(), len(m.Regions))
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 2 {
		t.Errorf("backup left more than its file: %v", entries)
	}

	// -o json, into the same file (replaced).
	r = kvnode(t, admin, "", "backup", "--out", out, "-o", "json")
	var doc struct {
		File     string            `json:"file"`
		Bytes    int64             `json:"bytes"`
		SHA256   string            `json:"sha256"`
		Manifest *archive.Manifest `json:"manifest"`
	}
	if r.code != 0 || json.Unmarshal([]byte(r.out), &doc) != nil || doc.File != out || doc.Manifest == nil || doc.Manifest.Entries() != 6 {
		t.Fatalf("backup -o json: exit %d, %q (%s)", r.code, r.out, r.err)
	}
	if st, err := os.Stat(out); err != nil || st.Size() != doc.Bytes {
		t.Errorf("file of %v bytes (%v), the summary says %d", st, err, doc.Bytes)
	}
}
