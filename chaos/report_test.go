package chaos

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kvnode/kvnode/partition"
)

// TestFailoverFromProbes: failover is the first acknowledged write, begun
// after the fault, through another member, to a group the faulty member
// led; a fault on a member that led none of the region's groups does not
// count, and one never followed by such a write counts as no recovery.
func TestFailoverFromProbes(t *testing.T) {
	s := time.Second
	p := &Prober{Region: RegionSpec{Name: "p", Partitioned: true}, P: 3}
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
	r := &Prober{Region: RegionSpec{Name: "r"}}
	r.probe = []probeOp{{member: "n1", group: 0, call: 6 * s, ret: 6*s + 500*time.Millisecond, ok: true}}
	var rep RegionReport
	r.Failover(&rep, faults)
	if rep.Failovers != 2 || rep.NoRecovery != 1 || rep.FailoverP50 != 1500*time.Millisecond {
		t.Errorf("replicated: %+v; want 2 failovers, 1 without recovery, p50 1.5s", rep)
	}
}

// TestProbeKeysLandInTheirGroups: a partitioned region's probe keys are
// in the group they are meant to measure.
func TestProbeKeysLandInTheirGroups(t *testing.T) {
	p := &Prober{Region: RegionSpec{Partitioned: true}, P: 5}
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
