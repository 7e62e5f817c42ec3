package store

import (
	"testing"
	"time"

	"github.com/hashicorp/raft"
	"github.com/kvnode/kvnode/internal/waitfor"
)

// TestCaughtUpChecksTheMember: the progress that proves a member caught up
// must be that member's own. A server recorded at an address another,
// caught-up member now answers on is not caught up; a member whose
// recorded address is stale is asked where gossip says it is now.
func TestCaughtUpChecksTheMember(t *testing.T) {
	tc := newTestCluster(t, 2)
	for _, name := range names("n", 2) {
		tc.start(name)
	}
	leader := tc.leader()
	f := tc.followers(leader)[0]
	g := leader.groups.control()
	waitfor.Cond(t, 10*time.Second, "the follower to apply the leader's entries", func() bool {
		return f.groups.control().FSM().AppliedIndex() >= g.FSM().AppliedIndex()
	})

	if !leader.caughtUp(g, raft.Server{ID: raft.ServerID(f.name), Address: raft.ServerAddress(f.addr)}) {
		t.Fatalf("%s at its own address: not caught up, want caught up", f.name)
	}
	if leader.caughtUp(g, raft.Server{ID: "ghost", Address: raft.ServerAddress(f.addr)}) {
		t.Errorf("a member recorded at %s, where %s answers: caught up, want not (it took %s's progress for its own)", f.addr, f.name, f.name)
	}
	if !leader.caughtUp(g, raft.Server{ID: raft.ServerID(f.name), Address: raft.ServerAddress(leader.addr)}) {
		t.Errorf("%s recorded at a stale address (now %s's): not caught up, want it asked where gossip says it is", f.name, leader.name)
	}
}
