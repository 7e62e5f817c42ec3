package kvbench_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/kvnode/kvnode/auth"
	"github.com/kvnode/kvnode/bench/kvbench"
	"github.com/kvnode/kvnode/bench/kvbench/kvrest"
	"github.com/kvnode/kvnode/internal/waitfor"
	"github.com/kvnode/kvnode/node"
	"github.com/kvnode/kvnode/node/nodetest"
)

// TestEndToEnd runs every workload briefly (a few hundred operations)
// against an in-process cluster of three members, through all three
// endpoints, and checks the counts, that no operation failed, and that
// what the workload wrote is there afterwards.
func TestEndToEnd(t *testing.T) {
	c := nodetest.New(t)
	var urls []string
	for i := 1; i <= 3; i++ {
		n := c.Start(fmt.Sprintf("n%d", i), 3)
		urls = append(urls, "http://"+n.HTTPAddr())
	}
	leader := c.Leader()
	waitfor.Cond(t, 30*time.Second, "a leader in every partition group", func() bool {
		r := nodetest.Call(t, leader, "GET", "/management/v1/partitions", "")
		var pt struct {
			Groups []struct {
				Leader string `json:"leader"`
			} `json:"groups"`
		}
		if r.Status != 200 || json.Unmarshal([]byte(r.Body), &pt) != nil || len(pt.Groups) == 0 {
			return false
		}
		for _, g := range pt.Groups {
			if g.Leader == "" {
				return false
			}
		}
		return true
	})

	config := func(w kvbench.Workload, region string) kvbench.Config {
		cfg := kvbench.Default()
		cfg.Endpoints = append([]string(nil), urls...)
		cfg.Workload, cfg.Region, cfg.CreateRegion = w, region, "REPLICATE"
		cfg.Keys, cfg.ValueSize = 20, 200
		cfg.Concurrency = []int{4}
		cfg.MaxOps = 200
		cfg.Duration = 2 * time.Minute // the count ends each run
		return cfg
	}
	// run runs cfg, and checks that each point ended by its count with no
	// error (conflicts are CAS's expected answer).
	run := func(t *testing.T, cfg kvbench.Config) []kvbench.Result {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		results, err := kvbench.Run(ctx, cfg, kvrest.Dial, kvbench.Output{})
		if err != nil {
			t.Fatalf("run: %v", err)
		}
		if len(results) != len(cfg.Concurrency) {
			t.Fatalf("%d results for %d points", len(results), len(cfg.Concurrency))
		}
		for _, r := range results {
			if r.Ops != cfg.MaxOps || r.Errors != 0 || r.OK+r.Conflicts != r.Ops {
				t.Errorf("c=%d: %d ops (%d ok, %d conflicts, %d errors %v), want %d without errors",
					r.Concurrency, r.Ops, r.OK, r.Conflicts, r.Errors, r.ErrorsByKind, cfg.MaxOps)
			}
			if r.OK > 0 && (r.Latency.P50 <= 0 || r.Latency.Max < r.Latency.P99 || r.OpsPerSec <= 0) {
				t.Errorf("c=%d: latency %+v, %v ops/s", r.Concurrency, r.Latency, r.OpsPerSec)
			}
		}
		return results
	}
	count := func(t *testing.T, region string) int {
		t.Helper()
		r := nodetest.MustCall(t, leader, "HEAD", "/kv/v1/"+region, "", 200)
		n, err := strconv.Atoi(r.Header.Get("Resource-Count"))
		if err != nil {
			t.Fatalf("Resource-Count %q", r.Header.Get("Resource-Count"))
		}
		return n
	}
	revisions := func(t *testing.T, region string, keys int) (sum int64) {
		t.Helper()
		for i := range keys {
			r := nodetest.MustCall(t, leader, "GET", fmt.Sprintf("/kv/v1/%s/kvbench-%08d", region, i), "", 200)
			var v struct {
				Type string `json:"@type"`
				Rev  int64  `json:"rev"`
			}
			if err := json.Unmarshal([]byte(r.Body), &v); err != nil || v.Type != "Order" {
				t.Fatalf("key %d: %s (%v)", i, r.Body, err)
			}
			sum += v.Rev
		}
		return sum
	}

	t.Run("put", func(t *testing.T) {
		cfg := config(kvbench.Put, "puts")
		cfg.Keys, cfg.Preload = 10, false
		run(t, cfg)
		// 200 uniform draws over 10 keys reach every key (but with odds
		// of 1 in 10^8), and only those.
		if n := count(t, "puts"); n != 10 {
			t.Errorf("%d entries after the puts, want the 10 keys", n)
		}
		revisions(t, "puts", 10)
	})

	t.Run("get", func(t *testing.T) {
		cfg := config(kvbench.Get, "gets")
		cfg.Warmup = 200 * time.Millisecond
		r := run(t, cfg)[0]
		if r.Consistency != "linearizable" || r.ByOp["get"].OK != 200 {
			t.Errorf("%+v", r)
		}
		if n := count(t, "gets"); n != cfg.Keys {
			t.Errorf("%d entries after the preload, want %d", n, cfg.Keys)
		}
	})

	t.Run("stale get sweep", func(t *testing.T) {
		cfg := config(kvbench.Get, "gets")
		cfg.Stale, cfg.Zipf, cfg.Concurrency, cfg.MaxOps = true, true, []int{1, 4}, 100
		for i, r := range run(t, cfg) {
			if r.Consistency != "stale" || r.Concurrency != cfg.Concurrency[i] {
				t.Errorf("point %d: %+v", i, r)
			}
		}
	})

	t.Run("put-if-absent", func(t *testing.T) {
		cfg := config(kvbench.PutIfAbsent, "creates")
		run(t, cfg)
		if n := count(t, "creates"); n != 200 {
			t.Errorf("%d entries after 200 put-if-absent, want 200", n)
		}
	})

	t.Run("cas", func(t *testing.T) {
		cfg := config(kvbench.CAS, "swaps")
		cfg.Keys = 5 // four clients on five keys: some races lost
		r := run(t, cfg)[0]
		if r.OK == 0 {
			t.Fatalf("no CAS succeeded: %+v", r)
		}
		// Each successful CAS raised one key's revision by one, from the
		// preload's 0; a lost race raised none.
		if sum := revisions(t, "swaps", cfg.Keys); sum != r.OK {
			t.Errorf("revisions add up to %d after %d successful CAS (%d conflicts)", sum, r.OK, r.Conflicts)
		}
	})

	t.Run("mixed", func(t *testing.T) {
		cfg := config(kvbench.Mixed, "gets")
		cfg.ReadPercent = 50
		r := run(t, cfg)[0]
		get, put := r.ByOp["get"], r.ByOp["put"]
		if get.OK == 0 || put.OK == 0 || get.OK+put.OK != 200 {
			t.Errorf("mixed: %d gets, %d puts", get.OK, put.OK)
		}
	})

	t.Run("multi-put", func(t *testing.T) {
		cfg := config(kvbench.MultiPut, "batches")
		cfg.Keys, cfg.Batch, cfg.Preload = 10, 4, false
		r := run(t, cfg)[0]
		if r.Batch != 4 || r.EntriesPerSec < 3.9*r.OpsPerSec {
			t.Errorf("multi-put: batch %d, %v entries/s at %v ops/s", r.Batch, r.EntriesPerSec, r.OpsPerSec)
		}
		if n := count(t, "batches"); n != 10 {
			t.Errorf("%d entries after 800 keys written in batches of 4 over 10 keys, want 10", n)
		}
		revisions(t, "batches", 10)
	})

	t.Run("ad-hoc query", func(t *testing.T) {
		cfg := config(kvbench.Query, "gets")
		cfg.Preload = false
		run(t, cfg)
	})

	t.Run("named query", func(t *testing.T) {
		cfg := config(kvbench.Query, "gets")
		cfg.Preload, cfg.NamedQuery, cfg.QueryID = false, true, "kvbench-e2e"
		run(t, cfg)
		r := nodetest.MustCall(t, leader, "GET", "/kv/v1/queries", "", 200)
		if !strings.Contains(r.Body, `{"id":"kvbench-e2e","oql":"SELECT * FROM /gets o WHERE o.customerId = $1"}`) {
			t.Errorf("queries: %s", r.Body)
		}
	})

	t.Run("partitioned region, leader routing", func(t *testing.T) {
		cfg := config(kvbench.Put, "events")
		cfg.CreateRegion, cfg.Route, cfg.Keys, cfg.Preload = "PARTITION", kvbench.Leader, 10, false
		r := run(t, cfg)[0]
		if r.RegionType != "PARTITION" || r.LeaderRouted != r.Ops {
			t.Errorf("%s region, %d of %d requests sent to a leader", r.RegionType, r.LeaderRouted, r.Ops)
		}
		if n := count(t, "events"); n != 10 {
			t.Errorf("%d entries, want 10", n)
		}
		var regions struct {
			Regions []struct{ Name, Type string }
		}
		_ = json.Unmarshal([]byte(nodetest.MustCall(t, leader, "GET", "/kv/v1", "", 200).Body), &regions)
		if !strings.Contains(fmt.Sprint(regions.Regions), "{events PARTITION}") {
			t.Errorf("regions: %v", regions.Regions)
		}
	})

	t.Run("fixed rate", func(t *testing.T) {
		cfg := config(kvbench.Get, "gets")
		cfg.Preload, cfg.Rate, cfg.MaxOps, cfg.Concurrency = false, 100, 50, []int{8}
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		results, err := kvbench.Run(ctx, cfg, kvrest.Dial, kvbench.Output{})
		if err != nil || len(results) != 1 {
			t.Fatalf("%v, %v", results, err)
		}
		r := results[0]
		// 50 operations due over 0.5 s: each sent or counted unsent.
		if r.Mode != "fixed-rate" || r.Errors != 0 || r.Ops+r.Unsent != 50 || r.Seconds < 0.45 || r.Seconds > 10 {
			t.Errorf("fixed rate: %s, %d ops + %d unsent in %v s, %d errors", r.Mode, r.Ops, r.Unsent, r.Seconds, r.Errors)
		}
	})

	// The region creation refuses a type the region does not have.
	cfg := config(kvbench.Put, "events")
	cfg.MaxOps = 1
	if _, err := kvbench.Run(context.Background(), cfg, kvrest.Dial, kvbench.Output{}); err == nil || !strings.Contains(err.Error(), "exists as PARTITION") {
		t.Errorf("creating events as REPLICATE: %v", err)
	}
}

// TestSecureEndToEnd: a member serving HTTPS with security on is loaded
// with the CA's certificate and a user's credentials; what the user may
// not do is counted as 403s, wrong credentials and an unknown CA stop the
// setup.
func TestSecureEndToEnd(t *testing.T) {
	m := startSecureMember(t, false)
	dir, ca, caPath, url := m.dir, m.ca, m.caPath, m.url

	config := func(w kvbench.Workload, user, password string) kvbench.Config {
		cfg := kvbench.Default()
		cfg.Endpoints, cfg.CACert, cfg.User, cfg.Password = []string{url}, caPath, user, password
		cfg.Workload, cfg.Region, cfg.Keys, cfg.MaxOps, cfg.Concurrency = w, "secure", 10, 50, []int{2}
		return cfg
	}
	run := func(cfg kvbench.Config) (kvbench.Result, error) { return runPoint(t, cfg) }

	// The admin creates the region, preloads and writes, through the leader.
	cfg := config(kvbench.Put, "admin", "admin-pw")
	cfg.CreateRegion, cfg.Route = "PARTITION", kvbench.Leader
	if r, err := run(cfg); err != nil || r.OK != 50 || r.LeaderRouted != 50 {
		t.Fatalf("admin's put: %+v, %v", r, err)
	}
	// The viewer reads (with a client certificate too), and may not write.
	cfg = config(kvbench.Get, "viewer", "viewer-pw")
	cfg.Preload = false
	cfg.Cert, cfg.Key = ca.Issue(t, dir, "client")
	if r, err := run(cfg); err != nil || r.OK != 50 {
		t.Errorf("viewer's get: %+v, %v", r, err)
	}
	cfg = config(kvbench.Put, "viewer", "viewer-pw")
	cfg.Preload = false
	if r, err := run(cfg); err != nil || r.OK != 0 || r.ErrorsByKind["403"] != 50 {
		t.Errorf("viewer's put: %d ok, errors %v, %v; want fifty 403s", r.OK, r.ErrorsByKind, err)
	}
	// A wrong password, and a CA that did not sign the member's
	// certificate, stop the run before it starts.
	if _, err := run(config(kvbench.Get, "viewer", "nope")); err == nil || !strings.Contains(err.Error(), "401") {
		t.Errorf("a wrong password: %v", err)
	}
	other := config(kvbench.Get, "viewer", "viewer-pw")
	other.CACert = filepath.Join(dir, "other.pem")
	if err := os.WriteFile(other.CACert, nodetest.NewCA(t, "another CA").PEM, 0o600); err != nil {
		t.Fatal(err)
	}
	t0 := time.Now()
	if _, err := run(other); err == nil || !strings.Contains(err.Error(), "certificate") || time.Since(t0) > 10*time.Second {
		t.Errorf("another CA: %v after %v", err, time.Since(t0))
	}
}

// secureMember is a member serving HTTPS with security on.
type secureMember struct {
	dir, caPath, url string
	ca               *nodetest.CA
}

// startSecureMember starts a one-member cluster serving HTTPS with a test
// CA's certificate and securityFile's users; with clientCerts its REST
// port requires client certificates of the same CA (--client-cert-auth).
func startSecureMember(t *testing.T, clientCerts bool) secureMember {
	t.Helper()
	m := secureMember{dir: t.TempDir(), ca: nodetest.NewCA(t, "kvbench test CA")}
	m.caPath = filepath.Join(m.dir, "ca.pem")
	if err := os.WriteFile(m.caPath, m.ca.PEM, 0o600); err != nil {
		t.Fatal(err)
	}
	security := securityFile(t, m.dir)
	c := nodetest.New(t)
	c.Tune = func(name string, cfg *node.Config) {
		cfg.TLSCert, cfg.TLSKey = m.ca.Issue(t, m.dir, name)
		cfg.SecurityFile = security
		if clientCerts {
			cfg.TLSCA, cfg.ClientCertAuth = m.caPath, true
		}
	}
	m.url = "https://" + c.Start("n1", 1).HTTPAddr()
	return m
}

// runPoint runs cfg, a single point, within a minute.
func runPoint(t *testing.T, cfg kvbench.Config) (kvbench.Result, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	results, err := kvbench.Run(ctx, cfg, kvrest.Dial, kvbench.Output{})
	if len(results) == 0 {
		return kvbench.Result{}, err
	}
	return results[0], err
}

// securityFile writes a security file with admin (everything) and viewer
// (reads, and the cluster's view for --route leader).
func securityFile(t *testing.T, dir string) string {
	t.Helper()
	hash := func(pw string) string {
		h, err := auth.HashPassword([]byte(pw + "\n"))
		if err != nil {
			t.Fatal(err)
		}
		return h
	}
	data, err := json.Marshal(auth.File{
		Users: []auth.User{
			{Name: "admin", Password: hash("admin-pw"), Roles: []string{"admin"}},
			{Name: "viewer", Password: hash("viewer-pw"), Roles: []string{"reader"}},
		},
		Roles: []auth.Role{
			{Name: "admin", Permissions: []string{"DATA:READ", "DATA:WRITE", "CLUSTER:READ", "CLUSTER:MANAGE"}},
			{Name: "reader", Permissions: []string{"DATA:READ", "CLUSTER:READ"}},
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "security.json")
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestClientCertificateEndToEnd: against a member whose REST port requires
// client certificates (--client-cert-auth), a run with a certificate whose
// common name is the admin creates, preloads and writes; one with the
// viewer's reads and counts its writes as 403s; one without a certificate
// stops at the setup with the handshake's refusal.
func TestClientCertificateEndToEnd(t *testing.T) {
	m := startSecureMember(t, true)
	config := func(w kvbench.Workload, cn string) kvbench.Config {
		cfg := kvbench.Default()
		cfg.Endpoints, cfg.CACert = []string{m.url}, m.caPath
		if cn != "" {
			cfg.Cert, cfg.Key = m.ca.Issue(t, m.dir, cn)
		}
		cfg.Workload, cfg.Region, cfg.Keys, cfg.MaxOps, cfg.Concurrency = w, "certs", 10, 50, []int{2}
		return cfg
	}
	run := func(cfg kvbench.Config) (kvbench.Result, error) { return runPoint(t, cfg) }

	cfg := config(kvbench.Put, "admin")
	cfg.CreateRegion, cfg.Route = "PARTITION", kvbench.Leader
	if r, err := run(cfg); err != nil || r.OK != 50 || r.LeaderRouted != 50 {
		t.Fatalf("the admin's certificate, put: %+v, %v", r, err)
	}
	cfg = config(kvbench.Get, "viewer")
	cfg.Preload = false
	if r, err := run(cfg); err != nil || r.OK != 50 {
		t.Errorf("the viewer's certificate, get: %+v, %v", r, err)
	}
	cfg = config(kvbench.Put, "viewer")
	cfg.Preload = false
	if r, err := run(cfg); err != nil || r.OK != 0 || r.ErrorsByKind["403"] != 50 {
		t.Errorf("the viewer's certificate, put: %d ok, errors %v, %v; want fifty 403s", r.OK, r.ErrorsByKind, err)
	}
	t0 := time.Now()
	if _, err := run(config(kvbench.Get, "")); err == nil || !strings.Contains(err.Error(), "certificate required") || time.Since(t0) > 10*time.Second {
		t.Errorf("no certificate: %v after %v, want the handshake's refusal", err, time.Since(t0))
	}
}
