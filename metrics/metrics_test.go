package metrics_test

import (
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/kvnode/kvnode/internal/promtest"
	"github.com/kvnode/kvnode/metrics"
)

// scrape reads r's exposition in the text format.
func scrape(t *testing.T, r *metrics.Registry) string {
	t.Helper()
	srv := httptest.NewServer(r.Handler(true))
	defer srv.Close()
	resp, err := http.Get(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != 200 || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/plain") {
		t.Fatalf("scrape = %d %s %.200s", resp.StatusCode, resp.Header.Get("Content-Type"), b)
	}
	return string(b)
}

func testSources(dir string) metrics.Sources {
	return metrics.Sources{
		Groups: func() []metrics.GroupState {
			return []metrics.GroupState{
				{ID: 0, State: "Leader", Term: 3, CommitIndex: 40, AppliedIndex: 39, LastIndex: 41, Voters: 3,
					Regions: []metrics.RegionSize{{Region: "orders", Entries: 12, Bytes: 3400}}},
				{ID: 2, State: "Follower", Term: 5, CommitIndex: 7, AppliedIndex: 7, LastIndex: 7, Voters: 2, NonVoters: 1,
					Regions: []metrics.RegionSize{{Region: "events", Entries: 5, Bytes: 99}}},
			}
		},
		Gossip:  func() metrics.GossipState { return metrics.GossipState{Alive: 2, Failed: 1, HealthScore: 4} },
		DataDir: dir,
	}
}

// TestExposition: every kind of metric, fed, comes out under its
// documented name and labels, and promtool finds nothing to complain of.
func TestExposition(t *testing.T) {
	text := scrape(t, fed(t))
	promtest.Check(t, text)
	s := promtest.Parse(t, text)
	want := []struct {
		name   string
		labels map[string]string
		value  float64
	}{
		{"kvnode_build_info", map[string]string{"version": "v9.9.9"}, 1},
		{"kvnode_http_requests_total", map[string]string{"route": "/kv/v1/:region/:keys", "method": "GET", "code": "200"}, 2},
		{"kvnode_http_requests_total", map[string]string{"route": "/kv/v1/:region/:keys", "method": "PUT", "code": "503"}, 1},
		{"kvnode_http_requests_total", map[string]string{"route": metrics.Unmatched, "method": "other", "code": "404"}, 1},
		{"kvnode_http_request_duration_seconds_count", map[string]string{"route": "/kv/v1/:region/:keys", "method": "GET"}, 2},
		{"kvnode_login_failures_total", map[string]string{"reason": "throttled"}, 1},
		{"kvnode_login_failures_total", map[string]string{"reason": "bad_credentials"}, 0},
		{"kvnode_login_failures_total", map[string]string{"reason": "unknown_certificate_user"}, 2},
		{"kvnode_raft_state", map[string]string{"group": "0", "state": "leader"}, 1},
		{"kvnode_raft_state", map[string]string{"group": "0", "state": "follower"}, 0},
		{"kvnode_raft_state", map[string]string{"group": "2", "state": "follower"}, 1},
		{"kvnode_raft_state", map[string]string{"group": "2", "state": "leader"}, 0},
		{"kvnode_raft_term", map[string]string{"group": "2"}, 5},
		{"kvnode_raft_commit_index", map[string]string{"group": "0"}, 40},
		{"kvnode_raft_applied_index", map[string]string{"group": "0"}, 39},
		{"kvnode_raft_last_log_index", map[string]string{"group": "0"}, 41},
		{"kvnode_raft_voters", map[string]string{"group": "2"}, 2},
		{"kvnode_raft_nonvoters", map[string]string{"group": "2"}, 1},
		{"kvnode_raft_leader_changes_total", map[string]string{"group": "2"}, 1},
		{"kvnode_raft_log_store_duration_seconds_count", map[string]string{"group": "2"}, 1},
		{"kvnode_raft_apply_duration_seconds_count", map[string]string{"group": "2"}, 1},
		{"kvnode_raft_commit_duration_seconds_count", map[string]string{"group": "2"}, 1},
		{"kvnode_raft_snapshots_total", map[string]string{"group": "2", "outcome": "ok"}, 1},
		{"kvnode_raft_snapshots_total", map[string]string{"group": "2", "outcome": "error"}, 1},
		{"kvnode_raft_snapshot_duration_seconds_count", map[string]string{"group": "2"}, 1},
		{"kvnode_raft_snapshot_size_bytes", map[string]string{"group": "2"}, 12345},
		{"kvnode_raft_snapshot_restores_total", map[string]string{"group": "2"}, 1},
		{"kvnode_region_entries", map[string]string{"region": "orders", "group": "0"}, 12},
		{"kvnode_region_size_bytes", map[string]string{"region": "events", "group": "2"}, 99},
		{"kvnode_gossip_members", map[string]string{"state": "alive"}, 2},
		{"kvnode_gossip_members", map[string]string{"state": "failed"}, 1},
		{"kvnode_gossip_members", map[string]string{"state": "left"}, 0},
		{"kvnode_gossip_health_score", nil, 4},
		{"kvnode_query_duration_seconds_count", nil, 2},
		{"kvnode_query_errors_total", nil, 1},
		{"kvnode_query_result_rows_sum", nil, 7},
		{"kvnode_function_executions_total", map[string]string{"id": "RegionSize", "outcome": "ok"}, 1},
		{"kvnode_function_executions_total", map[string]string{"id": "RegionSize", "outcome": "timeout"}, 1},
		{"kvnode_function_duration_seconds_count", map[string]string{"id": "RegionSize"}, 2},
		{"kvnode_watchers", nil, 1},
		{"kvnode_watch_events_sent_total", nil, 12},
		{"kvnode_watch_disconnects_total", map[string]string{"reason": "slow"}, 1},
		{"kvnode_watch_disconnects_total", map[string]string{"reason": "shutdown"}, 0},
	}
	for _, w := range want {
		if v, ok := s.Get(w.name, w.labels); !ok || v != w.value {
			t.Errorf("%s%v = %v (found: %v), want %v", w.name, w.labels, v, ok, w.value)
		}
	}
	if free, ok := s.Get("kvnode_data_dir_free_bytes", nil); !ok || free <= 0 {
		t.Errorf("kvnode_data_dir_free_bytes = %v (found: %v), want the free space of a temp dir", free, ok)
	}
	if size, _ := s.Get("kvnode_data_dir_filesystem_size_bytes", nil); size < s.Sum("kvnode_data_dir_free_bytes", nil) {
		t.Errorf("file system size %v < free space", size)
	}
	for _, name := range []string{"go_goroutines", "go_memstats_heap_alloc_bytes", "process_cpu_seconds_total", "process_resident_memory_bytes"} {
		if len(s.Find(name, nil)) == 0 {
			t.Errorf("no %s: Go runtime and process metrics are missing", name)
		}
	}
}

// fed is a registry every instrument of which has been fed.
func fed(t *testing.T) *metrics.Registry {
	r := metrics.New(metrics.Options{Version: "v9.9.9", Sources: testSources(t.TempDir())})
	h := r.HTTP()
	h.ObserveRequest("/kv/v1/:region/:keys", "GET", 200, 3*time.Millisecond)
	h.ObserveRequest("/kv/v1/:region/:keys", "GET", 200, 5*time.Millisecond)
	h.ObserveRequest("/kv/v1/:region/:keys", "PUT", 503, time.Second)
	h.ObserveRequest("", "BREW", 404, time.Millisecond)
	h.LoginFailed("throttled")
	h.LoginFailed("unknown_certificate_user")
	h.LoginFailed("unknown_certificate_user")
	g := r.Group(2)
	g.LeaderChanged()
	g.LogStored(time.Millisecond)
	g.Applied(time.Millisecond)
	g.Committed(2 * time.Millisecond)
	g.SnapshotWritten(time.Second, 12345)
	g.SnapshotFailed()
	g.Restored()
	if r.Group(2) != g {
		t.Error("Group(2) twice gave two sets of instruments")
	}
	r.QueryDone(10*time.Millisecond, 7, nil)
	r.QueryDone(time.Second, 0, errors.New("boom"))
	r.FunctionDone("RegionSize", metrics.FunctionOK, time.Millisecond)
	r.FunctionDone("RegionSize", metrics.FunctionTimeout, time.Second)
	r.Reloaded("tls", nil)
	r.Reloaded("security", nil)
	r.Reloaded("security", errors.New("bad file"))
	r.PeerRefused("name")
	w := r.Watch()
	w.WatchOpened()
	w.WatchOpened()
	w.EventsSent(5)
	w.EventsSent(7)
	w.WatchClosed("slow")
	return r
}

// TestDocsListEveryMetric: docs/metrics.md has a row for each of
// kvnode's metrics, and no row for one that does not exist.
func TestDocsListEveryMetric(t *testing.T) {
	doc, err := os.ReadFile("../docs/metrics.md")
	if err != nil {
		t.Fatal(err)
	}
	documented := map[string]bool{}
	for _, line := range strings.Split(string(doc), "\n") {
		if rest, ok := strings.CutPrefix(line, "| `kvnode_"); ok {
			name, _, _ := strings.Cut(rest, "`")
			documented["kvnode_"+name] = true
		}
	}
	exposed := map[string]bool{}
	for _, line := range strings.Split(scrape(t, fed(t)), "\n") {
		if rest, ok := strings.CutPrefix(line, "# TYPE kvnode_"); ok {
			name, _, _ := strings.Cut(rest, " ")
			exposed["kvnode_"+name] = true
		}
	}
	for name := range exposed {
		if !documented[name] {
			t.Errorf("%s has no row in docs/metrics.md", name)
		}
	}
	for name := range documented {
		if !exposed[name] {
			t.Errorf("docs/metrics.md lists %s, which is not exposed", name)
		}
	}
	if len(exposed) < 30 {
		t.Errorf("only %d metrics exposed", len(exposed))
	}
}

// TestRegistriesAreTheNodes: two registries (two nodes in one process)
// each have their own series, and the default global registry has none.
func TestRegistriesAreTheNodes(t *testing.T) {
	a := metrics.New(metrics.Options{})
	b := metrics.New(metrics.Options{})
	a.HTTP().ObserveRequest("/livez", "GET", 200, time.Millisecond)
	sa, sb := promtest.Parse(t, scrape(t, a)), promtest.Parse(t, scrape(t, b))
	if v, _ := sa.Get("kvnode_http_requests_total", map[string]string{"route": "/livez"}); v != 1 {
		t.Errorf("a counted %v requests, want 1", v)
	}
	if n := len(sb.Find("kvnode_http_requests_total", nil)); n != 0 {
		t.Errorf("b has %d request series of a's", n)
	}
	fams, err := prometheus.DefaultGatherer.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range fams {
		if strings.HasPrefix(f.GetName(), "kvnode_") {
			t.Errorf("the global default registry has %s", f.GetName())
		}
	}
}

// TestHotPathsDoNotAllocate: once a route's series exist, counting a
// request allocates nothing, nor does a Raft group's instrument.
func TestHotPathsDoNotAllocate(t *testing.T) {
	r := metrics.New(metrics.Options{})
	h := r.HTTP()
	h.ObserveRequest("/kv/v1/:region/:keys", "PUT", 200, time.Millisecond)
	if n := testing.AllocsPerRun(1000, func() { h.ObserveRequest("/kv/v1/:region/:keys", "PUT", 200, time.Millisecond) }); n != 0 {
		t.Errorf("ObserveRequest allocates %v times per request", n)
	}
	g := r.Group(1)
	if n := testing.AllocsPerRun(1000, func() {
		g.LogStored(time.Millisecond)
		g.Applied(time.Millisecond)
		g.Committed(time.Millisecond)
	}); n != 0 {
		t.Errorf("a group's instruments allocate %v times", n)
	}
}

func BenchmarkObserveRequest(b *testing.B) {
	h := metrics.New(metrics.Options{}).HTTP()
	routes := []string{"/kv/v1/:region/:keys", "/kv/v1/:region", "/livez", "/kv/v1/queries/adhoc"}
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		i := 0
		for pb.Next() {
			h.ObserveRequest(routes[i%len(routes)], "GET", 200, time.Millisecond)
			i++
		}
	})
}

// TestReloadMetrics: loads count per file, a refused file counts as a
// failure without touching the time of the last success, and refused
// peer certificates count by reason, both reasons present from the start.
func TestReloadMetrics(t *testing.T) {
	r := metrics.New(metrics.Options{})
	s := promtest.Parse(t, scrape(t, r))
	for _, reason := range []string{"ca", "name"} {
		if v, found := s.Get("kvnode_peer_certificates_refused_total", map[string]string{"reason": reason}); !found || v != 0 {
			t.Errorf("kvnode_peer_certificates_refused_total{reason=%s} at start = %v (found %v), want 0", reason, v, found)
		}
	}
	start := float64(time.Now().Unix())
	r.Reloaded("tls", nil)
	r.Reloaded("tls", nil)
	r.Reloaded("tls", errors.New("key does not match"))
	r.PeerRefused("name")
	r.PeerRefused("name")
	r.PeerRefused("ca")
	r.ClientRefused()
	body := scrape(t, r)
	promtest.Check(t, body)
	s = promtest.Parse(t, body)
	for _, c := range []struct {
		name  string
		match map[string]string
		want  float64
	}{
		{"kvnode_reload_successes_total", map[string]string{"file": "tls"}, 2},
		{"kvnode_reload_failures_total", map[string]string{"file": "tls"}, 1},
		{"kvnode_peer_certificates_refused_total", map[string]string{"reason": "name"}, 2},
		{"kvnode_peer_certificates_refused_total", map[string]string{"reason": "ca"}, 1},
		{"kvnode_client_certificates_refused_total", nil, 1},
	} {
		if v, _ := s.Get(c.name, c.match); v != c.want {
			t.Errorf("%s%v = %v, want %v", c.name, c.match, v, c.want)
		}
	}
	if v, _ := s.Get("kvnode_reload_last_success_timestamp_seconds", map[string]string{"file": "tls"}); v < start || v > float64(time.Now().Unix()+1) {
		t.Errorf("kvnode_reload_last_success_timestamp_seconds{file=tls} = %v, want the time of the last load (after %v)", v, start)
	}
}
