package store

import (
	"log/slog"
	"testing"
	"time"

	"github.com/kvnode/kvnode/internal/logtap"
)

// TestRemoveServerLogsItsGroup: removing a member from a partition group
// says so, naming that group (it used to say "from the control group"
// whatever the group was).
func TestRemoveServerLogsItsGroup(t *testing.T) {
	logs := &logtap.Tap{Level: slog.LevelDebug}
	tc := partitionCluster(t, 3, 1, 3, func(c *Config) { c.Logger = logs.Logger(c.NodeName, nil) })
	var leader *testNode
	var member string
	for _, n := range tc.running() {
		if g := n.groups.get(1); g != nil && g.IsLeader() {
			leader = n
			for _, f := range tc.followers(n) {
				member = f.name
			}
		}
	}
	if leader == nil {
		t.Fatal("partition group 1 has no leader")
	}
	if err := leader.groups.get(1).RemoveServer(ctxT(t, 10*time.Second), member, "asked by the test"); err != nil {
		t.Fatalf("remove %s from partition group 1: %v", member, err)
	}
	if got := logs.Matching(leader.name+": ", "removing member from partition group 1", "member="+member, "reason=asked by the test"); len(got) != 1 {
		t.Errorf("log lines about the removal: %q, want one saying 'removing member from partition group 1'; the leader logged:\n%s",
			got, logs.Matching(leader.name+": ", "removing member"))
	}
	if got := logs.Matching("removing member from the control group"); len(got) != 0 {
		t.Errorf("a removal from partition group 1 was logged as one from the control group: %q", got)
	}
}
