package store

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/kvnode/kvnode/region"
)

// TestConfirmLeadership: a read-index round confirms leadership only with
// answers to questions asked after it began (hashicorp/raft's VerifyLeader
// also counts answers to heartbeats sent before, which let a leader woken
// from SIGSTOP serve an overwritten value in the chaos pause-leader runs).
// A leader whose voters moved to a later term, or that hears from none of
// them, is refused; a question meant for another member is not answered.
func TestConfirmLeadership(t *testing.T) {
	tc := newTestCluster(t, 3)
	for _, name := range names("n", 3) {
		tc.start(name)
	}
	leader := tc.leader()
	g := leader.groups.control()
	term := g.Raft().CurrentTerm()
	if err := leader.router.confirmLeadership(g, term); err != nil {
		t.Fatalf("the leader of term %d: %v", term, err)
	}
	// As a deposed leader sees it: the voters are in a term after its own.
	err := leader.router.confirmLeadership(g, term-1)
	if !errors.Is(err, region.ErrNotLeader) || !strings.Contains(err.Error(), "after this leader's") {
		t.Fatalf("a leader of an older term: %v, want ErrNotLeader naming the later term", err)
	}

	// The term RPC answers only for the member it names.
	f := tc.followers(leader)[0]
	if got, err := leader.client.term(ctxT(t, 5*time.Second), f.addr, 0, f.name); err != nil || got != f.groups.control().Raft().CurrentTerm() {
		t.Fatalf("term of %s = %d, %v", f.name, got, err)
	}
	if _, err := leader.client.term(ctxT(t, 5*time.Second), f.addr, 0, leader.name); err == nil {
		t.Fatalf("%s answered a question meant for %s", f.name, leader.name)
	}

	// Cut off from both voters: refused, within the bound.
	for _, o := range tc.followers(leader) {
		tc.crash(o.name)
	}
	start := time.Now()
	err = leader.router.confirmLeadership(g, term)
	if !errors.Is(err, region.ErrNotLeader) {
		t.Fatalf("a leader alone: %v, want ErrNotLeader", err)
	}
	if d := time.Since(start); d > 3*time.Second {
		t.Fatalf("took %v to give up", d)
	}
}
