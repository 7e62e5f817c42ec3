package node_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"regexp"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/kvnode/kvnode/internal/logtap"
	"github.com/kvnode/kvnode/internal/ports"
	"github.com/kvnode/kvnode/internal/waitfor"
	"github.com/kvnode/kvnode/node"
	"github.com/kvnode/kvnode/node/nodetest"
)

// TestRollingRestartUnderLoad restarts each member of a 3-member cluster in
// turn (Shutdown, as SIGTERM does, then Start again on the same data dir
// and ports) while clients write to a replicated and a partitioned region,
// each request to the members in turn. A client that cannot reach a member
// (it is down, or closed the connection before answering) sends the write
// to the next member, as the CLI does; any HTTP error answer is a failed
// write. It asserts what an operator would check after a rolling restart:
// no write failed, every acknowledged write is there, every member is a
// voter of every group again, and no group held an election that was not
// a leadership handover (no follower's election timeout fired and won a
// pre-vote). It logs the longest and the 99th-percentile write latency.
func TestRollingRestartUnderLoad(t *testing.T) {
	if testing.Short() {
		t.Skip("starts and restarts a 3-member cluster under load")
	}
	names := []string{"a", "b", "c"}
	ps, err := ports.Stable(3 * len(names))
	if err != nil {
		t.Fatal(err)
	}
	tap := &logtap.Tap{}
	ip := nodetest.New(t)
	ip.Logger = func(name string) *slog.Logger { return tap.Logger(name, nodetest.Logger(name).Handler()) }
	ip.Tune = func(name string, cfg *node.Config) {
		i := slices.Index(names, name)
		cfg.HTTPAddr = fmt.Sprintf("127.0.0.1:%d", ps[3*i])
		cfg.InternalAddr = fmt.Sprintf("127.0.0.1:%d", ps[3*i+1])
		cfg.GossipAddr = fmt.Sprintf("127.0.0.1:%d", ps[3*i+2])
	}
	for _, name := range names {
		ip.Start(name, 3)
	}
	leader := ip.Leader()
	nodetest.MustCall(t, leader, "POST", "/management/v1/regions", `{"name":"rep","type":"REPLICATE"}`, 201)
	nodetest.MustCall(t, leader, "POST", "/management/v1/regions", `{"name":"par","type":"PARTITION"}`, 201)
	for _, name := range names {
		waitReady(t, ip, name)
	}
	urls := make([]string, len(names))
	for i, name := range names {
		urls[i] = "http://" + ip.Nodes[name].HTTPAddr()
	}

	// The load: a few clients, each writing new keys in a loop until told
	// to stop (bounded by count and time).
	const clients, maxWrites = 4, 100000
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	stop := make(chan struct{})
	var (
		mu        sync.Mutex
		acked     = map[string]string{} // region/key → value
		failures  []string
		latencies []time.Duration
		slowest   sample // the slowest acknowledged write
		wg        sync.WaitGroup
		writes    atomic.Int64
	)
	for c := range clients {
		wg.Go(func() {
			hc := &http.Client{Timeout: 20 * time.Second}
			for i := 0; i < maxWrites/clients; i++ {
				select {
				case <-stop:
					return
				default:
				}
				reg := []string{"rep", "par"}[i%2]
				key := fmt.Sprintf("c%d-%d", c, i)
				val := fmt.Sprintf(`{"k":%q}`, key)
				start := time.Now()
				status, body, via, err := putToAny(ctx, hc, urls, (c+i)%len(urls), reg, key, val)
				took := time.Since(start)
				writes.Add(1)
				mu.Lock()
				switch {
				case err != nil:
					failures = append(failures, fmt.Sprintf("PUT %s/%s: %v", reg, key, err))
				case status != http.StatusOK:
					failures = append(failures, fmt.Sprintf("PUT %s/%s = %d %s", reg, key, status, body))
				default:
					acked[reg+"/"+key] = val
					latencies = append(latencies, took)
					if took > slowest.took {
						slowest = sample{took, start, names[via]}
					}
				}
				mu.Unlock()
			}
		})
	}

	waitfor.Cond(t, 10*time.Second, "the load to get going", func() bool { return writes.Load() > 200 })
	markWon, markPreVote := len(tap.Matching("election won")), len(tap.Matching("pre-vote successful"))
	restartStart := time.Now()
	type restart struct {
		name  string
		back  time.Time     // when Start was called
		ready time.Duration // from Start to /readyz 200
	}
	var restarts []restart
	for _, name := range names {
		began := time.Now()
		ip.Stop(name, true)
		stopped := time.Since(began)
		// Down for a while, as a process being replaced is: long enough
		// for gossip to suspect it and for the leaders' heartbeats to it
		// to back off, so that it comes back to groups that moved on.
		time.Sleep(1500 * time.Millisecond)
		back := time.Now()
		ip.Start(name, 3)
		waitReady(t, ip, name)
		restarts = append(restarts, restart{name, back, time.Since(back)})
		waitFullyReplicated(t, ip, name)
		t.Logf("%s: shutdown took %v, back and fully replicated %v after the shutdown began", name, stopped.Round(time.Millisecond), time.Since(began).Round(time.Millisecond))
		// Load on the whole cluster before the next member, long enough
		// for the partition groups' leaders to move back to their
		// preferred leader.
		time.Sleep(2 * time.Second)
	}
	restartTook := time.Since(restartStart)
	close(stop)
	wg.Wait()

	mu.Lock()
	defer mu.Unlock()
	if len(failures) > 0 {
		t.Errorf("%d of %d writes failed during the rolling restart; first ones:\n%s", len(failures), writes.Load(), strings.Join(failures[:min(len(failures), 10)], "\n"))
	}
	slices.Sort(latencies)
	if len(latencies) == 0 {
		t.Fatal("no write was acknowledged")
	}
	p := func(q float64) time.Duration { return latencies[min(len(latencies)-1, int(q*float64(len(latencies))))] }
	t.Logf("rolling restart of 3 members took %v; %d writes acknowledged by %d clients; write latency p50 %v, p99 %v, p99.9 %v, max %v",
		restartTook.Round(time.Millisecond), len(latencies), clients, p(0.50).Round(time.Microsecond), p(0.99).Round(time.Microsecond),
		p(0.999).Round(time.Microsecond), latencies[len(latencies)-1].Round(time.Microsecond))
	for _, r := range restarts {
		if slowest.at.After(r.back.Add(-time.Second)) && slowest.at.Before(r.back.Add(3*time.Second)) {
			t.Logf("the slowest write (%v) was answered by %s, sent %v after %s started again (%s was ready %v after it started)",
				slowest.took.Round(time.Millisecond), slowest.via, slowest.at.Sub(r.back).Round(time.Millisecond), r.name, r.name, r.ready.Round(time.Millisecond))
		}
	}

	// Every acknowledged write is there, read on every member.
	for _, name := range names {
		for _, reg := range []string{"rep", "par"} {
			r := nodetest.MustCall(t, ip.Nodes[name], "GET", "/kv/v1/"+reg+"?limit=ALL", "", 200)
			var got map[string][]json.RawMessage
			if err := json.Unmarshal([]byte(r.Body), &got); err != nil {
				t.Fatalf("%s: listing %s: %v", name, reg, err)
			}
			have := map[string]bool{}
			for _, v := range got[reg] {
				have[string(v)] = true
			}
			missing := 0
			for k, v := range acked {
				if strings.HasPrefix(k, reg+"/") && !have[v] {
					missing++
				}
			}
			if missing > 0 {
				t.Errorf("%s: %d acknowledged writes to %s are missing", name, missing, reg)
			}
		}
	}

	// No election was started by a timeout: every election won since the
	// load began is a handover (ours at shutdown, or the partition
	// leaders' move back to a restarted preferred leader), and no
	// follower's timeout won a pre-vote.
	if lines := tap.Matching("pre-vote successful")[markPreVote:]; len(lines) > 0 {
		t.Errorf("elections started by a timeout:\n%s", strings.Join(lines, "\n"))
	}
	won := tap.Matching("election won")[markWon:]
	handed := tap.Matching("handed over leadership", "group=")
	moved := tap.Matching("transferring partition group leadership")
	for _, l := range won {
		who, g := strings.SplitN(l, ":", 2)[0], field(l, "group")
		explained := false
		for _, h := range handed {
			if field(h, "group") == g && field(h, "to") == who {
				explained = true
			}
		}
		for _, m := range moved {
			if field(m, "group") == g && field(m, "to") == who {
				explained = true
			}
		}
		if !explained {
			t.Errorf("an election no handover explains: %s", l)
		}
	}
	t.Logf("%d elections won during the restarts (%d handovers at shutdown); %d heartbeat timeouts on restarted followers",
		len(won), len(handed), len(tap.Matching("heartbeat timeout reached")))
	for _, l := range tap.Matching("handed over the leadership of this member's groups") {
		t.Logf("handover at shutdown: %s", l)
	}
	if len(handed) == 0 {
		t.Errorf("no leadership was handed over: the restarted members led nothing?")
	}
}

// sample is one acknowledged write: how long it took, when it was sent
// and which member answered.
type sample struct {
	took time.Duration
	at   time.Time
	via  string
}

// putToAny sends PUT /kv/v1/{reg}/{key} to urls[first], and to the next
// member while one cannot be reached or drops the connection before it
// answers (it is stopping; a plain PUT is safe to send again). The answer
// of the first member that answers is returned, with its index in urls.
func putToAny(ctx context.Context, hc *http.Client, urls []string, first int, reg, key, val string) (int, string, int, error) {
	var last error
	for attempt := range 2 * len(urls) {
		via := (first + attempt) % len(urls)
		u := urls[via] + "/kv/v1/" + reg + "/" + key
		req, err := http.NewRequestWithContext(ctx, http.MethodPut, u, strings.NewReader(val))
		if err != nil {
			return 0, "", via, err
		}
		req.Header.Set("Content-Type", "application/json")
		resp, err := hc.Do(req)
		if err != nil {
			if ctx.Err() != nil || errors.Is(err, context.DeadlineExceeded) {
				return 0, "", via, err
			}
			last = err
			if attempt >= len(urls)-1 {
				time.Sleep(50 * time.Millisecond)
			}
			continue
		}
		body, _ := io.ReadAll(resp.Body)
		_ = resp.Body.Close()
		return resp.StatusCode, string(body), via, nil
	}
	return 0, "", -1, fmt.Errorf("no member reachable: %w", last)
}

// waitReady waits until the member answers /readyz with 200.
func waitReady(t *testing.T, ip *nodetest.Cluster, name string) {
	t.Helper()
	n := ip.Nodes[name]
	waitfor.Cond(t, 30*time.Second, name+" to be ready", func() bool {
		return nodetest.Call(t, n, "GET", "/readyz", "").Status == 200
	})
}

// waitFullyReplicated waits until the member is a voter of every group it
// hosts, each group has a leader, and its copy has applied what the
// group's leader had applied when the wait began (applied, not committed:
// a new leader's no-op entry is committed but never reaches the state
// machine, so an idle group's applied index stays below its commit index).
func waitFullyReplicated(t *testing.T, ip *nodetest.Cluster, name string) {
	t.Helper()
	n := ip.Nodes[name]
	target := map[uint64]uint64{}
	for _, other := range ip.Nodes {
		for _, gs := range other.Store().Status().Groups {
			if gs.State == "Leader" {
				target[gs.ID] = gs.AppliedIndex
			}
		}
	}
	waitfor.Cond(t, 30*time.Second, name+" to catch up as a voter of every group", func() bool {
		groups := n.Store().Status().Groups
		if len(groups) == 0 {
			return false
		}
		for _, gs := range groups {
			if gs.Leader == "" || !slices.Contains(gs.Voters, name) || len(gs.Voters) != len(ip.Nodes) || gs.AppliedIndex < target[gs.ID] {
				return false
			}
		}
		return true
	})
}

var fieldRE = regexp.MustCompile(`(\w+)=(\S+)`)

// field is the value of key=value in a logged line, "" when absent (the
// first occurrence: a line's own attributes come after the logger's).
func field(line, key string) string {
	for _, m := range fieldRE.FindAllStringSubmatch(line, -1) {
		if m[1] == key {
			return m[2]
		}
	}
	return ""
}
