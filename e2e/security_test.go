package e2e

import (
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/kvnode/kvnode/internal/waitfor"
)

// hashPassword is the bcrypt hash kvnode hash-password makes of pw.
func hashPassword(t *testing.T, bin, pw string) string {
	t.Helper()
	cmd := exec.Command(bin, "hash-password")
	cmd.Stdin = strings.NewReader(pw + "\n")
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("kvnode hash-password: %v", err)
	}
	h := strings.TrimSpace(string(out))
	if !strings.HasPrefix(h, "$2") {
		t.Fatalf("hash-password printed %q, want a bcrypt hash", h)
	}
	return h
}

// TestSecurityFileReloadOnSIGHUP: a real process started with a security
// file takes a changed file on SIGHUP, without a restart; a broken file
// on SIGHUP leaves the loaded one in force; a broken file at start is
// refused with a clear message; kvnode hash-password makes the hashes.
func TestSecurityFileReloadOnSIGHUP(t *testing.T) {
	bin := kvnodeBinary(t)
	hash := func(pw string) string { return hashPassword(t, bin, pw) }
	dir := t.TempDir()
	file := filepath.Join(dir, "security.json")
	write := func(body string) {
		if err := os.WriteFile(file, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	roles := `"roles":[{"name":"admin","permissions":["DATA:READ","DATA:WRITE","CLUSTER:READ","CLUSTER:MANAGE"]}]`
	write(`{"users":[{"name":"alice","password":"` + hash("alice-pw") + `","roles":["admin"]}],` + roles + `}`)

	pc := startCluster(t, clusterSpec{n: 1, regions: "orders:REPLICATE", extra: []string{"--security-file", file}})
	p := pc.procs[0]
	status := func(user, password string) int {
		req, _ := http.NewRequest("GET", p.httpURL+"/kv/v1/orders", nil)
		req.SetBasicAuth(user, password)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return 0
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	waitfor.Cond(t, 20*time.Second, "alice to read orders", func() bool { return status("alice", "alice-pw") == 200 })
	if got := status("bob", "bob-pw"); got != 401 {
		t.Fatalf("bob before the reload: %d, want 401", got)
	}

	// Add bob, then SIGHUP the process (by its PID).
	write(`{"users":[{"name":"alice","password":"` + hash("alice-pw") + `","roles":["admin"]},{"name":"bob","password":"` + hash("bob-pw") + `","roles":["admin"]}],` + roles + `}`)
	if err := p.cmd.Process.Signal(syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	waitfor.Cond(t, 10*time.Second, "bob to be let in after SIGHUP", func() bool { return status("bob", "bob-pw") == 200 })

	// A broken file on SIGHUP: the loaded one stays. The process says
	// when it has read and refused the file; only then is "bob still gets
	// in" a statement about the broken file (before, it proves nothing).
	write(`{"users":[`)
	if err := p.cmd.Process.Signal(syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	waitfor.Cond(t, 10*time.Second, "the process to log that it refused the broken file", func() bool {
		data, err := os.ReadFile(p.logPath)
		return err == nil && strings.Contains(string(data), "reloading the security file failed; the previous one stays in force")
	})
	if got := status("bob", "bob-pw"); got != 200 {
		t.Fatalf("after a broken file was signalled, bob gets %d, want 200 (the old file in force)", got)
	}
	if got := status("bob", "wrong"); got != 401 {
		t.Fatalf("a wrong password after the broken reload: %d, want 401", got)
	}

	// A broken file at start is refused with a clear message.
	out, err := exec.Command(bin, "--security-file", file, "--data-dir", filepath.Join(dir, "d2"),
		"--http-addr", "127.0.0.1:0", "--internal-addr", "127.0.0.1:0", "--gossip-addr", "127.0.0.1:0").CombinedOutput()
	if err == nil || !strings.Contains(string(out), "security file") {
		t.Fatalf("start with a broken security file: %v, output %s; want a refusal naming the security file", err, out)
	}
}
