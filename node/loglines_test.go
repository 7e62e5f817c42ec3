package node_test

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/kvnode/kvnode/internal/waitfor"
	"github.com/kvnode/kvnode/node"
	"github.com/kvnode/kvnode/node/nodetest"
)

// TestLifecycleLogLines: what operators read in a member's log at info
// level. A leader change is one "leader changed" line per group on every
// member, with the group, the leader and the term; a membership change one
// line on the leader that makes it, naming the group, the member and (for
// a removal) why; a snapshot written or restored one line with its group,
// index, size and duration; hashicorp/raft's own lines about those events
// stay at debug.
func TestLifecycleLogLines(t *testing.T) {
	logs := &nodetest.LogTap{}
	ip := nodetest.New(t)
	ip.Logger = logs.Logger
	ip.Tune = func(name string, cfg *node.Config) {
		cfg.Raft.SnapshotThreshold = 40
		cfg.Raft.SnapshotInterval = 100 * time.Millisecond
		cfg.Raft.TrailingLogs = 8
		cfg.LeaveOnShutdown = name == "d" // d is stopped for good at the end
	}
	for _, name := range []string{"a", "b", "c"} {
		ip.Start(name, 3)
	}
	leader := ip.Leader()
	L := leader.Name()
	t.Cleanup(func() {
		if t.Failed() {
			for _, name := range []string{"a", "b", "c", "d"} {
				for _, l := range logs.Matching(name, "") {
					t.Log(l)
				}
			}
		}
	})

	// Every member logs the control group's leader once per term in which
	// it learns of it (under load an election may be lost and won again).
	term := 0
	for _, name := range []string{"a", "b", "c"} {
		var lines []string
		waitfor.Cond(t, 10*time.Second, name+" to log the control group's leader", func() bool {
			lines = logs.Matching(name, "group=0 ", "leader changed", "leader="+L+" ")
			return len(lines) > 0
		})
		for tm, n := range countByTerm(t, lines) {
			if n != 1 {
				t.Errorf("%s logged the control group's leader %s %d times in term %d, want once: %q", name, L, n, tm, lines)
			}
			term = max(term, tm)
		}
	}

	// A fourth member: the leader adds it to the control group (once) and
	// placement moves partition replicas to it, each logged with its group.
	nodetest.MustCall(t, leader, "POST", "/management/v1/regions", `{"name":"r","type":"REPLICATE"}`, 201)
	nodetest.MustCall(t, leader, "POST", "/management/v1/regions", `{"name":"p","type":"PARTITION"}`, 201)
	nodetest.MustCall(t, leader, "PUT", "/kv/v1/p/k", `{"v":1}`, 200)
	d := ip.Start("d", 3)
	waitfor.Cond(t, 20*time.Second, "d to be in the control group", func() bool {
		return nodetest.View(t, leader).Suffrage("d") != ""
	})
	// Gossip says who joined and which release it runs (a rolling
	// upgrade's progress).
	if got := logs.Matching(L, "member alive", "member=d ", "version="+d.Config().Version); d.Config().Version == "" || len(got) == 0 {
		t.Errorf("the leader did not log d alive with its version %q", d.Config().Version)
	}
	// One line per attempt: once, unless an attempt failed (and said so).
	adding := logs.Matching(L, "group=0 ", "adding member to the control group as non-voter", "member=d ")
	if failed := logs.Matching(L, "add non-voter failed", "member=d "); len(adding) != 1+len(failed) {
		t.Errorf("the leader logged adding d to the control group %d times after %d failed attempts: %q", len(adding), len(failed), adding)
	}
	// The control group's leader plans the move; each partition group's
	// leader carries it out.
	waitfor.Cond(t, 30*time.Second, "a partition replica to move to d", func() bool {
		added := 0
		for _, name := range []string{"a", "b", "c"} {
			added += len(logs.Matching(name, "adding a replica to a partition group", "group=", "member=d"))
		}
		return added > 0 && len(logs.Matching(L, "partition placement", "group=", "member=d")) > 0
	})

	// Snapshots written, on every member, once each with what they are.
	for i := 0; i < 60; i++ {
		nodetest.MustCall(t, []*node.Node{leader, d}[i%2], "PUT", fmt.Sprintf("/kv/v1/r/k%d", i), `{"v":1}`, 200)
	}
	snapLine := regexp.MustCompile(`snapshot written index=\d+ term=\d+ size=\d+ duration=\S+ id=(\S+)`)
	for _, name := range []string{"a", "b", "c", "d"} {
		var lines []string
		waitfor.Cond(t, 20*time.Second, name+" to log a snapshot of the control group", func() bool {
			lines = logs.Matching(name, "group=0 ", "snapshot written")
			return len(lines) > 0
		})
		seen := map[string]bool{}
		for _, l := range lines {
			m := snapLine.FindStringSubmatch(l)
			if m == nil {
				t.Errorf("%s: snapshot line %q lacks its index, term, size, duration or id", name, l)
				continue
			}
			if seen[m[1]] {
				t.Errorf("%s: snapshot %s logged twice", name, m[1])
			}
			seen[m[1]] = true
		}
	}
	for _, quiet := range []string{"snapshot complete up to", "starting snapshot up to", "updating configuration", "restored from snapshot"} {
		if got := logs.Matching(L, quiet); len(got) != 0 {
			t.Errorf("raft's %q is at info (kvnode logs the event itself): %q", quiet, got)
		}
	}

	// A restart restores the control group from its snapshot: one line.
	ip.Stop("c", false)
	ip.Start("c", 3)
	// (Once from its own snapshot; again if it fell behind the leader's
	// log while it was down and was sent the leader's.)
	waitfor.Cond(t, 20*time.Second, "c to log its restore", func() bool {
		return len(logs.Matching("c", "group=0 ", "snapshot restored", "index=", "size=", "duration=")) > 0
	})

	// The leader fails: every survivor logs the new leader once, in a
	// later term.
	ip.Stop(L, false)
	next := ip.Leader()
	for name := range ip.Nodes {
		var lines []string
		waitfor.Cond(t, 20*time.Second, name+" to log the new leader", func() bool {
			lines = logs.Matching(name, "group=0 ", "leader changed", "leader="+next.Name()+" ")
			return len(lines) > 0
		})
		for tm, n := range countByTerm(t, lines) {
			if tm <= term {
				t.Errorf("%s: new leader %s logged in term %d, not after the old leader's term %d", name, next.Name(), tm, term)
			}
			if n != 1 {
				t.Errorf("%s: new leader %s logged %d times in term %d, want once: %q", name, next.Name(), n, tm, lines)
			}
		}
	}

	// A graceful leave (d runs with LeaveOnShutdown; a plain SIGTERM is a
	// restart): the leader removes d from the control group, and says why.
	ip.Stop("d", true)
	waitfor.Cond(t, 20*time.Second, "the leader to log removing d", func() bool {
		return len(logs.Matching(next.Name(), "removing member from the control group", "member=d ", "reason=")) > 0
	})
}

// countByTerm counts lines by their term=N.
func countByTerm(t *testing.T, lines []string) map[int]int {
	t.Helper()
	n := map[int]int{}
	for _, l := range lines {
		n[termOf(t, l)]++
	}
	return n
}

// termOf reads term=N from a log line.
func termOf(t *testing.T, line string) int {
	t.Helper()
	_, rest, ok := strings.Cut(line, " term=")
	if !ok {
		t.Fatalf("no term in %q", line)
	}
	n, err := strconv.Atoi(strings.Fields(rest)[0])
	if err != nil {
		t.Fatalf("term in %q: %v", line, err)
	}
	return n
}
