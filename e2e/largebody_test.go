package e2e

import (
	"bytes"
	"crypto/sha256"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/kvnode/kvnode/internal/waitfor"
)

// TestLargeBodyThroughAFollower: a cluster started with --max-body-size
// 256MiB takes a 100 MiB entry written through a member that is not the
// leader (so the command is forwarded whole over the internal port), keeps
// it through a restart of every member, and serves it whole; a body over the
// limit is a clean 413 on the leader and on a follower, and changes nothing.
// A forwarded body used to be cut at a fixed 64 MiB frame limit and the cut
// command, appended to the log, made every member panic when it applied it,
// and again at every restart.
func TestLargeBodyThroughAFollower(t *testing.T) {
	if testing.Short() {
		t.Skip("moves several hundred MiB through three processes; run without -short")
	}
	pc := startCluster(t, clusterSpec{n: 3, regions: "big:REPLICATE,bigp:PARTITION", extra: []string{"--max-body-size", "256MiB", "--request-timeout", "120s"}})
	leader := pc.leader(60 * time.Second)
	var follower *proc
	for _, p := range pc.procs {
		if p != leader {
			follower = p
			break
		}
	}
	waitReady(t, pc, 60*time.Second)

	value := bigJSON(100 << 20)
	sum := sha256.Sum256(value)
	for _, reg := range []string{"big", "bigp"} {
		// A PUT is idempotent: a client told "outcome unknown" (503) sends
		// it again, as this one does, a few times at most. On a loaded
		// machine a leader busy writing 100 MiB to its log can miss its
		// lease and step down while committing it.
		for try := 1; ; try++ {
			r := bigRequest(t, "PUT", follower.httpURL+"/kv/v1/"+reg+"/k", value)
			if r.status == 200 {
				t.Logf("PUT of 100 MiB into %s through follower %s: 200 at try %d", reg, follower.name, try)
				break
			}
			if r.status != 503 || try == 3 {
				t.Fatalf("PUT of 100 MiB into %s through follower %s, try %d: %d %s", reg, follower.name, try, r.status, clip(r.body))
			}
			t.Logf("PUT of 100 MiB into %s, try %d: %d %s", reg, try, r.status, clip(r.body))
			waitReady(t, pc, 60*time.Second)
		}
	}

	over := bigJSON(256<<20 + 1)
	for _, p := range []*proc{leader, follower} {
		r := bigRequest(t, "PUT", p.httpURL+"/kv/v1/big/over", over)
		if r.status != 413 || !strings.Contains(string(r.body), `"cause"`) {
			t.Errorf("PUT over the limit through %s: %d %s; want 413 with a JSON cause", p.name, r.status, clip(r.body))
		}
	}
	over = nil

	// Restart every member (SIGKILL: no clean shutdown) and read the entry
	// back through each of them.
	for _, p := range pc.procs {
		pc.kill(p)
	}
	for _, p := range pc.procs {
		pc.start(p)
	}
	waitReady(t, pc, 120*time.Second)
	for _, p := range pc.procs {
		for _, reg := range []string{"big", "bigp"} {
			r := bigRequest(t, "GET", p.httpURL+"/kv/v1/"+reg+"/k", nil)
			if r.status != 200 || sha256.Sum256(r.body) != sum {
				t.Errorf("GET %s/k through %s after the restart: %d, %d bytes; want 200 and the 100 MiB value", reg, p.name, r.status, len(r.body))
			}
		}
		if r := bigRequest(t, "GET", p.httpURL+"/kv/v1/big/over", nil); r.status != 404 {
			t.Errorf("GET big/over through %s: %d; want 404 (the 413 wrote nothing)", p.name, r.status)
		}
	}
}

// bigJSON is a JSON object of n bytes.
func bigJSON(n int) []byte {
	const head, tail = `{"pad":"`, `"}`
	b := make([]byte, 0, n)
	b = append(b, head...)
	b = append(b, bytes.Repeat([]byte("x"), n-len(head)-len(tail))...)
	return append(b, tail...)
}

// bigRequest sends a large body with a generous deadline.
func bigRequest(t *testing.T, method, url string, body []byte) response {
	t.Helper()
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequest(method, url, rd)
	if err != nil {
		t.Fatal(err)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	hc := &http.Client{Timeout: 3 * time.Minute}
	resp, err := hc.Do(req)
	if err != nil {
		// A server that refuses a body early may close the connection
		// before the client has sent all of it; the answer is still read.
		t.Fatalf("%s %s: %v", method, url, err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("%s %s: read answer: %v", method, url, err)
	}
	return response{status: resp.StatusCode, header: resp.Header, body: data}
}

// waitReady waits until every running member answers /readyz with 200.
func waitReady(t *testing.T, pc *procCluster, timeout time.Duration) {
	t.Helper()
	waitfor.Cond(t, timeout, "every member ready", func() bool {
		for _, p := range pc.running() {
			r, err := tryDo("GET", p.httpURL+"/readyz", "", "")
			if err != nil || r.status != 200 {
				return false
			}
		}
		return true
	})
}

func clip(b []byte) string {
	if len(b) > 300 {
		return fmt.Sprintf("%s... (%d bytes)", b[:300], len(b))
	}
	return string(b)
}
