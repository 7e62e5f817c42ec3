package command

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// fake is a member that knows region orders, takes every write, and
// remembers the credentials it was sent.
type fake struct {
	mu     sync.Mutex
	auth   map[string]int // Authorization header → requests
	status int            // of single-key writes (200 unless set)
}

func newFake(t *testing.T) (*fake, string) {
	f := &fake{auth: map[string]int{}, status: 200}
	s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		f.mu.Lock()
		defer f.mu.Unlock()
		f.auth[r.Header.Get("Authorization")]++
		switch {
		case r.Method == "GET" && r.URL.Path == "/kv/v1":
			_, _ = w.Write([]byte(`{"regions":[{"name":"orders","type":"REPLICATE"}]}`))
		case r.Method == "PUT" && strings.Contains(r.URL.Path, ","):
			w.WriteHeader(200) // the preload's multi-key puts
		case r.Method == "PUT":
			w.WriteHeader(f.status)
		default:
			w.WriteHeader(404)
		}
	}))
	t.Cleanup(s.Close)
	return f, s.URL
}

type result struct {
	code        int
	out, errOut string
}

func invoke(env []string, args ...string) result {
	var out, errOut bytes.Buffer
	code := Run(context.Background(), args, env, &out, &errOut, Targets())
	return result{code, out.String(), errOut.String()}
}

func TestUsage(t *testing.T) {
	_, url := newFake(t)
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--endpoints", "http://192.0.2.1:8080"}, "allow-nonloopback"},
		{[]string{"--create-region", "x:LOCAL"}, "neither REPLICATE nor PARTITION"},
		{[]string{"--region", "a", "--create-region", "b:PARTITION"}, "name different regions"},
		{[]string{"--consistency", "eventual"}, "linearizable or stale"},
		{[]string{"--distribution", "normal"}, "uniform or zipf"},
		{[]string{"--concurrency", "1,x"}, "not a number"},
		{[]string{"--workload", "scan"}, "workload"},
		{[]string{"--target", "consul"}, `--target "consul": want kvnode, etcd`},
		{[]string{"--password", "p", "--user", "u", "--password-file", "f"}, "give the password once"},
		{[]string{"--endpoints", url, "extra"}, "unexpected argument"},
		{[]string{"--no-such-flag"}, "unknown flag"},
	} {
		r := invoke(nil, c.args...)
		if r.code != exitUsage || !strings.Contains(r.errOut, c.want) {
			t.Errorf("kvbench %s: exit %d, stderr %q; want %d and %q", strings.Join(c.args, " "), r.code, r.errOut, exitUsage, c.want)
		}
	}
	if r := invoke(nil, "--help"); r.code != exitOK || !strings.Contains(r.errOut, "--concurrency") || !strings.Contains(r.errOut, "Workloads:") {
		t.Errorf("--help: exit %d, %q", r.code, r.errOut)
	}
}

// TestSweep: a two-point sweep prints one JSON line per point and draws
// the plot; progress goes to standard error, results to standard output.
func TestSweep(t *testing.T) {
	_, url := newFake(t)
	plot := filepath.Join(t.TempDir(), "sweep.svg")
	r := invoke(nil, "--endpoints", url, "--workload", "put", "--keys", "50", "-c", "1,3", "-n", "40",
		"--duration", "30s", "--json", "--plot", plot, "--label", "t")
	if r.code != exitOK {
		t.Fatalf("exit %d: %s", r.code, r.errOut)
	}
	lines := strings.Split(strings.TrimSpace(r.out), "\n")
	if len(lines) != 2 {
		t.Fatalf("%d lines of output, want one per point:\n%s", len(lines), r.out)
	}
	for i, l := range lines {
		var res struct {
			Concurrency int    `json:"concurrency"`
			OK          int64  `json:"ok"`
			Errors      int64  `json:"errors"`
			Label       string `json:"label"`
		}
		if err := json.Unmarshal([]byte(l), &res); err != nil {
			t.Fatalf("line %d: %v: %s", i, err, l)
		}
		if res.Concurrency != []int{1, 3}[i] || res.OK != 40 || res.Errors != 0 || res.Label != "t" {
			t.Errorf("point %d: %+v", i, res)
		}
	}
	if !strings.Contains(r.errOut, "preloaded 50 keys into orders") {
		t.Errorf("stderr: %q", r.errOut)
	}
	svg, err := os.ReadFile(plot)
	if err != nil || !bytes.Contains(svg, []byte("<svg")) || !bytes.Contains(svg, []byte("kvbench put on orders (REPLICATE) [t]")) {
		t.Errorf("plot: %v\n%.300s", err, svg)
	}
}

// TestCredentials: KVNODE_USER and KVNODE_PASSWORD are sent as HTTP
// Basic credentials; a flag wins over its variable; KVNODE_CERT is read.
func TestCredentials(t *testing.T) {
	f, url := newFake(t)
	env := []string{"KVNODE_USER=alice", "KVNODE_PASSWORD=secret", "PATH=/bin"}
	if r := invoke(env, "--endpoints", url, "-n", "5", "-q", "--keys", "5"); r.code != exitOK {
		t.Fatalf("exit %d: %s", r.code, r.errOut)
	}
	pwFile := filepath.Join(t.TempDir(), "pw")
	if err := os.WriteFile(pwFile, []byte("other\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if r := invoke(env, "--endpoints", url, "-n", "5", "-q", "--keys", "5", "--user", "bob", "--password-file", pwFile); r.code != exitOK {
		t.Fatalf("exit %d: %s", r.code, r.errOut)
	}
	// The client's TLS variables are read too (a run against certificates
	// is bench/kvbench's TestClientCertificateEndToEnd).
	absent := filepath.Join(t.TempDir(), "absent.pem")
	r := invoke([]string{"KVNODE_CERT=" + absent, "KVNODE_KEY=" + absent}, "--endpoints", url, "-n", "5", "-q")
	if r.code == exitOK || !strings.Contains(r.errOut, "client certificate") || !strings.Contains(r.errOut, absent) {
		t.Errorf("KVNODE_CERT of a missing file: exit %d, %s; want a failure naming the file", r.code, r.errOut)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	alice, bob := "Basic YWxpY2U6c2VjcmV0", "Basic Ym9iOm90aGVy" // alice:secret, bob:other
	if f.auth[alice] < 7 || f.auth[bob] < 7 || len(f.auth) != 2 {
		t.Errorf("credentials sent: %v", f.auth)
	}
}

// TestNothingSucceeded: a point without one successful operation is a
// failed run, whose summary still says why.
func TestNothingSucceeded(t *testing.T) {
	f, url := newFake(t)
	f.status = 500
	r := invoke(nil, "--endpoints", url, "-n", "10", "-q", "--keys", "5")
	if r.code != exitFailed || !strings.Contains(r.out, "errors: 500=10") || !strings.Contains(r.errOut, "no operation succeeded") {
		t.Errorf("exit %d, out %q, err %q", r.code, r.out, r.errOut)
	}
}

// TestWatchWorkload: --workload watch goes to the watch workload with its
// own flags and rules; a member that does not serve the watch fails the
// run before any write, saying so.
func TestWatchWorkload(t *testing.T) {
	f, url := newFake(t)
	if r := invoke(nil, "--endpoints", url, "--workload", "watch", "-c", "1,2"); r.code != exitUsage || !strings.Contains(r.errOut, "not a sweep") {
		t.Errorf("a sweep of writers: exit %d, stderr %q; want %d and \"not a sweep\"", r.code, r.errOut, exitUsage)
	}
	if r := invoke(nil, "--endpoints", url, "--workload", "watch", "--watchers", "0"); r.code != exitUsage || !strings.Contains(r.errOut, "watchers must be in") {
		t.Errorf("no watcher: exit %d, stderr %q; want %d and \"watchers must be in\"", r.code, r.errOut, exitUsage)
	}
	if r := invoke(nil, "--endpoints", url, "--workload", "watch", "--target", "consul"); r.code != exitUsage || !strings.Contains(r.errOut, `target "consul": want kvnode or etcd`) {
		t.Errorf("an unknown target: exit %d, stderr %q; want %d and the targets known", r.code, r.errOut, exitUsage)
	}
	r := invoke(nil, "--endpoints", url, "--workload", "watch", "--watchers", "3", "-d", "200ms", "-q")
	if r.code != exitFailed || !strings.Contains(r.errOut, "3 of 3 watchers did not start: watch: GET "+url+"/kv/v1/watch: 404") {
		t.Errorf("a member without the watch: exit %d, stderr %q; want %d and the 404", r.code, r.errOut, exitFailed)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if n := f.auth[""]; n != 4 { // /metrics before the watchers, and the 3 watches
		t.Errorf("requests: got %d, want 4 (metrics, 3 watches) and no write", n)
	}
}

// TestEtcdTarget: --target etcd refuses what etcd does not have before
// any request.
func TestEtcdTarget(t *testing.T) {
	r := invoke(nil, "--target", "etcd", "--create-region", "x:PARTITION", "-q")
	if r.code != exitFailed || !strings.Contains(r.errOut, "target etcd: etcd has no regions to create") {
		t.Errorf("exit %d, stderr %q", r.code, r.errOut)
	}
}
