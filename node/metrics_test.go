package node_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kvnode/kvnode/auth"
	"github.com/kvnode/kvnode/internal/promtest"
	"github.com/kvnode/kvnode/internal/waitfor"
	"github.com/kvnode/kvnode/node"
	"github.com/kvnode/kvnode/node/nodetest"
)

// get sends GET url with credentials (when user is set) and reads the
// answer.
func get(t *testing.T, url, user, password string) (int, string) {
	t.Helper()
	req, err := http.NewRequest("GET", url, nil)
	if err != nil {
		t.Fatal(err)
	}
	if user != "" {
		req.SetBasicAuth(user, password)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, string(b)
}

// scrape reads n's /metrics from its REST port (security off).
func scrape(t *testing.T, n *node.Node) string {
	t.Helper()
	code, body := get(t, "http://"+n.HTTPAddr()+"/metrics", "", "")
	if code != 200 {
		t.Fatalf("GET /metrics on %s = %d %.200s", n.Name(), code, body)
	}
	return body
}

// TestClusterMetrics: the metrics of every member of a 3-node cluster pass
// promtool check metrics; every Raft group has exactly one leader across
// the members (the one the cluster view names, for the control group);
// requests are counted under their route template, never the key; and
// regions, queries, functions, gossip and the Raft timings are reported.
func TestClusterMetrics(t *testing.T) {
	promtest.Promtool(t) // fail at once, not after the cluster formed
	ip := nodetest.New(t)
	for _, name := range []string{"a", "b", "c"} {
		ip.Start(name, 3)
	}
	leader := ip.Leader()
	a := ip.Nodes["a"]
	nodes := []*node.Node{ip.Nodes["a"], ip.Nodes["b"], ip.Nodes["c"]}
	nodetest.MustCall(t, a, "POST", "/management/v1/regions", `{"name":"orders","type":"REPLICATE"}`, 201)
	nodetest.MustCall(t, a, "POST", "/management/v1/regions", `{"name":"events","type":"PARTITION"}`, 201)
	for i := range 10 {
		nodetest.MustCall(t, a, "PUT", fmt.Sprintf("/kv/v1/orders/%d", 120+i), `{"total":1}`, 200)
		nodetest.MustCall(t, a, "PUT", fmt.Sprintf("/kv/v1/events/e%d", i), `{"n":1}`, 200)
	}
	nodetest.MustCall(t, a, "GET", "/kv/v1/orders/123", "", 200)
	nodetest.MustCall(t, a, "GET", "/geode/v1/orders/123", "", 200)
	nodetest.MustCall(t, a, "GET", "/kv/v1/queries/adhoc?q="+strings.ReplaceAll("SELECT * FROM /orders", " ", "%20"), "", 200)
	nodetest.MustCall(t, a, "POST", "/kv/v1/functions/MemberInfo", "", 200)
	for _, n := range nodes {
		waitfor.Cond(t, 20*time.Second, n.Name()+" to be ready", func() bool { return nodetest.Call(t, n, "GET", "/readyz", "").Status == 200 })
	}

	// Every member hosts every group (RF 3 on 3 members): one leader each.
	var per []promtest.Samples
	var leaders map[string]float64
	var caughtUp bool
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		per, leaders, caughtUp = per[:0], map[string]float64{}, true
		for _, n := range nodes {
			per = append(per, promtest.Parse(t, scrape(t, n)))
		}
		for _, s := range per {
			for _, x := range s.Find("kvnode_raft_state", map[string]string{"state": "leader"}) {
				leaders[x.Labels["group"]] += x.Value
			}
			// A write is acknowledged once a quorum has it: a replica may
			// apply the last one a moment later.
			if v, _ := s.Get("kvnode_region_entries", map[string]string{"region": "orders", "group": "0"}); v != 10 {
				caughtUp = false
			}
			if s.Sum("kvnode_region_entries", map[string]string{"region": "events"}) != 10 {
				caughtUp = false
			}
		}
		ok := caughtUp && len(leaders) == 5 // the control group and 4 partition groups
		for _, sum := range leaders {
			ok = ok && sum == 1
		}
		if ok {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("after 20 s: leaders per group summed over the members %v, want 1 in each of 5 groups; every replica holds the 10 orders and 10 events: %v", leaders, caughtUp)
		}
	}
	for i, n := range nodes {
		s := per[i]
		v, _ := s.Get("kvnode_raft_state", map[string]string{"group": "0", "state": "leader"})
		if (v == 1) != (n == leader) {
			t.Errorf("%s: kvnode_raft_state{group=0,state=leader} = %v; the cluster's leader is %s", n.Name(), v, leader.Name())
		}
		for _, x := range s.Find("kvnode_raft_state", nil) {
			if x.Labels["state"] == "shutdown" && x.Value != 0 {
				t.Errorf("%s: group %s is shut down", n.Name(), x.Labels["group"])
			}
		}
		if v, _ := s.Get("kvnode_gossip_members", map[string]string{"state": "alive"}); v != 3 {
			t.Errorf("%s: %v alive members, want 3", n.Name(), v)
		}
		if v, _ := s.Get("kvnode_raft_log_store_duration_seconds_count", map[string]string{"group": "0"}); v == 0 {
			t.Errorf("%s: no write to the control group's log was timed", n.Name())
		}
		if v := s.Sum("kvnode_region_entries", map[string]string{"region": "events"}); v != 10 {
			t.Errorf("%s: %v entries of events over its groups, want all 10 (every member hosts every group)", n.Name(), v)
		}
		if v, _ := s.Get("kvnode_region_size_bytes", map[string]string{"region": "orders", "group": "0"}); v != 10*float64(len("120")+len(`{"total":1}`)) {
			t.Errorf("%s: orders holds %v bytes, want 10 keys and values", n.Name(), v)
		}
		if v, _ := s.Get("kvnode_data_dir_free_bytes", nil); v <= 0 {
			t.Errorf("%s: data dir free bytes = %v", n.Name(), v)
		}
		for _, x := range s {
			if r, ok := x.Labels["route"]; ok && (strings.Contains(r, "orders") || strings.Contains(r, "123") || strings.Contains(r, "geode")) {
				t.Errorf("%s: %s has route %q, the path the client sent", n.Name(), x.Name, r)
			}
		}
	}
	if v, _ := per[nodeIndex(nodes, leader)].Get("kvnode_raft_commit_duration_seconds_count", map[string]string{"group": "0"}); v == 0 {
		t.Errorf("the control group's leader timed no commit")
	}
	sa := per[0]
	for _, c := range []struct {
		name   string
		labels map[string]string
		min    float64
	}{
		// The 10 PUTs, GET /kv/v1/orders/123 and the same through /geode/v1.
		{"kvnode_http_requests_total", map[string]string{"route": "/kv/v1/:region/:keys", "method": "GET", "code": "200"}, 2},
		{"kvnode_http_requests_total", map[string]string{"route": "/kv/v1/:region/:keys", "method": "PUT", "code": "200"}, 20},
		{"kvnode_http_request_duration_seconds_count", map[string]string{"route": "/kv/v1/:region/:keys", "method": "PUT"}, 20},
		{"kvnode_query_duration_seconds_count", nil, 1},
		{"kvnode_query_result_rows_sum", nil, 10},
		{"kvnode_function_executions_total", map[string]string{"id": "MemberInfo", "outcome": "ok"}, 1},
	} {
		if v, _ := sa.Get(c.name, c.labels); v < c.min {
			t.Errorf("a: %s%v = %v, want at least %v", c.name, c.labels, v, c.min)
		}
	}
	for _, n := range nodes {
		promtest.Check(t, scrape(t, n))
	}
}

func nodeIndex(nodes []*node.Node, n *node.Node) int {
	for i, x := range nodes {
		if x == n {
			return i
		}
	}
	return -1
}

// TestMetricsSecurity: with security on, the REST port's /metrics is 401
// without credentials, 403 for a user without CLUSTER:READ and served to
// one with it, and refused logins are counted; --metrics-addr serves
// /metrics and the probes /livez and /readyz, without credentials, and
// nothing else.
func TestMetricsSecurity(t *testing.T) {
	dir := t.TempDir()
	hash := func(pw string) string {
		h, err := auth.HashPassword([]byte(pw))
		if err != nil {
			t.Fatal(err)
		}
		return h
	}
	sec, _ := json.Marshal(auth.File{
		Users: []auth.User{
			{Name: "ops", Password: hash("ops-pw"), Roles: []string{"monitor"}},
			{Name: "app", Password: hash("app-pw"), Roles: []string{"app"}},
		},
		Roles: []auth.Role{
			{Name: "monitor", Permissions: []string{"CLUSTER:READ"}},
			{Name: "app", Permissions: []string{"DATA:READ", "DATA:WRITE"}},
		},
	})
	secPath := filepath.Join(dir, "security.json")
	if err := os.WriteFile(secPath, sec, 0o600); err != nil {
		t.Fatal(err)
	}
	ip := nodetest.New(t)
	ip.Tune = func(_ string, cfg *node.Config) {
		cfg.SecurityFile = secPath
		cfg.MetricsAddr = "127.0.0.1:0"
	}
	n := ip.Start("s", 1)
	if n.MetricsAddr() == "" {
		t.Fatal("no metrics listener with --metrics-addr set")
	}
	rest := "http://" + n.HTTPAddr() + "/metrics"
	for _, c := range []struct {
		user, password string
		want           int
	}{
		{"", "", 401},
		{"ops", "wrong", 401},
		{"app", "app-pw", 403},
		{"ops", "ops-pw", 200},
	} {
		if code, body := get(t, rest, c.user, c.password); code != c.want {
			t.Errorf("GET /metrics on the REST port as %q = %d %.100s, want %d", c.user, code, body, c.want)
		}
	}
	plain := "http://" + n.MetricsAddr()
	code, body := get(t, plain+"/metrics", "", "")
	if code != 200 {
		t.Fatalf("GET /metrics on --metrics-addr = %d %.200s", code, body)
	}
	promtest.Check(t, body)
	s := promtest.Parse(t, body)
	if v, _ := s.Get("kvnode_login_failures_total", map[string]string{"reason": "bad_credentials"}); v != 1 {
		t.Errorf("kvnode_login_failures_total{reason=bad_credentials} = %v, want 1 (ops' wrong password)", v)
	}
	if v, _ := s.Get("kvnode_http_requests_total", map[string]string{"route": "/metrics", "code": "403"}); v != 1 {
		t.Errorf("kvnode_http_requests_total{route=/metrics,code=403} = %v, want 1", v)
	}
	for _, probe := range []string{"/livez", "/readyz"} {
		waitfor.Cond(t, 20*time.Second, "GET "+probe+" on --metrics-addr to answer 200 without credentials", func() bool {
			code, _ := get(t, plain+probe, "", "")
			return code == 200
		})
	}
	for _, path := range []string{"/kv/v1", "/kv/v1/ping", "/management/v1/cluster", "/console/"} {
		if code, _ := get(t, plain+path, "ops", "ops-pw"); code != 404 {
			t.Errorf("GET %s on --metrics-addr = %d, want 404: it serves /metrics and the probes alone", path, code)
		}
	}

	cfg := node.Default()
	cfg.Name, cfg.DataDir, cfg.MetricsAddr = "x", "d", "localhost"
	if err := cfg.Validate(); err == nil || !strings.Contains(err.Error(), "--metrics-addr") {
		t.Errorf("Validate with --metrics-addr localhost = %v, want an error naming the flag", err)
	}
}
