package e2e

import (
	"bufio"
	"bytes"
	"fmt"
	"net/http"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kvnode/kvnode/internal/waitfor"
)

// TestRollingRestartProcesses is the rolling restart an operator does:
// three kvnode processes serve a replicated and a partitioned region
// under write load; each in turn gets SIGTERM, is started again with the
// same flags and data dir once it has exited, and the next one waits
// until it is ready and back to full replication (every group's applied
// index on it has reached what the others had applied). Clients
// send each write to the members in turn and to the next member only when
// one cannot be reached. No write may fail, every acknowledged write must
// be there, no election may be started by a timeout; the write latency
// (p50, p99, max) is logged.
func TestRollingRestartProcesses(t *testing.T) {
	if testing.Short() {
		t.Skip("runs and restarts three kvnode processes under load")
	}
	pc := startCluster(t, clusterSpec{n: 3, regions: "rep:REPLICATE,par:PARTITION"})
	pc.leader(30 * time.Second)
	waitReady(t, pc, 30*time.Second)
	urls := make([]string, len(pc.procs))
	for i, p := range pc.procs {
		urls[i] = p.httpURL
	}

	const clients = 4
	stop := make(chan struct{})
	var (
		mu        sync.Mutex
		acked     = map[string]string{}
		failures  []string
		latencies []time.Duration
		wg        sync.WaitGroup
	)
	for c := range clients {
		wg.Go(func() {
			for i := 0; i < 50000; i++ {
				select {
				case <-stop:
					return
				default:
				}
				reg := []string{"rep", "par"}[i%2]
				key := fmt.Sprintf("c%d-%d", c, i)
				val := fmt.Sprintf(`{"k":%q}`, key)
				start := time.Now()
				r, err := putNext(urls, (c+i)%len(urls), reg, key, val)
				took := time.Since(start)
				mu.Lock()
				switch {
				case err != nil:
					failures = append(failures, fmt.Sprintf("PUT %s/%s: %v", reg, key, err))
				case r.status != http.StatusOK:
					failures = append(failures, fmt.Sprintf("PUT %s/%s = %d %s", reg, key, r.status, r.body))
				default:
					acked[reg+"/"+key] = val
					latencies = append(latencies, took)
				}
				mu.Unlock()
			}
		})
	}
	time.Sleep(2 * time.Second)
	logStart := map[string]int64{}
	for _, p := range pc.procs {
		if fi, err := os.Stat(p.logPath); err == nil {
			logStart[p.name] = fi.Size()
		}
	}
	began := time.Now()
	for _, p := range pc.procs {
		took, err := pc.terminate(p, 30*time.Second)
		if err != nil {
			t.Fatalf("%s exited with %v after SIGTERM, want status 0", p.name, err)
		}
		down := time.Now()
		// Down a while, as a replaced container is: gossip suspects it
		// and the leaders' heartbeats to it back off.
		time.Sleep(downFor)
		pc.start(p)
		target := appliedElsewhere(t, pc, p)
		waitfor.Cond(t, 30*time.Second, p.name+" to be ready", func() bool {
			r, err := tryDo("GET", p.httpURL+"/readyz", "", "")
			return err == nil && r.status == 200
		})
		ready := time.Since(down)
		waitfor.Cond(t, 30*time.Second, p.name+" to be back to full replication", func() bool {
			applied, err := gauges(p, "kvnode_raft_applied_index")
			if err != nil {
				return false
			}
			for g, idx := range target {
				if applied[g] < idx {
					return false
				}
			}
			return len(applied) >= len(target)
		})
		t.Logf("%s: exited %v after SIGTERM; ready %v and fully replicated %v after it exited",
			p.name, took.Round(time.Millisecond), ready.Round(time.Millisecond), time.Since(down).Round(time.Millisecond))
		time.Sleep(2 * time.Second)
	}
	rolling := time.Since(began)
	close(stop)
	wg.Wait()

	mu.Lock()
	defer mu.Unlock()
	if len(failures) > 0 {
		t.Errorf("%d writes failed during the rolling restart; first ones:\n%s", len(failures), strings.Join(failures[:min(10, len(failures))], "\n"))
	}
	if len(latencies) == 0 {
		t.Fatal("no write acknowledged")
	}
	slices.Sort(latencies)
	q := func(f float64) time.Duration {
		return latencies[min(len(latencies)-1, int(f*float64(len(latencies))))].Round(time.Microsecond)
	}
	t.Logf("rolling restart of 3 processes: %v; %d writes acknowledged (%d clients); latency p50 %v, p99 %v, p99.9 %v, max %v",
		rolling.Round(time.Millisecond), len(latencies), clients, q(0.5), q(0.99), q(0.999), latencies[len(latencies)-1].Round(time.Microsecond))

	for _, reg := range []string{"rep", "par"} {
		r := do(t, "GET", urls[0]+"/kv/v1/"+reg+"?limit=ALL", "", "")
		var raw map[string][]any
		jsonBody(t, r, &raw)
		have := map[string]bool{}
		for _, v := range raw[reg] {
			if m, ok := v.(map[string]any); ok {
				have[fmt.Sprint(m["k"])] = true
			}
		}
		for k := range acked {
			if key, ok := strings.CutPrefix(k, reg+"/"); ok && !have[key] {
				t.Errorf("acknowledged write %s is missing", k)
			}
		}
	}

	// No election started by a timeout since the load began: pre-votes
	// that succeed are exactly those (a handover's candidate skips them).
	for _, p := range pc.procs {
		data, err := os.ReadFile(p.logPath)
		if err != nil {
			t.Fatal(err)
		}
		after := data[min(int64(len(data)), logStart[p.name]):]
		sc := bufio.NewScanner(bytes.NewReader(after))
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		for sc.Scan() {
			if strings.Contains(sc.Text(), "pre-vote successful") {
				t.Errorf("%s: an election started by a timeout: %s", p.name, sc.Text())
			}
		}
		t.Logf("%s: %d leadership handovers logged", p.name, bytes.Count(after, []byte(`msg="handed over leadership"`)))
	}
}

// downFor is how long a member stays down in TestRollingRestartProcesses.
const downFor = 1500 * time.Millisecond

// putNext sends a PUT to urls[first], and to the next member while one
// cannot be reached (a plain PUT is safe to send again).
func putNext(urls []string, first int, reg, key, val string) (response, error) {
	var last error
	for attempt := range 2 * len(urls) {
		r, err := tryDo("PUT", urls[(first+attempt)%len(urls)]+"/kv/v1/"+reg+"/"+key, "application/json", val)
		if err == nil {
			return r, nil
		}
		last = err
		if attempt >= len(urls)-1 {
			time.Sleep(50 * time.Millisecond)
		}
	}
	return response{}, last
}

// appliedElsewhere is, for every group, the highest applied index the
// running members other than p report. Applied, not committed: a new
// leader's no-op entry is committed but never applied to the state
// machine, so an idle group's applied index stays below its commit index.
func appliedElsewhere(t *testing.T, pc *procCluster, p *proc) map[string]float64 {
	t.Helper()
	out := map[string]float64{}
	for _, o := range pc.running() {
		if o == p {
			continue
		}
		ci, err := gauges(o, "kvnode_raft_applied_index")
		if err != nil {
			t.Fatalf("metrics of %s: %v", o.name, err)
		}
		for g, v := range ci {
			out[g] = max(out[g], v)
		}
	}
	return out
}

var groupGauge = regexp.MustCompile(`^(\w+)\{group="(\d+)"\} (\S+)$`)

// gauges reads a per-group gauge from p's /metrics.
func gauges(p *proc, name string) (map[string]float64, error) {
	r, err := tryDo("GET", p.httpURL+"/metrics", "", "")
	if err != nil {
		return nil, err
	}
	if r.status != 200 {
		return nil, fmt.Errorf("/metrics: %d", r.status)
	}
	out := map[string]float64{}
	for line := range strings.SplitSeq(string(r.body), "\n") {
		m := groupGauge.FindStringSubmatch(line)
		if m == nil || m[1] != name {
			continue
		}
		v, err := strconv.ParseFloat(m[3], 64)
		if err != nil {
			return nil, err
		}
		out[m[2]] = v
	}
	return out, nil
}
