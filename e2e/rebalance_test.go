package e2e

import (
	"encoding/json"
	"fmt"
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
