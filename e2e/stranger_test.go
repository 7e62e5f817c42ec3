package e2e

import (
	"context"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kvnode/kvnode/client"
	"github.com/kvnode/kvnode/internal/waitfor"
	"github.com/kvnode/kvnode/node/nodetest"
	"github.com/kvnode/kvnode/partition"
)

// TestStrangerNeverJoins is issue 28's stranger, on real processes: two
// members with mutual TLS on the internal port, a certificate for
// kvnode.peer.test and --peer-names kvnode.peer.test, started together with
// a stranger that gossip lets in but that cannot prove who it is over the
// internal port: one with a certificate from the same CA for another name,
// one with no certificate (no TLS at all), and one that knows the gossip
// key but holds a certificate of another CA. Throughout the run the
// stranger appears in no Raft configuration (the control group's and every
// partition group's, polled on every good member), every group keeps its
// voters among the good members, /management/v1/cluster lists the stranger
// as refused with the reason, /servers does not list it, and the refusal
// is counted. Then a third good member joins and becomes a voter of every
// group, one of the first two is killed, and every group still takes
// writes: the stranger held no place a good member needed.
func TestStrangerNeverJoins(t *testing.T) {
	if testing.Short() {
		t.Skip("runs four kvnode processes for each of three strangers")
	}
	ca := nodetest.NewCA(t, "kvnode cluster CA")
	other := nodetest.NewCA(t, "another CA")
	keyBytes := make([]byte, 32)
	_, _ = rand.Read(keyBytes)
	gossipKey := base64.StdEncoding.EncodeToString(keyBytes)

	for _, tc := range []struct {
		name      string
		gossipKey bool
		// tls is the stranger's TLS flags (none: no TLS at all).
		tls    func(dir string) []string
		reason string
	}{
		{name: "same CA, other name", tls: func(dir string) []string {
			cert, key := ca.IssueNames(t, dir, "stranger", "billing.other.test")
			return []string{"--tls-cert", cert, "--tls-key", key, "--tls-ca", filepath.Join(dir, "ca.pem")}
		}, reason: "none of which --peer-names [kvnode.peer.test] allows"},
		{name: "no certificate", reason: "mutual TLS handshake with its internal port"},
		{name: "gossip key, certificate of another CA", gossipKey: true, tls: func(dir string) []string {
			cert, key := other.IssueNames(t, dir, "stranger", "kvnode.peer.test")
			return []string{"--tls-cert", cert, "--tls-key", key, "--tls-ca", filepath.Join(dir, "ca.pem")}
		}, reason: "not from the cluster's CA"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			if err := os.WriteFile(filepath.Join(dir, "ca.pem"), ca.PEM, 0o600); err != nil {
				t.Fatal(err)
			}
			pc := &procCluster{t: t, bin: kvnodeBinary(t)}
			t.Cleanup(pc.stopAll)
			names := []string{"good-a", "good-b", "stranger", "good-c"}
			ports := freePorts(t, 3*len(names))
			var joins []string
			for i := range names {
				joins = append(joins, fmt.Sprintf("127.0.0.1:%d", ports[3*i+2]))
			}
			for i, name := range names {
				p := &proc{
					name:    name,
					dataDir: filepath.Join(dir, name),
					logPath: filepath.Join(dir, name+".log"),
					httpURL: fmt.Sprintf("https://127.0.0.1:%d", ports[3*i]),
				}
				p.args = []string{
					"--name", name, "--data-dir", p.dataDir,
					"--http-addr", fmt.Sprintf("127.0.0.1:%d", ports[3*i]),
					"--internal-addr", fmt.Sprintf("127.0.0.1:%d", ports[3*i+1]),
					"--gossip-addr", fmt.Sprintf("127.0.0.1:%d", ports[3*i+2]),
					"--join", strings.Join(joins, ","),
					"--bootstrap-expect", "2",
					"--regions", "rep:REPLICATE,par:PARTITION",
					"--peer-names", "kvnode.peer.test",
				}
				switch {
				case name != "stranger":
					cert, key := ca.IssueNames(t, dir, name, "kvnode.peer.test")
					p.args = append(p.args, "--tls-cert", cert, "--tls-key", key, "--tls-ca", filepath.Join(dir, "ca.pem"))
				case tc.tls != nil:
					p.args = append(p.args, tc.tls(dir)...)
				default:
					p.args = slices.DeleteFunc(p.args, func(a string) bool { return a == "--peer-names" || a == "kvnode.peer.test" })
					p.httpURL = strings.Replace(p.httpURL, "https://", "http://", 1)
				}
				if tc.gossipKey {
					p.args = append(p.args, "--gossip-key", gossipKey)
				}
				pc.procs = append(pc.procs, p)
			}
			a, b, stranger, c := pc.procs[0], pc.procs[1], pc.procs[2], pc.procs[3]
			hc, tlsConfig := httpsClient(t, ca)
			for _, p := range pc.procs {
				p.tls = tlsConfig
			}

			// The stranger starts with the first two, so it is in gossip
			// before the cluster is bootstrapped.
			// The good members up, for the poll (a proc itself is the
			// test goroutine's).
			var upMu sync.Mutex
			var up []*proc
			setUp := func(p *proc, isUp bool) {
				upMu.Lock()
				defer upMu.Unlock()
				up = slices.DeleteFunc(up, func(q *proc) bool { return q == p })
				if isUp {
					up = append(up, p)
				}
			}
			good := func() []*proc {
				upMu.Lock()
				defer upMu.Unlock()
				return slices.Clone(up)
			}
			for _, p := range []*proc{a, b, stranger} {
				pc.start(p)
			}
			setUp(a, true)
			setUp(b, true)
			poll := startConfigPoll(t, good, stranger.name)

			for _, p := range []*proc{a, b} {
				waitfor.Cond(t, 60*time.Second, p.name+" ready", func() bool {
					r, err := hc.Get(p.httpURL + "/readyz")
					if err != nil {
						return false
					}
					r.Body.Close()
					return r.StatusCode == 200
				})
			}
			// The stranger is listed, refused, with the reason.
			var seen client.Member
			waitfor.Cond(t, 30*time.Second, "the stranger listed as refused", func() bool {
				m, ok := findMember(a, stranger.name)
				seen = m
				return ok && m.Identity == "refused"
			})
			if !strings.Contains(seen.Reason, tc.reason) || seen.Suffrage != "" {
				t.Errorf("the stranger in /management/v1/cluster: %+v; want refused, no suffrage, a reason with %q", seen, tc.reason)
			}
			servers, err := a.client().Servers(ctx(t))
			if err != nil {
				t.Fatalf("servers: %v", err)
			}
			if len(servers) != 2 || slices.Contains(servers, stranger.httpURL) {
				t.Errorf("/servers = %v: want the two good members only", servers)
			}
			if v := metricValue(t, hc, b.httpURL, "kvnode_members_refused"); v != "1" {
				t.Errorf("kvnode_members_refused on %s = %q, want 1", b.name, v)
			}
			status := exec.Command(pc.bin, "status", "--url", a.httpURL, "--cacert", filepath.Join(dir, "ca.pem"))
			if out, err := status.CombinedOutput(); err != nil || !strings.Contains(string(out), "stranger is refused: ") {
				t.Errorf("kvnode status: %v\n%s\nwant a line saying the stranger is refused", err, out)
			}

			// A third good member joins and becomes a voter of every group.
			pc.start(c)
			setUp(c, true)
			want := []string{a.name, b.name, c.name}
			waitfor.Cond(t, 90*time.Second, "good-c a voter of the control group and of every partition group", func() bool {
				return votersAre(a, want)
			})

			// One of the first two dies: every group keeps a quorum of
			// good voters and takes writes.
			setUp(a, false)
			pc.kill(a)
			groups := partitionGroups(t, b)
			for gid := uint64(1); gid <= uint64(groups); gid++ {
				key := keyOfGroup(gid, groups)
				writeWithin(t, b, "par", key, 30*time.Second)
			}
			writeWithin(t, c, "rep", "after-kill", 30*time.Second)

			observed, violations := poll.stop()
			if observed < 20 {
				t.Errorf("the configurations were observed only %d times", observed)
			}
			for _, v := range violations {
				t.Error(v)
			}
			t.Logf("configurations observed %d times on the good members; the stranger was in none", observed)
		})
	}
}

// httpsClient is an HTTP client, and the TLS configuration, that trust
// the test CA (for what is not the API's: /readyz, /metrics).
func httpsClient(t *testing.T, ca *nodetest.CA) (*http.Client, *tls.Config) {
	t.Helper()
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(ca.PEM) {
		t.Fatal("the test CA does not parse")
	}
	cfg := &tls.Config{RootCAs: pool}
	return &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: cfg}}, cfg
}

// findMember is the member name as p's cluster status lists it.
func findMember(p *proc, name string) (client.Member, bool) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	st, err := p.client().Cluster().Status(ctx)
	if err != nil {
		return client.Member{}, false
	}
	for _, m := range st.Members {
		if m.Name == name {
			return m, true
		}
	}
	return client.Member{}, false
}

// votersAre reports whether the control group and every partition group
// have exactly want as voters, and no non-voter, as p reports them.
func votersAre(p *proc, want []string) bool {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	st, err := p.client().Cluster().Status(ctx)
	if err != nil {
		return false
	}
	var voters []string
	for _, m := range st.Members {
		if m.Suffrage == "voter" {
			voters = append(voters, m.Name)
		}
	}
	slices.Sort(voters)
	if !slices.Equal(voters, want) {
		return false
	}
	parts, err := p.client().Cluster().Partitions(ctx)
	if err != nil || len(parts.Groups) == 0 {
		return false
	}
	for _, g := range parts.Groups {
		v := slices.Clone(g.Voters)
		slices.Sort(v)
		if !slices.Equal(v, want) || len(g.NonVoters) > 0 {
			return false
		}
	}
	return true
}

func partitionGroups(t *testing.T, p *proc) int {
	t.Helper()
	parts, err := p.client().Cluster().Partitions(ctx(t))
	if err != nil || parts.PartitionGroups < 1 {
		t.Fatalf("partitions: %+v, %v", parts, err)
	}
	return parts.PartitionGroups
}

// keyOfGroup is a key whose bucket partition group gid owns.
func keyOfGroup(gid uint64, groups int) string {
	for i := 0; ; i++ {
		key := fmt.Sprintf("k%d", i)
		if partition.GroupForKey(key, groups) == gid {
			return key
		}
	}
}

// writeWithin puts an entry at key through p until it is stored (an
// election may be under way after a kill), and reads it back.
func writeWithin(t *testing.T, p *proc, region, key string, d time.Duration) {
	t.Helper()
	r := p.client().Region(region)
	var last error
	deadline := time.Now().Add(d)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		last = r.Put(ctx, key, map[string]bool{"written": true})
		cancel()
		if last == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("PUT %s/%s through %s not stored within %v: %v", region, key, p.name, d, last)
		}
		time.Sleep(200 * time.Millisecond)
	}
	raw, err := r.Get(ctx(t), key)
	var v map[string]any
	if err != nil || json.Unmarshal(raw, &v) != nil || v["written"] != true {
		t.Fatalf("GET %s/%s after the PUT: %s, %v", region, key, raw, err)
	}
}

// metricValue is the value of an unlabelled metric in a member's /metrics.
func metricValue(t *testing.T, hc *http.Client, base, name string) string {
	t.Helper()
	r, err := hc.Get(base + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer r.Body.Close()
	data, _ := io.ReadAll(r.Body)
	for _, line := range strings.Split(string(data), "\n") {
		if v, ok := strings.CutPrefix(line, name+" "); ok {
			return v
		}
	}
	return ""
}

// configPoll polls the Raft configurations on the good members until
// stop, and records every sight of the stranger in one.
type configPoll struct {
	done       chan struct{}
	wg         sync.WaitGroup
	mu         sync.Mutex
	observed   int
	violations []string
}

func startConfigPoll(t *testing.T, good func() []*proc, stranger string) *configPoll {
	p := &configPoll{done: make(chan struct{})}
	record := func(format string, args ...any) {
		p.mu.Lock()
		defer p.mu.Unlock()
		if len(p.violations) < 20 {
			p.violations = append(p.violations, fmt.Sprintf(format, args...))
		}
	}
	p.wg.Go(func() {
		tick := time.NewTicker(250 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-p.done:
				return
			case <-tick.C:
			}
			for _, g := range good() {
				if m, ok := findMember(g, stranger); ok && m.Suffrage != "" {
					record("%s: the stranger is a %s of the control group", g.name, m.Suffrage)
				}
				ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
				parts, err := g.client().Cluster().Partitions(ctx)
				cancel()
				if err != nil {
					continue
				}
				for _, grp := range parts.Groups {
					if slices.Contains(grp.Members, stranger) || slices.Contains(grp.Voters, stranger) || slices.Contains(grp.NonVoters, stranger) {
						record("%s: the stranger is in partition group %d: %+v", g.name, grp.Group, grp)
					}
					for _, v := range grp.Voters {
						if !strings.HasPrefix(v, "good-") {
							record("%s: partition group %d has voter %q", g.name, grp.Group, v)
						}
					}
				}
				p.mu.Lock()
				p.observed++
				p.mu.Unlock()
			}
		}
	})
	t.Cleanup(func() { p.stop() })
	return p
}

func (p *configPoll) stop() (int, []string) {
	select {
	case <-p.done:
	default:
		close(p.done)
	}
	p.wg.Wait()
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.observed, p.violations
}
