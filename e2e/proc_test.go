package e2e

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/kvnode/kvnode/client"
	"github.com/kvnode/kvnode/internal/ports"
	"github.com/kvnode/kvnode/internal/waitfor"
)

// buildOnce builds the kvnode binary once per test binary.
var buildOnce struct {
	sync.Once
	path string
	err  error
}

// kvnodeBinary builds ./cmd/kvnode into a temp dir (CGO off, as the
// container image is built) and returns its path.
func kvnodeBinary(t *testing.T) string {
	t.Helper()
	buildOnce.Do(func() {
		dir, err := os.MkdirTemp("", "kvnode-e2e-bin-")
		if err != nil {
			buildOnce.err = err
			return
		}
		buildOnce.path = filepath.Join(dir, "kvnode")
		cmd := exec.Command("go", "build", "-o", buildOnce.path, "../cmd/kvnode")
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
		out, err := cmd.CombinedOutput()
		if err != nil {
			buildOnce.err = fmt.Errorf("go build: %v\n%s", err, out)
		}
	})
	if buildOnce.err != nil {
		t.Fatalf("build kvnode: %v", buildOnce.err)
	}
	return buildOnce.path
}

// freePorts are the members' ports. A killed member restarts on its
// ports, so they come from below the ephemeral range, where no outgoing
// connection can take one meanwhile (package ports); another process could
// still, and the test then fails loudly at startup.
func freePorts(t *testing.T, n int) []int {
	t.Helper()
	ps, err := ports.Stable(n)
	if err != nil {
		t.Fatalf("ports: %v", err)
	}
	return ps
}

// proc is one kvnode process.
type proc struct {
	name    string
	args    []string
	dataDir string
	logPath string
	httpURL string
	cmd     *exec.Cmd
	exited  chan error

	tls    *tls.Config // for client(), when the process serves https
	clOnce sync.Once
	cl     *client.Client
}

// client is a client of p alone that sends each request once, to p, as
// it is (no single hop, no retry): what a test asserts is p's answer.
func (p *proc) client() *client.Client {
	p.clOnce.Do(func() {
		var err error
		p.cl, err = client.New(client.Config{Endpoints: []string{p.httpURL}, TLS: p.tls, DisableSingleHop: true, RetryFor: time.Nanosecond})
		if err != nil {
			panic(err) // a URL of the test's own making
		}
	})
	return p.cl
}

// ctx is a context for one call of a test.
func ctx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// clusterSpec describes a loopback cluster of n processes.
type clusterSpec struct {
	n       int
	regions string
	extra   []string
}

type procCluster struct {
	t     *testing.T
	bin   string
	procs []*proc
}

func startCluster(t *testing.T, spec clusterSpec) *procCluster {
	t.Helper()
	bin := kvnodeBinary(t)
	ports := freePorts(t, 3*spec.n)
	base := t.TempDir()
	var joins []string
	for i := 0; i < spec.n; i++ {
		joins = append(joins, fmt.Sprintf("127.0.0.1:%d", ports[3*i+2]))
	}
	pc := &procCluster{t: t, bin: bin}
	for i := 0; i < spec.n; i++ {
		name := fmt.Sprintf("node%d", i)
		p := &proc{
			name:    name,
			dataDir: filepath.Join(base, name),
			logPath: filepath.Join(base, name+".log"),
			httpURL: fmt.Sprintf("http://127.0.0.1:%d", ports[3*i]),
		}
		p.args = []string{
			"--name", name,
			"--data-dir", p.dataDir,
			"--http-addr", fmt.Sprintf("127.0.0.1:%d", ports[3*i]),
			"--internal-addr", fmt.Sprintf("127.0.0.1:%d", ports[3*i+1]),
			"--gossip-addr", fmt.Sprintf("127.0.0.1:%d", ports[3*i+2]),
			"--join", strings.Join(joins, ","), // includes the node itself, as in a StatefulSet
			"--bootstrap-expect", fmt.Sprint(spec.n),
			"--log-level", "debug",
		}
		if spec.regions != "" {
			p.args = append(p.args, "--regions", spec.regions)
		}
		p.args = append(p.args, spec.extra...)
		pc.procs = append(pc.procs, p)
	}
	t.Cleanup(pc.stopAll)
	for _, p := range pc.procs {
		pc.start(p)
	}
	return pc
}

// stopAll kills every process and, when the test failed, logs the last
// lines each one logged.
func (pc *procCluster) stopAll() {
	for _, p := range pc.procs {
		pc.kill(p)
	}
	if !pc.t.Failed() {
		return
	}
	for _, p := range pc.procs {
		if data, err := os.ReadFile(p.logPath); err == nil {
			lines := strings.Split(string(data), "\n")
			if len(lines) > 60 {
				lines = lines[len(lines)-60:]
			}
			pc.t.Logf("---- last log lines of %s ----\n%s", p.name, strings.Join(lines, "\n"))
		}
	}
}

// start launches p (again, after a kill) with the same arguments and data.
func (pc *procCluster) start(p *proc) {
	pc.t.Helper()
	logf, err := os.OpenFile(p.logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		pc.t.Fatalf("open log: %v", err)
	}
	cmd := exec.Command(pc.bin, p.args...)
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.Env = []string{"PATH=" + os.Getenv("PATH")}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		pc.t.Fatalf("start %s: %v", p.name, err)
	}
	p.cmd = cmd
	p.exited = make(chan error, 1)
	go func() {
		p.exited <- cmd.Wait()
		_ = logf.Close()
	}()
}

// kill sends SIGKILL to p's process (by its PID) and waits for it.
func (pc *procCluster) kill(p *proc) {
	if p.cmd == nil || p.cmd.Process == nil {
		return
	}
	select {
	case <-p.exited:
	default:
		_ = p.cmd.Process.Signal(syscall.SIGKILL)
		<-p.exited
	}
	p.cmd = nil
}

// terminate sends SIGTERM and returns how long the process took to exit
// and its exit error.
func (pc *procCluster) terminate(p *proc, within time.Duration) (time.Duration, error) {
	start := time.Now()
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case err := <-p.exited:
		p.cmd = nil
		return time.Since(start), err
	case <-time.After(within):
		pc.t.Fatalf("%s did not exit within %v of SIGTERM", p.name, within)
		return 0, nil
	}
}

func (pc *procCluster) running() []*proc {
	var out []*proc
	for _, p := range pc.procs {
		if p.cmd != nil {
			out = append(out, p)
		}
	}
	return out
}

// httpc is a client with a deadline, so no test request hangs.
var httpc = &http.Client{Timeout: 15 * time.Second}

type response struct {
	status int
	header http.Header
	body   []byte
}

func do(t *testing.T, method, url, contentType, body string) response {
	t.Helper()
	r, err := tryDo(method, url, contentType, body)
	if err != nil {
		t.Fatalf("%s %s: %v", method, url, err)
	}
	return r
}

func tryDo(method, url, contentType, body string) (response, error) {
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, url, rd)
	if err != nil {
		return response{}, err
	}
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	req.Header.Set("Accept", "application/json")
	resp, err := httpc.Do(req)
	if err != nil {
		return response{}, err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	return response{status: resp.StatusCode, header: resp.Header, body: data}, err
}

// view is the cluster's status as p reports it.
func (pc *procCluster) view(p *proc) (*client.ClusterStatus, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	return p.client().Cluster().Status(ctx)
}

// leader waits until every running process names the same leader, and
// returns it.
func (pc *procCluster) leader(timeout time.Duration) *proc {
	pc.t.Helper()
	var found *proc
	waitfor.Cond(pc.t, timeout, "all running nodes to agree on a leader", func() bool {
		leader := ""
		for _, p := range pc.running() {
			v, err := pc.view(p)
			if err != nil || v.Leader == "" || (leader != "" && v.Leader != leader) {
				return false
			}
			leader = v.Leader
		}
		for _, p := range pc.running() {
			if p.name == leader {
				found = p
				return true
			}
		}
		return false
	})
	return found
}

func jsonBody(t *testing.T, r response, v any) {
	t.Helper()
	if err := json.Unmarshal(r.body, v); err != nil {
		t.Fatalf("decode %s: %v", bytes.TrimSpace(r.body), err)
	}
}
