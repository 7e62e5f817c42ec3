package chaos

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/kvnode/kvnode/chaos/backend"
	"github.com/kvnode/kvnode/chaos/workload"
	"github.com/kvnode/kvnode/client"
	"github.com/kvnode/kvnode/partition"
)

// TestFailoverFromProbes: failover is the first acknowledged write, begun
// after the fault, through another member, to a group the faulty member
// led; a fault on a member that led none of the region's groups does not
// count, and one never followed by such a write counts as no recovery.
func TestFailoverFromProbes(t *testing.T) {
	s := time.Second
	p := &Prober{Region: backend.RegionSpec{Name: "p", Partitioned: true}, P: 3}
	p.probe = []probeOp{
		{member: "n2", group: 1, call: 9 * s / 10, ret: 2 * s, ok: true},        // begun before the fault
		{member: "n1", group: 1, call: 11 * s / 10, ret: 12 * s / 10, ok: true}, // the faulty member itself
		{member: "n2", group: 2, call: 11 * s / 10, ret: 12 * s / 10, ok: true}, // a group n1 did not lead
		{member: "n3", group: 1, call: 15 * s / 10, ret: 21 * s / 10, ok: false},
		{member: "n3", group: 1, call: 21 * s / 10, ret: 22 * s / 10, ok: true}, // the one: 1.2 s
		{member: "n2", group: 3, call: 11 * s, ret: 13 * s, ok: true},           // 3 s after the second fault
	}
	faults := []FaultEvent{
		{At: 1 * s, Kind: "kill", Target: "n1", Led: []uint64{0, 1}},
		{At: 5 * s, Kind: "kill", Target: "n2", Led: []uint64{0}},  // led only the control group
		{At: 10 * s, Kind: "kill", Target: "n3", Led: []uint64{3}}, // recovered at 13 s
		{At: 20 * s, Kind: "kill", Target: "n3", Led: []uint64{2}}, // never recovered
	}
	var rr RegionReport
	p.Failover(&rr, faults)
	if rr.Failovers != 3 || rr.NoRecovery != 1 {
		t.Errorf("failovers %d, no recovery %d; want 3 and 1", rr.Failovers, rr.NoRecovery)
	}
	if rr.FailoverP50 != 3*s || rr.FailoverMax != 3*s {
		// Two measured: 1.2 s and 3 s; the upper median and the max.
		t.Errorf("p50 %v max %v; want 3s and 3s", rr.FailoverP50, rr.FailoverMax)
	}

	// The replicated region counts only the control group.
	r := &Prober{Region: backend.RegionSpec{Name: "r"}}
	r.probe = []probeOp{{member: "n1", group: 0, call: 6 * s, ret: 6*s + 500*time.Millisecond, ok: true}}
	var rep RegionReport
	r.Failover(&rep, faults)
	if rep.Failovers != 2 || rep.NoRecovery != 1 || rep.FailoverP50 != 1500*time.Millisecond {
		t.Errorf("replicated: %+v; want 2 failovers, 1 without recovery, p50 1.5s", rep)
	}
}

// TestFailoverEveryGroup: a fault on a member that led two groups is over
// when the slower of them takes writes again (3 s here), while the first
// group's measure keeps the faster (1 s); a fault after which one of its
// groups never took a write counts as unrecovered and gives no time; p99
// and max come from the faults' times.
func TestFailoverEveryGroup(t *testing.T) {
	s := time.Second
	ms := time.Millisecond
	p := &Prober{Region: backend.RegionSpec{Name: "p", Partitioned: true}, P: 3}
	p.probe = []probeOp{
		// Fault at 10 s on n1, which led groups 1 and 2.
		{member: "n2", group: 1, call: 10*s + 100*ms, ret: 11 * s, ok: true},        // group 1 back after 1 s
		{member: "n3", group: 2, call: 10*s + 100*ms, ret: 10*s + 600*ms},           // refused
		{member: "n1", group: 2, call: 10*s + 100*ms, ret: 10*s + 200*ms, ok: true}, // the faulty member itself
		{member: "n3", group: 2, call: 12 * s, ret: 13 * s, ok: true},               // group 2 back after 3 s
		{member: "n3", group: 2, call: 13 * s, ret: 13*s + 10*ms, ok: true},         // later: not the first
		// Fault at 20 s on n3, which led group 3: back after 2 s.
		{member: "n1", group: 3, call: 20*s + 100*ms, ret: 22 * s, ok: true},
		// Fault at 30 s on n2, which led groups 1 and 3: group 3 never
		// back before the run ended.
		{member: "n3", group: 1, call: 30*s + 100*ms, ret: 30*s + 500*ms, ok: true},
		{member: "n1", group: 3, call: 30*s + 100*ms, ret: 30*s + 600*ms},
	}
	faults := []FaultEvent{
		{At: 10 * s, Kind: "kill", Target: "n1", Led: []uint64{1, 2}},
		{At: 20 * s, Kind: "kill", Target: "n3", Led: []uint64{3}},
		{At: 30 * s, Kind: "pause", Target: "n2", Led: []uint64{0, 1, 3}},
	}
	var rr RegionReport
	p.Failover(&rr, faults)
	if rr.Failovers != 3 || rr.NoRecovery != 0 || rr.Unrecovered != 1 {
		t.Errorf("failovers %d, no recovery %d, unrecovered %d; want 3, 0, 1", rr.Failovers, rr.NoRecovery, rr.Unrecovered)
	}
	if want := []time.Duration{3 * s, 2 * s}; !slices.Equal(rr.FailoverEvery, want) {
		t.Errorf("every group: %v, want %v", rr.FailoverEvery, want)
	}
	if rr.FailoverEveryP50 != 3*s || rr.FailoverEveryP99 != 3*s || rr.FailoverEveryMax != 3*s {
		t.Errorf("every group p50 %v p99 %v max %v; want 3s each (upper median of two)", rr.FailoverEveryP50, rr.FailoverEveryP99, rr.FailoverEveryMax)
	}
	// First group: 1 s, 2 s and 0.5 s.
	if rr.FailoverP50 != s || rr.FailoverMax != 2*s {
		t.Errorf("first group p50 %v max %v; want 1s and 2s", rr.FailoverP50, rr.FailoverMax)
	}
}

func TestQuantile(t *testing.T) {
	var xs []time.Duration
	for i := 1; i <= 200; i++ {
		xs = append(xs, time.Duration(i))
	}
	if q := quantile(xs, 0.5); q != 101 {
		t.Errorf("p50 of 1..200 = %d, want 101", q)
	}
	if q := quantile(xs, 0.99); q != 199 {
		t.Errorf("p99 of 1..200 = %d, want 199", q)
	}
	if q := quantile(xs[:10], 0.99); q != 10 {
		t.Errorf("p99 of 1..10 = %d, want the max, 10", q)
	}
}

// TestProbeKeysLandInTheirGroups: a partitioned region's probe keys are
// in the group they are meant to measure.
func TestProbeKeysLandInTheirGroups(t *testing.T) {
	p := &Prober{Region: backend.RegionSpec{Partitioned: true}, P: 5}
	seen := map[string]bool{}
	for m := range 3 {
		for g := uint64(1); g <= 5; g++ {
			k := p.probeKey(m, g)
			if seen[k] {
				t.Errorf("key %s used twice", k)
			}
			seen[k] = true
			if got := partition.GroupForKey(k, 5); got != g {
				t.Errorf("probe key %s is in group %d, want %d", k, got, g)
			}
		}
	}
}

func TestReportOKAndDoc(t *testing.T) {
	good := Report{Scenario: "kill-leader", Backend: "proc", Started: time.Date(2026, 11, 23, 0, 0, 0, 0, time.UTC), Duration: time.Minute,
		Regions: []RegionReport{{Region: "r", Ops: 100, Definite: 99, Unknown: 1, Verdict: "ok", LedgerAcked: 10, Failovers: 2, FailoverP50: time.Second, FailoverMax: 2 * time.Second}}}
	bad := good
	bad.Regions = []RegionReport{{Region: "r", Ops: 100, Verdict: "illegal", Saved: []string{"h.json", "h.html"}}}
	lost := good
	lost.Regions = []RegionReport{{Region: "r", Verdict: "ok", LedgerLost: 1}}
	if !good.OK() || bad.OK() || lost.OK() {
		t.Fatalf("OK: good %v, illegal %v, lost %v", good.OK(), bad.OK(), lost.OK())
	}
	if p := strings.Join(bad.Problems(), ";"); !strings.Contains(p, "illegal") || !strings.Contains(p, "h.html") {
		t.Errorf("problems of an illegal run: %q", p)
	}

	path := filepath.Join(t.TempDir(), "chaos.md")
	hand := "# Title\n\nhand-written intro\n\n" + beginGenerated + "\nold tables\n" + endGenerated + "\n\nhand-written tail\n"
	if err := os.WriteFile(path, []byte(hand), 0o644); err != nil {
		t.Fatal(err)
	}
	shared := good
	shared.Concurrent = 2
	if err := WriteDoc(path, []Report{good, bad, shared}); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(path)
	doc := string(b)
	for _, want := range []string{"hand-written intro", "hand-written tail", "| kill-leader | proc | r | 2×1m0s | 1/2 | 200 |", "**1 failed**", "| kill-leader | proc, 2 at once | r | 1×1m0s | 1/1 | 100 |"} {
		if !strings.Contains(doc, want) {
			t.Errorf("doc lacks %q:\n%s", want, doc)
		}
	}
	if strings.Contains(doc, "old tables") {
		t.Errorf("doc kept the old generated part:\n%s", doc)
	}
}

func TestCause(t *testing.T) {
	for in, want := range map[string]string{
		`Put "http://x/kv/v1/r/k": context deadline exceeded (Client.Timeout exceeded while awaiting headers)`: "client timeout",
		`503 {"cause":"put on region \"r\": no leader"}`:                                                       `503 put on region "r": no leader`,
		`Get "http://x": read tcp 1->2: read: connection reset by peer`:                                        "connection reset",
		`Delete "http://x": EOF`: "connection closed",
	} {
		if got := cause(in); got != want {
			t.Errorf("cause(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestTablesShowOldAndNewFailover: a run recorded before the every-group
// measure existed (a line of docs/chaos-runs.jsonl as it was) still loads,
// and its row shows its first-group failover with "-" for what it lacks;
// a new run shows both, and its check time.
func TestTablesShowOldAndNewFailover(t *testing.T) {
	old := `{"scenario":"kill-leader","backend":"proc","concurrent":2,"started":"2026-11-23T20:21:20.896080023Z","duration":60000000000,"faults":[{"at":4443917694,"kind":"kill","target":"n1","led":[0,3]}],"elections":16,"regions":[{"region":"chaosr","ops":15147,"definite":15102,"unknown":21,"refused":0,"availability":0.998611386629637,"failovers":4,"failoverP50":888976881,"failoverMax":1440328040,"noRecovery":0,"verdict":"ok","ledgerAcked":1701,"ledgerLost":0,"diverged":0,"causes":{"connection closed":14,"connection reset":7}}]}`
	path := filepath.Join(t.TempDir(), "runs.jsonl")
	if err := os.WriteFile(path, []byte(old+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	reports, err := LoadReports(path)
	if err != nil {
		t.Fatal(err)
	}
	s := time.Second
	reports = append(reports, Report{Scenario: "kill-leader", Backend: "proc", Started: time.Date(2026, 11, 24, 0, 0, 0, 0, time.UTC), Duration: time.Minute,
		Regions: []RegionReport{{Region: "chaosp", Ops: 100, Definite: 100, Verdict: "ok", Failovers: 3, Unrecovered: 1,
			FailoverP50: s, FailoverMax: 2 * s, FailoverEvery: []time.Duration{3 * s, 2 * s}, CheckTime: 1500 * time.Millisecond,
			Watch: &WatchReport{Events: 500, Reconnects: 2, Verdict: "ok"}}}})
	doc := Tables(reports)
	for _, want := range []string{
		"| kill-leader | proc, 2 at once | chaosr | 1×1m0s | 1/1 | 15147 | 99.9% | 890ms / 1.44s | - | 4 (0) | 16.0 | 1701 / 0 | - | - | linearizable |",
		"| kill-leader | proc | chaosp | 1×1m0s | 1/1 | 100 | 100.0% | 1s / 2s | 3s / 3s / 3s (1 with a group never back) | 3 (0) | 0.0 | 0 / 0 | 500 / 2 / 0 | 1.5s | linearizable |",
	} {
		if !strings.Contains(doc, want) {
			t.Errorf("tables lack %q:\n%s", want, doc)
		}
	}
}

// TestWatchVerdictFailsRun: a run whose watcher missed, invented,
// reordered or repeated an event, or was refused a resume with 410, is
// not OK, and its problems and tables say so; one without a watcher
// (recorded before it existed) is judged as before.
func TestWatchVerdictFailsRun(t *testing.T) {
	run := func(w *WatchReport) Report {
		return Report{Scenario: "kill-leader", Backend: "proc", Duration: time.Minute,
			Regions: []RegionReport{{Region: "chaosr", Verdict: "ok", Watch: w}}}
	}
	if r := run(nil); !r.OK() {
		t.Errorf("a run without a watcher: OK() = false, problems %q", r.Problems())
	}
	if r := run(&WatchReport{Events: 10, Verdict: "ok"}); !r.OK() {
		t.Errorf("a clean watch: OK() = false, problems %q", r.Problems())
	}
	for _, w := range []*WatchReport{
		{Events: 10, Missing: 1, Verdict: "failed"},
		{Events: 10, Duplicates: 2, Verdict: "failed"},
		{Events: 10, Gone: []workload.Gone{{Member: "n2", Token: "0:12.0", Oldest: "0:40.0"}}, Verdict: "gone"},
		{Verdict: "not live"},
	} {
		r := run(w)
		if r.OK() {
			t.Errorf("watch %+v: OK() = true, want false", *w)
		}
		if p := strings.Join(r.Problems(), "; "); !strings.Contains(p, "chaosr: watch "+w.Verdict) {
			t.Errorf("problems %q, want one naming the watch's verdict %q", p, w.Verdict)
		}
	}
	doc := Tables([]Report{run(&WatchReport{Events: 10, Missing: 1, Duplicates: 2, Verdict: "failed"})})
	if want := "| 10 / 0 / 3 | - | **1 failed** |"; !strings.Contains(doc, want) {
		t.Errorf("tables lack %q:\n%s", want, doc)
	}
}

// TestRebalanceSettledAndTable: the rebalance nemesis's end check names
// each reason the table is not settled (groups missing, an operation in
// progress, a leaderless group, uneven buckets) and none when it is; runs
// with a rebalance report get a bucket-moves table, others none.
func TestRebalanceSettledAndTable(t *testing.T) {
	pv := &client.Partitions{PartitionGroups: 4}
	for g, n := range []int{28, 28, 29, 27} {
		pv.Groups = append(pv.Groups, client.PartitionGroup{Group: uint64(g + 1), Buckets: make([]int, n), Leader: "n1"})
	}
	if why := settledWhy(pv, 4, nil); !strings.Contains(why, "buckets per group [28 28 29 27]") {
		t.Errorf("uneven buckets: %q", why)
	}
	pv.Groups[3].Buckets = make([]int, 28)
	if why := settledWhy(pv, 4, nil); why != "" {
		t.Errorf("settled table: %q", why)
	}
	pv.Groups[0].Leader = ""
	why := settledWhy(pv, 6, []string{"op-1"})
	for _, want := range []string{"4 partition groups, 6 asked for", "in progress: op-1", "group 1 has no leader"} {
		if !strings.Contains(why, want) {
			t.Errorf("%q lacks %q", why, want)
		}
	}

	plain := Report{Scenario: "none", Backend: "proc", Regions: []RegionReport{{Region: "chaosp", Verdict: "ok"}}}
	if strings.Contains(Tables([]Report{plain}), "Bucket moves") {
		t.Errorf("a bucket-moves table without rebalance runs")
	}
	rb := Report{Scenario: "rebalance", Backend: "proc", Regions: []RegionReport{{Region: "chaosp", Verdict: "ok"}},
		Rebalance: &RebalanceReport{GroupsBefore: 3, GroupsAsked: 12, GroupsAfter: 12, Patches: 7, PatchesAccepted: 6, Posts: 1, PostsAccepted: 1,
			Refusals: 2, Operations: 8, Succeeded: 7, Errored: []string{"x: abandoned"}, BucketsMoved: 80, MovedInFaults: 30, Faults: 6, FaultsInMoves: 5, FaultsWithMoves: 4, Settled: 3 * time.Second}}
	rb2 := rb
	rb2.Rebalance = &RebalanceReport{GroupsBefore: 3, GroupsAsked: 10, GroupsAfter: 10, BucketsMoved: 70, Faults: 5}
	got := Tables([]Report{plain, rb, rb2})
	if !strings.Contains(got, "| rebalance | proc | 2 | 2/2 | 3 → 10-12 (10-12) | 6/7 / 1/1 | 2 | 8 (1) | 150 (75) | 30 | 11 / 5 / 4 | 3s |") {
		t.Errorf("bucket-moves table:\n%s", got)
	}
}

// TestFailoverWithMovesSkipsUnprobedGroups: with moves, a group the
// probes had not written to before the fault (added, no bucket yet) is
// not measured: its first write is a bucket moving in, not a failover.
func TestFailoverWithMovesSkipsUnprobedGroups(t *testing.T) {
	s := time.Second
	p := &Prober{Region: backend.RegionSpec{Name: "p", Partitioned: true}, P: 3, Moves: true}
	p.probe = []probeOp{
		{member: "n2", group: 5, call: s / 2, ret: s / 2, ok: true},
		{member: "n2", group: 5, call: 2 * s, ret: 2 * s, ok: true},   // group 5 back 1 s after the fault
		{member: "n3", group: 6, call: 18 * s, ret: 18 * s, ok: true}, // group 6's first bucket, 17 s later
	}
	var rr RegionReport
	p.Failover(&rr, []FaultEvent{{At: s, Kind: "isolate", Target: "n1", Led: []uint64{5, 6}}})
	if rr.Failovers != 1 || rr.Unrecovered != 0 || !slices.Equal(rr.FailoverEvery, []time.Duration{s}) {
		t.Errorf("%+v: want one failover, every group back after 1s", rr)
	}
	p.Moves = false
	rr = RegionReport{}
	p.Failover(&rr, []FaultEvent{{At: s, Kind: "isolate", Target: "n1", Led: []uint64{5, 6}}})
	if !slices.Equal(rr.FailoverEvery, []time.Duration{17 * s}) {
		t.Errorf("without moves every group counts: %v, want [17s]", rr.FailoverEvery)
	}
}
