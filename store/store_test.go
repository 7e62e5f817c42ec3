package store

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/kvnode/kvnode/cluster"
	"github.com/kvnode/kvnode/internal/waitfor"
	"github.com/kvnode/kvnode/region"
	"github.com/kvnode/kvnode/store/placement"
)

func val(s string) json.RawMessage { return json.RawMessage(s) }

func mustCreate(t *testing.T, s *testNode, name string, kind region.Kind) {
	t.Helper()
	if err := s.CreateRegion(ctxT(t, 10*time.Second), region.Info{Name: name, Kind: kind}); err != nil {
		t.Fatalf("create region %s: %v", name, err)
	}
}

func mustPut(t *testing.T, s *testNode, reg, key, value string) {
	t.Helper()
	if err := s.Put(ctxT(t, 10*time.Second), reg, []region.Entry{{Key: key, Value: val(value)}}, region.TTL{}); err != nil {
		t.Fatalf("put %s/%s: %v", reg, key, err)
	}
}

func getOne(t *testing.T, s *testNode, c region.Consistency, reg, key string) json.RawMessage {
	t.Helper()
	vals, err := s.Get(ctxT(t, 10*time.Second), c, reg, []string{key})
	if err != nil {
		t.Fatalf("get %s/%s: %v", reg, key, err)
	}
	return vals[0]
}

func TestSingleNodeBootstrapsAndServes(t *testing.T) {
	tc := newTestCluster(t, 1)
	n := tc.start("solo")
	tc.leader()
	mustCreate(t, n, "orders", region.Replicate)
	mustPut(t, n, "orders", "1", `{"a":1}`)
	if got := getOne(t, n, region.Linearizable, "orders", "1"); string(got) != `{"a":1}` {
		t.Fatalf("get = %s, want {\"a\":1}", got)
	}
	key, err := n.PutIfAbsent(ctxT(t, 5*time.Second), "orders", region.Entry{Value: val(`{"g":1}`)}, region.TTL{})
	if err != nil || key == "" {
		t.Fatalf("put-if-absent with generated key = %q, %v", key, err)
	}
	_, err = n.PutIfAbsent(ctxT(t, 5*time.Second), "orders", region.Entry{Key: "1", Value: val(`{"a":2}`)}, region.TTL{})
	var ce *region.ConflictError
	if !errors.As(err, &ce) || string(ce.Current) != `{"a":1}` {
		t.Fatalf("put-if-absent on existing key: got %v, want ConflictError with current {\"a\":1}", err)
	}
	if err := n.Put(ctxT(t, 5*time.Second), "nope", []region.Entry{{Key: "k", Value: val(`{}`)}}, region.TTL{}); !errors.Is(err, region.ErrRegionNotFound) {
		t.Fatalf("put to unknown region: got %v, want ErrRegionNotFound", err)
	}
}

func TestThreeNodesReplicateAndForward(t *testing.T) {
	tc := newTestCluster(t, 3)
	for _, name := range names("n", 3) {
		tc.start(name)
	}
	leader := tc.leader()
	if leader.name != "n0" && leader.Leader() == "" {
		t.Fatalf("no leader")
	}
	fs := tc.followers(leader)
	// A write on a follower is forwarded to the leader.
	mustCreate(t, fs[0], "r", region.Replicate)
	for i := 0; i < 20; i++ {
		mustPut(t, fs[i%2], "r", strconv.Itoa(i), fmt.Sprintf(`{"i":%d}`, i))
	}
	// Linearizable reads on every node see every acknowledged write.
	for _, n := range tc.nodes {
		for i := 0; i < 20; i++ {
			want := fmt.Sprintf(`{"i":%d}`, i)
			if got := getOne(t, n, region.Linearizable, "r", strconv.Itoa(i)); string(got) != want {
				t.Fatalf("%s: get %d = %s, want %s", n.name, i, got, want)
			}
		}
		c, err := n.Count(ctxT(t, 5*time.Second), region.Linearizable, "r")
		if err != nil || c != 20 {
			t.Fatalf("%s: count = %d, %v; want 20", n.name, c, err)
		}
	}
	voters, _ := tc.suffrage(leader)
	if !slices.Equal(voters, []string{"n0", "n1", "n2"}) {
		t.Fatalf("voters = %v, want [n0 n1 n2]", voters)
	}
}

// TestReadYourWritesEverywhere hammers writes through every node while each
// writer immediately reads its own write back through another node: a
// linearizable read must never miss an acknowledged write.
func TestReadYourWritesEverywhere(t *testing.T) {
	tc := newTestCluster(t, 3)
	for _, name := range names("n", 3) {
		tc.start(name)
	}
	leader := tc.leader()
	mustCreate(t, leader, "r", region.Replicate)
	nodes := []*testNode{tc.nodes["n0"], tc.nodes["n1"], tc.nodes["n2"]}
	var wg sync.WaitGroup
	errs := make(chan error, 16)
	for w := 0; w < 6; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			for i := 0; i < 25; i++ {
				key := fmt.Sprintf("w%d", w)
				v := fmt.Sprintf(`{"v":%d}`, i)
				writer, reader := nodes[(w+i)%3], nodes[(w+i+1)%3]
				if err := writer.Put(ctxT(t, 10*time.Second), "r", []region.Entry{{Key: key, Value: val(v)}}, region.TTL{}); err != nil {
					errs <- fmt.Errorf("put via %s: %w", writer.name, err)
					return
				}
				got, err := reader.Get(ctxT(t, 10*time.Second), region.Linearizable, "r", []string{key})
				if err != nil {
					errs <- fmt.Errorf("get via %s: %w", reader.name, err)
					return
				}
				if string(got[0]) != v {
					errs <- fmt.Errorf("read via %s after write via %s: got %s, want %s", reader.name, writer.name, got[0], v)
					return
				}
			}
		}(w)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

func TestLeaderCrashKeepsAcknowledgedWrites(t *testing.T) {
	tc := newTestCluster(t, 3)
	for _, name := range names("n", 3) {
		tc.start(name)
	}
	old := tc.leader()
	mustCreate(t, old, "r", region.Replicate)
	for i := 0; i < 50; i++ {
		mustPut(t, old, "r", strconv.Itoa(i), fmt.Sprintf(`{"i":%d}`, i))
	}
	tc.crash(old.name)
	leader := tc.leader()
	if leader == old {
		t.Fatalf("crashed node is still leader")
	}
	for i := 0; i < 50; i++ {
		want := fmt.Sprintf(`{"i":%d}`, i)
		if got := getOne(t, leader, region.Linearizable, "r", strconv.Itoa(i)); string(got) != want {
			t.Fatalf("after failover: get %d = %s, want %s", i, got, want)
		}
	}
	// Writes resume through both survivors.
	for _, n := range tc.followers(nil) {
		mustPut(t, n, "r", "after-"+n.name, `{"ok":true}`)
	}
	// The crashed node restarts from its data dir and catches up.
	restarted := tc.start(old.name)
	waitfor.Cond(t, 15*time.Second, "restarted node to catch up", func() bool {
		c, err := restarted.Count(ctxT(t, 5*time.Second), region.Stale, "r")
		return err == nil && c == 52
	})
	if got := getOne(t, restarted, region.Linearizable, "r", "7"); string(got) != `{"i":7}` {
		t.Fatalf("restarted node: get 7 = %s", got)
	}
}

func TestFourthNodeJoinsAsNonVoter(t *testing.T) {
	tc := newTestCluster(t, 3)
	for _, name := range names("n", 3) {
		tc.start(name)
	}
	leader := tc.leader()
	mustCreate(t, leader, "r", region.Replicate)
	for i := 0; i < 30; i++ {
		mustPut(t, leader, "r", strconv.Itoa(i), `{"x":1}`)
	}
	n3 := tc.start("n3")
	waitfor.Cond(t, 15*time.Second, "n3 to hold all data", func() bool {
		c, err := n3.Count(ctxT(t, 5*time.Second), region.Stale, "r")
		return err == nil && c == 30
	})
	waitfor.Cond(t, 10*time.Second, "n3 to be a non-voter", func() bool {
		voters, nonvoters := tc.suffrage(tc.leader())
		return len(voters) == 3 && slices.Equal(nonvoters, []string{"n3"})
	})
	// It serves linearizable reads and forwards writes.
	mustPut(t, n3, "r", "from-n3", `{"y":2}`)
	if got := getOne(t, tc.nodes["n0"], region.Linearizable, "r", "from-n3"); string(got) != `{"y":2}` {
		t.Fatalf("write via non-voter: read back %s", got)
	}
}

func TestFiveMembersGetFiveVoters(t *testing.T) {
	tc := newTestCluster(t, 3)
	for _, name := range names("n", 5) {
		tc.start(name)
	}
	waitfor.Cond(t, 20*time.Second, "5 voters", func() bool {
		voters, _ := tc.suffrage(tc.leader())
		return len(voters) == 5
	})
	// One leaves gracefully: it is removed and the voters shrink to 3.
	n4 := tc.nodes["n4"]
	// As a node's shutdown does it: gossip first, then Raft.
	tc.world.setStatus("n4", cluster.StatusLeft)
	if err := n4.Leave(ctxT(t, 10*time.Second)); err != nil {
		t.Fatalf("leave: %v", err)
	}
	_ = n4.Close()
	n4.Store = nil
	waitfor.Cond(t, 20*time.Second, "n4 removed and 3 voters", func() bool {
		voters, nonvoters := tc.suffrage(tc.leader())
		all := append(append([]string{}, voters...), nonvoters...)
		return len(voters) == 3 && !slices.Contains(all, "n4") && len(all) == 4
	})
}

func TestGracefulLeaderLeave(t *testing.T) {
	tc := newTestCluster(t, 3)
	for _, name := range names("n", 3) {
		tc.start(name)
	}
	old := tc.leader()
	mustCreate(t, old, "r", region.Replicate)
	mustPut(t, old, "r", "k", `{"v":1}`)
	tc.world.setStatus(old.name, cluster.StatusLeft)
	if err := old.Leave(ctxT(t, 10*time.Second)); err != nil {
		t.Fatalf("leave: %v", err)
	}
	_ = old.Close()
	old.Store = nil
	leader := tc.leader()
	voters, nonvoters := tc.suffrage(leader)
	if slices.Contains(voters, old.name) || slices.Contains(nonvoters, old.name) {
		t.Fatalf("left node %s still in configuration: voters %v nonvoters %v", old.name, voters, nonvoters)
	}
	if got := getOne(t, leader, region.Linearizable, "r", "k"); string(got) != `{"v":1}` {
		t.Fatalf("after leader left: %s", got)
	}
	// It can come back and is added again.
	back := tc.start(old.name)
	waitfor.Cond(t, 20*time.Second, "returning node to be a voter again", func() bool {
		voters, _ := tc.suffrage(tc.leader())
		return slices.Contains(voters, back.name)
	})
}

func TestDeadMemberRemovedAfterTimeout(t *testing.T) {
	tc := newTestCluster(t, 3)
	tc.tune = func(c *Config) { c.DeadMemberTimeout = 2 * time.Second }
	for _, name := range names("n", 4) {
		tc.start(name)
	}
	waitfor.Cond(t, 15*time.Second, "4 members in config", func() bool {
		v, nv := tc.suffrage(tc.leader())
		return len(v)+len(nv) == 4
	})
	victim := "n1"
	if tc.leader().name == victim {
		victim = "n2"
	}
	tc.crash(victim)
	waitfor.Cond(t, 20*time.Second, victim+" removed and 3 voters", func() bool {
		v, nv := tc.suffrage(tc.leader())
		return len(v) == 3 && len(nv) == 0 && !slices.Contains(v, victim)
	})
}

func TestNoLeaderAnswersUnavailable(t *testing.T) {
	tc := newTestCluster(t, 3)
	tc.tune = func(c *Config) { c.LeaderWait = 500 * time.Millisecond }
	for _, name := range names("n", 3) {
		tc.start(name)
	}
	leader := tc.leader()
	mustCreate(t, leader, "r", region.Replicate)
	fs := tc.followers(leader)
	tc.crash(fs[0].name)
	tc.crash(fs[1].name)
	start := time.Now()
	err := leader.Put(ctxT(t, 10*time.Second), "r", []region.Entry{{Key: "k", Value: val(`{}`)}}, region.TTL{})
	if !errors.Is(err, region.ErrNoLeader) && !errors.Is(err, region.ErrIndeterminate) {
		t.Fatalf("write without quorum: got %v, want ErrNoLeader or ErrIndeterminate", err)
	}
	_, err = leader.Get(ctxT(t, 10*time.Second), region.Linearizable, "r", []string{"k"})
	if !errors.Is(err, region.ErrNoLeader) {
		t.Fatalf("linearizable read without quorum: got %v, want ErrNoLeader", err)
	}
	if d := time.Since(start); d > 8*time.Second {
		t.Fatalf("answers without quorum took %v, want them bounded by LeaderWait", d)
	}
	// Stale reads still answer from the local copy.
	if _, err := leader.Get(ctxT(t, 5*time.Second), region.Stale, "r", []string{"k"}); err != nil {
		t.Fatalf("stale read without quorum: %v", err)
	}
}

func TestVoterTarget(t *testing.T) {
	for n, want := range map[int]int{0: 1, 1: 1, 2: 2, 3: 3, 4: 3, 5: 5, 9: 5} {
		if got := placement.VoterTarget(n); got != want {
			t.Errorf("VoterTarget(%d) = %d, want %d", n, got, want)
		}
	}
}

// TestCatchUpBySnapshot compacts the log so that a new member and a
// restarted one can only catch up through a snapshot (InstallSnapshot, then
// the FSM's Restore), and checks both end up with every entry.
func TestCatchUpBySnapshot(t *testing.T) {
	tc := newTestCluster(t, 3)
	tc.tune = func(c *Config) {
		c.Raft.SnapshotThreshold = 50
		c.Raft.TrailingLogs = 10
		c.Raft.SnapshotInterval = time.Hour // only the explicit snapshots below
	}
	for _, name := range names("n", 3) {
		tc.start(name)
	}
	leader := tc.leader()
	mustCreate(t, leader, "r", region.Replicate)
	const n = 300
	for i := 0; i < n; i++ {
		mustPut(t, leader, "r", fmt.Sprintf("k%03d", i), fmt.Sprintf(`{"i":%d}`, i))
	}
	follower := tc.followers(leader)[0]
	tc.crash(follower.name)
	for i := n; i < n+100; i++ {
		mustPut(t, leader, "r", fmt.Sprintf("k%03d", i), fmt.Sprintf(`{"i":%d}`, i))
	}
	for _, nd := range tc.followers(nil) {
		if err := nd.groups.control().Raft().Snapshot().Error(); err != nil {
			t.Fatalf("snapshot on %s: %v", nd.name, err)
		}
	}
	first, err := leader.groups.control().FirstIndex()
	if err != nil || first < 100 {
		t.Fatalf("leader log starts at %d (%v); want it compacted past the crashed follower's entries", first, err)
	}

	joiner := tc.start("n3")
	back := tc.start(follower.name)
	for _, nd := range []*testNode{joiner, back} {
		waitfor.Cond(t, 20*time.Second, nd.name+" to catch up from a snapshot", func() bool {
			c, err := nd.Count(ctxT(t, 5*time.Second), region.Stale, "r")
			return err == nil && c == n+100
		})
		keys, err := nd.Keys(ctxT(t, 5*time.Second), region.Stale, "r")
		if err != nil || len(keys) != n+100 || keys[0] != "k000" || keys[n+99] != "k399" {
			t.Fatalf("%s keys after snapshot: %d keys (%v)", nd.name, len(keys), err)
		}
	}
	// Generated keys continue from the snapshot's counter on every node.
	key, err := joiner.PutIfAbsent(ctxT(t, 5*time.Second), "r", region.Entry{Value: val(`{"gen":1}`)}, region.TTL{})
	if err != nil || key != "1" {
		t.Fatalf("generated key after snapshot = %q, %v; want \"1\"", key, err)
	}

	// A node restarted from its own snapshot and log has everything too.
	tc.crash(joiner.name)
	again := tc.start(joiner.name)
	waitfor.Cond(t, 20*time.Second, "restarted node to serve from its snapshot", func() bool {
		c, err := again.Count(ctxT(t, 5*time.Second), region.Stale, "r")
		return err == nil && c == n+101
	})
}
