package e2e

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kvnode/kvnode/internal/waitfor"
)

// TestRebalanceUnderLoad is issue 29's scale-out on real processes: a
// three-member cluster under write load (single-key puts and two-key puts
// that span partition groups) gets three more members, and its partition
// groups are grown online from 4 to 6 (PATCH /management/v1/partitions),
// which moves buckets between groups while the writes go on. The
// operation ends in SUCCESS with the buckets even; no write fails; every
// acknowledged write is read back, as the last value acknowledged for its
// key, through every one of the six members; every two-key write is
// there whole (both keys hold the same version); listings and COUNT see
// every key once.
func TestRebalanceUnderLoad(t *testing.T) {
	if testing.Short() {
		t.Skip("runs six kvnode processes under load")
	}
	pc := startCluster(t, clusterSpec{n: 3, regions: "rep:REPLICATE,par:PARTITION", extra: []string{"--request-timeout", "30s"}})
	pc.leader(60 * time.Second)
	waitReady(t, pc, 60*time.Second)

	// A watch of the region, open from before the members join to after
	// the rebalance, through the first member (resumed with its last id
	// on another one if its stream ends).
	wt := startWatcher(pc, "par")
	waitfor.Cond(t, 30*time.Second, "the watch to be ready", wt.isReady)
	w := startLedger(pc)
	time.Sleep(2 * time.Second) // load on the three first

	// Three more members join the first ones' gossip.
	joins := joinList(pc)
	for i := 3; i < 6; i++ {
		addMember(t, pc, fmt.Sprintf("node%d", i), joins)
	}
	waitReady(t, pc, 90*time.Second)
	waitfor.Cond(t, 60*time.Second, "six voters or non-voters in the control group", func() bool {
		v, err := pc.view(pc.procs[0])
		if err != nil {
			return false
		}
		n := 0
		for _, m := range v.Members {
			if m.Suffrage != "" {
				n++
			}
		}
		return n == 6
	})

	r := do(t, "PATCH", pc.procs[4].httpURL+"/management/v1/partitions", "application/json", `{"groups":6}`)
	if r.status != 202 {
		t.Fatalf("PATCH partitions: %d %s", r.status, r.body)
	}
	var started struct {
		OperationID string `json:"operationId"`
		Links       struct {
			Self string `json:"self"`
		} `json:"links"`
	}
	jsonBody(t, r, &started)
	var op struct {
		Status string `json:"operationStatus"`
		Result struct {
			Message string `json:"statusMessage"`
			Buckets int    `json:"bucketTransfersCompleted"`
			Millis  int64  `json:"timeInMilliseconds"`
		} `json:"result"`
	}
	waitfor.Cond(t, 5*time.Minute, "the rebalance to end", func() bool {
		rr, err := tryDo("GET", pc.procs[1].httpURL+started.Links.Self, "", "")
		if err != nil || rr.status != 200 {
			return false
		}
		_ = json.Unmarshal(rr.body, &op)
		return op.Status != "IN_PROGRESS"
	})
	if op.Status != "SUCCESS" || op.Result.Buckets == 0 {
		t.Fatalf("the rebalance ended %s: %+v", op.Status, op.Result)
	}
	t.Logf("rebalance: %d buckets moved in %d ms", op.Result.Buckets, op.Result.Millis)
	time.Sleep(2 * time.Second) // load after it too
	w.stop()

	var parts struct {
		PartitionGroups int `json:"partitionGroups"`
		Groups          []struct {
			Buckets []int `json:"buckets"`
		} `json:"groups"`
	}
	jsonBody(t, do(t, "GET", pc.procs[5].httpURL+"/management/v1/partitions", "", ""), &parts)
	if parts.PartitionGroups != 6 {
		t.Errorf("partition groups after the rebalance: %d, want 6", parts.PartitionGroups)
	}
	for i, g := range parts.Groups {
		if len(g.Buckets) < 18 || len(g.Buckets) > 19 {
			t.Errorf("group %d owns %d buckets, want 18 or 19", i+1, len(g.Buckets))
		}
	}

	// The watch delivered every acknowledged write exactly once, across
	// the moves of its buckets into groups added while it was open.
	waitfor.Cond(t, 60*time.Second, "the watch to deliver every acknowledged write", func() bool {
		return wt.missing(w.acked) == 0
	})
	wt.stop()
	if d := wt.duplicates(); len(d) > 0 {
		t.Errorf("the watch delivered %d writes more than once, e.g. %v", len(d), d[:min(5, len(d))])
	}
	if len(wt.errs) > 0 {
		t.Errorf("the watch: %v", wt.errs)
	}
	t.Logf("the watch delivered %d events (%d reconnects) for %d acknowledged writes", wt.events, wt.reconnects, len(w.acked))

	if len(w.failures) > 0 {
		t.Errorf("%d writes failed during the rebalance, first: %v", len(w.failures), w.failures[:min(5, len(w.failures))])
	}
	t.Logf("%d single-key and %d two-key writes acknowledged", len(w.last), w.pairs)
	for _, p := range pc.procs {
		w.check(t, p)
	}
}

// joinList is the gossip addresses of pc's processes, for --join.
func joinList(pc *procCluster) string {
	var out []string
	for _, p := range pc.procs {
		for i, a := range p.args {
			if a == "--gossip-addr" {
				out = append(out, p.args[i+1])
			}
		}
	}
	return strings.Join(out, ",")
}

// addMember starts one more process that joins the cluster.
func addMember(t *testing.T, pc *procCluster, name, joins string) *proc {
	t.Helper()
	ports := freePorts(t, 3)
	dir := filepath.Dir(pc.procs[0].dataDir)
	p := &proc{
		name:    name,
		dataDir: filepath.Join(dir, name),
		logPath: filepath.Join(dir, name+".log"),
		httpURL: fmt.Sprintf("http://127.0.0.1:%d", ports[0]),
		args: []string{
			"--name", name, "--data-dir", filepath.Join(dir, name),
			"--http-addr", fmt.Sprintf("127.0.0.1:%d", ports[0]),
			"--internal-addr", fmt.Sprintf("127.0.0.1:%d", ports[1]),
			"--gossip-addr", fmt.Sprintf("127.0.0.1:%d", ports[2]),
			"--join", joins, "--log-level", "debug", "--request-timeout", "30s",
		},
	}
	pc.procs = append(pc.procs, p)
	pc.start(p)
	return p
}

// ledger writes through the members in turn (bounded: 4 clients, at most
// 20,000 writes each) and keeps what was acknowledged.
type ledger struct {
	done     chan struct{}
	wg       sync.WaitGroup
	mu       sync.Mutex
	last     map[string]int // key → last acknowledged version
	acked    []string       // key=value of every acknowledged write
	pairs    int
	failures []string
}

func startLedger(pc *procCluster) *ledger {
	l := &ledger{done: make(chan struct{}), last: map[string]int{}}
	urls := make([]string, len(pc.procs))
	for i, p := range pc.procs {
		urls[i] = p.httpURL
	}
	for c := range 4 {
		l.wg.Go(func() {
			for i := 0; i < 20000; i++ {
				select {
				case <-l.done:
					return
				default:
				}
				base := urls[(c+i)%len(urls)]
				if i%5 == 4 {
					// Two keys, one version: kept whole or not at all.
					a, b := fmt.Sprintf("pa%d", c), fmt.Sprintf("pb%d", c)
					body := fmt.Sprintf(`[{"v":%d},{"v":%d}]`, i, i)
					l.record([]string{a, b}, i, base+"/kv/v1/par/"+a+","+b, body)
					continue
				}
				k := fmt.Sprintf("k%d-%d", c, i%400)
				l.record([]string{k}, i, base+"/kv/v1/par/"+k, fmt.Sprintf(`{"v":%d}`, i))
			}
		})
	}
	return l
}

func (l *ledger) record(keys []string, v int, url, body string) {
	r, err := tryDo("PUT", url, "application/json", body)
	l.mu.Lock()
	defer l.mu.Unlock()
	if err != nil || r.status != 200 {
		l.failures = append(l.failures, fmt.Sprintf("PUT %s: %v %d %s", url, err, r.status, clip(r.body)))
		return
	}
	for _, k := range keys {
		l.last[k] = v
		l.acked = append(l.acked, fmt.Sprintf(`%s={"v":%d}`, k, v))
	}
	if len(keys) > 1 {
		l.pairs++
	}
}

func (l *ledger) stop() {
	close(l.done)
	l.wg.Wait()
}

// check reads every acknowledged key through p: the last version
// acknowledged; both keys of a pair alike; the listing and COUNT see the
// keys once each.
func (l *ledger) check(t *testing.T, p *proc) {
	t.Helper()
	keys := make([]string, 0, len(l.last))
	for k := range l.last {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	wrong := 0
	for start := 0; start < len(keys); start += 100 {
		batch := keys[start:min(start+100, len(keys))]
		r := do(t, "GET", p.httpURL+"/kv/v1/par/"+strings.Join(batch, ","), "", "")
		var got struct {
			Par []struct {
				V int `json:"v"`
			} `json:"par"`
		}
		if r.status != 200 {
			t.Fatalf("GET through %s: %d %s", p.name, r.status, clip(r.body))
		}
		jsonBody(t, r, &got)
		for i, k := range batch {
			if i >= len(got.Par) || got.Par[i].V != l.last[k] {
				if wrong++; wrong <= 5 {
					t.Errorf("%s: %s is %v, want version %d", p.name, k, got.Par[min(i, len(got.Par)-1)], l.last[k])
				}
			}
		}
	}
	var listed struct {
		Keys []string `json:"keys"`
	}
	jsonBody(t, do(t, "GET", p.httpURL+"/kv/v1/par/keys", "", ""), &listed)
	if len(listed.Keys) != len(keys) {
		t.Errorf("%s lists %d keys, want %d", p.name, len(listed.Keys), len(keys))
	}
	r := do(t, "GET", p.httpURL+"/kv/v1/queries/adhoc?q="+strings.ReplaceAll("SELECT COUNT(*) FROM /par", " ", "%20"), "", "")
	if strings.TrimSpace(string(r.body)) != "["+strconv.Itoa(len(keys))+"]" {
		t.Errorf("%s counts %s, want %d", p.name, r.body, len(keys))
	}
}

// watcher reads a region's watch stream (Server-Sent Events) and counts
// each write it delivers (key=value); when the stream ends it resumes
// from the last id on the next member.
type watcher struct {
	cancel     context.CancelFunc
	wg         sync.WaitGroup
	mu         sync.Mutex
	ready      bool
	seen       map[string]int
	events     int
	reconnects int
	errs       []string
}

func startWatcher(pc *procCluster, regionName string) *watcher {
	ctx, cancel := context.WithCancel(context.Background())
	w := &watcher{cancel: cancel, seen: map[string]int{}}
	urls := make([]string, len(pc.procs))
	for i, p := range pc.procs {
		urls[i] = p.httpURL
	}
	w.wg.Go(func() {
		last := ""
		for attempt := 0; attempt < 100 && ctx.Err() == nil; attempt++ {
			if attempt > 0 {
				w.mu.Lock()
				w.reconnects++
				w.mu.Unlock()
				time.Sleep(200 * time.Millisecond)
			}
			req, err := http.NewRequestWithContext(ctx, "GET", urls[attempt%len(urls)]+"/kv/v1/watch?region="+regionName, nil)
			if err != nil {
				return
			}
			if last != "" {
				req.Header.Set("Last-Event-ID", last)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				continue
			}
			if resp.StatusCode != 200 {
				body, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				w.fail(fmt.Sprintf("watch from %q: %d %s", last, resp.StatusCode, clip(body)))
				if resp.StatusCode == 410 {
					return
				}
				continue
			}
			last = w.read(resp.Body, last)
			resp.Body.Close()
		}
	})
	return w
}

// read reads events until the stream ends and returns the last id.
func (w *watcher) read(body io.Reader, last string) string {
	sc := bufio.NewScanner(body)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	var event, id, data string
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "event: "):
			event = strings.TrimPrefix(line, "event: ")
		case strings.HasPrefix(line, "id: "):
			id = strings.TrimPrefix(line, "id: ")
		case strings.HasPrefix(line, "data: "):
			data = strings.TrimPrefix(line, "data: ")
		case line == "":
			var ev struct {
				Key   string          `json:"key"`
				Value json.RawMessage `json:"value"`
				Cause string          `json:"cause"`
			}
			_ = json.Unmarshal([]byte(data), &ev)
			w.mu.Lock()
			switch event {
			case "ready":
				w.ready = true
			case "create", "update":
				w.seen[ev.Key+"="+string(ev.Value)]++
				w.events++
			case "error", "end":
				w.errs = append(w.errs, event+": "+ev.Cause)
			}
			w.mu.Unlock()
			if id != "" {
				last = id
			}
			event, id, data = "", "", ""
		}
	}
	return last
}

func (w *watcher) fail(msg string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.errs = append(w.errs, msg)
}

func (w *watcher) isReady() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.ready
}

// missing counts the writes of acked the watch has not delivered.
func (w *watcher) missing(acked []string) int {
	w.mu.Lock()
	defer w.mu.Unlock()
	n := 0
	for _, kv := range acked {
		if w.seen[kv] == 0 {
			n++
		}
	}
	return n
}

// duplicates is the writes delivered more than once.
func (w *watcher) duplicates() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	var out []string
	for kv, n := range w.seen {
		if n > 1 {
			out = append(out, fmt.Sprintf("%s ×%d", kv, n))
		}
	}
	return out
}

func (w *watcher) stop() {
	w.cancel()
	w.wg.Wait()
}
