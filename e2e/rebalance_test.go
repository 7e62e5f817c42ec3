package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kvnode/kvnode/client"
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
	}
	jsonBody(t, r, &started)
	wctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	op, err := pc.procs[1].client().Cluster().Wait(wctx, started.OperationID)
	if err != nil || op.Status != client.OperationSucceeded || op.Result.BucketsMoved == 0 {
		t.Fatalf("the rebalance ended %v: %+v", err, op)
	}
	t.Logf("rebalance: %d buckets moved in %d ms", op.Result.BucketsMoved, op.Result.Millis)
	time.Sleep(2 * time.Second) // load after it too
	w.stop()

	parts, err := pc.procs[5].client().Cluster().Partitions(ctx(t))
	if err != nil {
		t.Fatalf("partitions: %v", err)
	}
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
// 20,000 writes each) and keeps what was acknowledged. Each write is sent
// once (proc.client): a failure is the member's answer.
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
	procs := slices.Clone(pc.procs)
	for c := range 4 {
		l.wg.Go(func() {
			for i := 0; i < 20000; i++ {
				select {
				case <-l.done:
					return
				default:
				}
				p := procs[(c+i)%len(procs)]
				if i%5 == 4 {
					// Two keys, one version: kept whole or not at all.
					a, b := fmt.Sprintf("pa%d", c), fmt.Sprintf("pb%d", c)
					l.record(p, []string{a, b}, i)
					continue
				}
				l.record(p, []string{fmt.Sprintf("k%d-%d", c, i%400)}, i)
			}
		})
	}
	return l
}

func (l *ledger) record(p *proc, keys []string, v int) {
	entries := make([]client.Entry, len(keys))
	for i, k := range keys {
		entries[i] = client.Entry{Key: k, Value: map[string]int{"v": v}}
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var err error
	if len(keys) == 1 {
		err = p.client().Region("par").Put(ctx, keys[0], entries[0].Value, client.AtMostOnce())
	} else {
		err = p.client().Region("par").PutAll(ctx, entries, client.AtMostOnce())
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if err != nil {
		l.failures = append(l.failures, fmt.Sprintf("PUT %v through %s: %v", keys, p.name, err))
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
	par := p.client().Region("par")
	for start := 0; start < len(keys); start += 100 {
		batch := keys[start:min(start+100, len(keys))]
		values, err := par.GetMany(ctx(t), batch)
		if err != nil {
			t.Fatalf("GET through %s: %v", p.name, err)
		}
		for i, k := range batch {
			var got struct {
				V int `json:"v"`
			}
			if values[i] == nil || json.Unmarshal(values[i], &got) != nil || got.V != l.last[k] {
				if wrong++; wrong <= 5 {
					t.Errorf("%s: %s is %s, want version %d", p.name, k, values[i], l.last[k])
				}
			}
		}
	}
	listed := 0
	for _, err := range par.Keys(ctx(t)) {
		if err != nil {
			t.Fatalf("the keys through %s: %v", p.name, err)
		}
		listed++
	}
	if listed != len(keys) {
		t.Errorf("%s lists %d keys, want %d", p.name, listed, len(keys))
	}
	rows, err := p.client().Query(ctx(t), "SELECT COUNT(*) FROM /par")
	if err != nil || len(rows) != 1 || string(rows[0]) != strconv.Itoa(len(keys)) {
		t.Errorf("%s counts %s (%v), want %d", p.name, rows, err, len(keys))
	}
}

// watcher follows a region's watch (client.Watch) and counts each write
// it delivers (key=value); when the stream ends the client resumes after
// the last id on the next member. Every answer to a watch request that is
// not a stream, and every stream a member ends (an `error` event), is a
// failure.
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
	cl, err := client.New(client.Config{Endpoints: urls, DisableSingleHop: true, Transport: &watchAnswers{w: w, next: http.DefaultTransport}})
	if err != nil {
		panic(err)
	}
	streams := 0
	opts := client.WatchOptions{Region: regionName, OnStream: func(s client.WatchStream) {
		switch {
		case s.Err == nil:
			if streams++; streams > 1 {
				w.mu.Lock()
				w.reconnects++
				w.mu.Unlock()
			}
		case strings.Contains(s.Err.Error(), "the member ended the stream"):
			w.fail(fmt.Sprintf("error: %v", s.Err))
		}
	}}
	w.wg.Go(func() {
		defer cl.Close()
		for ev, err := range cl.Watch(ctx, opts) {
			if err != nil {
				w.fail(fmt.Sprintf("watch: %v", err))
				return
			}
			w.mu.Lock()
			switch ev.Type {
			case client.EventReady:
				w.ready = true
			case client.EventCreate, client.EventUpdate:
				w.seen[ev.Key+"="+string(ev.Value)]++
				w.events++
			}
			w.mu.Unlock()
		}
	})
	return w
}

// watchAnswers fails the watcher on every answer to a watch request
// other than 200, which the client would otherwise retry unseen.
type watchAnswers struct {
	w    *watcher
	next http.RoundTripper
}

func (a *watchAnswers) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := a.next.RoundTrip(req)
	if err == nil && resp.StatusCode != http.StatusOK && req.URL.Path == "/kv/v1/watch" {
		a.w.fail(fmt.Sprintf("watch from %q on %s: %d", req.Header.Get("Last-Event-ID"), req.URL.Host, resp.StatusCode))
	}
	return resp, err
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
