// Package etcdtest starts etcd 3.6 for the tests of this module: the
// binary of ../cmd/etcd (the one bench/compare.sh measures), as a process
// on 127.0.0.1 that the test stops.
package etcdtest

import (
	"context"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"
)

// BinaryEnv names an etcd binary already built (make test-etcd36 builds
// it once); without it Binary builds one.
const BinaryEnv = "KVNODE_ETCD36"

// startWait bounds the wait for a started member to report healthy.
const startWait = 30 * time.Second

// Binary is the etcd binary to run: $KVNODE_ETCD36, or ../cmd/etcd built
// into the test's temporary directory (from Go's build cache after the
// first time).
func Binary(t testing.TB) string {
	t.Helper()
	if bin := os.Getenv(BinaryEnv); bin != "" {
		return bin
	}
	_, here, _, _ := runtime.Caller(0)
	bin := filepath.Join(t.TempDir(), "etcd")
	cmd := exec.Command("go", "build", "-o", bin, "./cmd/etcd")
	cmd.Dir = filepath.Join(filepath.Dir(here), "..")
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("build etcd: %v\n%s", err, out)
	}
	return bin
}

// Start runs a one-member etcd cluster on free ports of 127.0.0.1 with
// its data in a temporary directory, waits until it is healthy, and
// returns its client URL; the test's cleanup stops it.
func Start(t testing.TB, bin string) string {
	t.Helper()
	client, peer := freePort(t), freePort(t)
	cu, pu := "http://"+client, "http://"+peer
	dir := t.TempDir()
	logf, err := os.Create(filepath.Join(dir, "etcd.log"))
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "--name", "m1", "--data-dir", filepath.Join(dir, "data"),
		"--listen-client-urls", cu, "--advertise-client-urls", cu,
		"--listen-peer-urls", pu, "--initial-advertise-peer-urls", pu, "--initial-cluster", "m1="+pu,
		"--log-level", "warn")
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		t.Fatalf("start etcd: %v", err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(10 * time.Second):
			_ = cmd.Process.Kill()
			<-exited
		}
		_ = logf.Close()
	})
	ctx, cancel := context.WithTimeout(context.Background(), startWait)
	defer cancel()
	for {
		if healthy(ctx, cu) {
			return cu
		}
		select {
		case err := <-exited:
			log, _ := os.ReadFile(logf.Name())
			t.Fatalf("etcd exited: %v\n%s", err, log)
		case <-ctx.Done():
			log, _ := os.ReadFile(logf.Name())
			t.Fatalf("etcd not healthy after %v\n%s", startWait, log)
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// healthy says whether the member at url answers /health with
// {"health":"true"}.
func healthy(ctx context.Context, url string) bool {
	req, err := http.NewRequestWithContext(ctx, "GET", url+"/health", nil)
	if err != nil {
		return false
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return false
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 4096))
	return err == nil && resp.StatusCode == 200 && strings.Contains(string(body), `"health":"true"`)
}

// freePort is an address of 127.0.0.1 with a port no one listened on a
// moment ago.
func freePort(t testing.TB) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}
