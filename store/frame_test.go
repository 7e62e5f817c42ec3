package store

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/kvnode/kvnode/fsm/codec"
	"github.com/kvnode/kvnode/internal/waitfor"
	"github.com/kvnode/kvnode/oql"
	"github.com/kvnode/kvnode/partition"
	"github.com/kvnode/kvnode/region"
	"github.com/kvnode/kvnode/store/raftgroup"
	"github.com/kvnode/kvnode/store/transport"
)

// bigValue is a JSON object of about n bytes.
func bigValue(n int) json.RawMessage {
	return json.RawMessage(`{"pad":"` + strings.Repeat("x", n) + `"}`)
}

// TestForwardedCommandIsDecodedBeforeTheLog: a forwarded command that does
// not decode (a body cut at a frame limit, a peer's bug) is refused before
// it reaches Raft, whether it is sent to the leader or handed on by a
// member. It used to be appended as it was, and every replica panicked
// when it applied it, and again at every restart.
func TestForwardedCommandIsDecodedBeforeTheLog(t *testing.T) {
	tc := newTestCluster(t, 3)
	for _, name := range names("n", 3) {
		tc.start(name)
	}
	leader := tc.leader()
	mustCreate(t, leader, "r", region.Replicate)
	follower := tc.followers(leader)[0]
	ctx := ctxT(t, 20*time.Second)

	good := (&codec.Command{Op: codec.OpPut, Region: "r", Entries: []region.Entry{{Key: "k", Value: bigValue(1000)}}}).Encode(nil)
	bad := map[string][]byte{
		"cut in half": good[:len(good)/2],
		"garbage":     {9, 9, 9},
		"empty":       {},
	}
	for what, cmd := range bad {
		for _, via := range []struct {
			node    *testNode
			forward bool
		}{{leader, false}, {follower, true}} {
			_, err := follower.client.apply(ctx, via.node.addr, controlGroup, cmd, via.forward)
			if !errors.Is(err, raftgroup.ErrBadCommand) {
				t.Errorf("%s command sent to %s: %v; want it refused as malformed", what, via.node.name, err)
			}
		}
	}
	// Nothing reached the log: every replica still applies writes.
	if err := follower.Put(ctx, "r", []region.Entry{{Key: "after", Value: json.RawMessage(`{"ok":1}`)}}, region.TTL{}); err != nil {
		t.Fatalf("write after the refused commands: %v", err)
	}
	for _, n := range tc.running() {
		if err := n.groups.control().Halted(); err != nil {
			t.Errorf("%s: group 0 halted: %v", n.name, err)
		}
	}
	// The well-formed command is accepted.
	if _, err := follower.client.apply(ctx, leader.addr, controlGroup, good, false); err != nil {
		t.Errorf("well-formed forwarded command: %v", err)
	}
}

// TestFrameLimitFollowsTheBodyLimit: a command larger than the frame limit
// is refused as too large (413) on every node, leader or not, and nothing is
// written; a command just under it is forwarded whole.
func TestFrameLimitFollowsTheBodyLimit(t *testing.T) {
	const maxBody = 1 << 20
	tc := newTestCluster(t, 3)
	tc.tune = func(c *Config) { c.MaxFrameBytes = transport.FrameLimit(maxBody) }
	for _, name := range names("n", 3) {
		tc.start(name)
	}
	leader := tc.leader()
	mustCreate(t, leader, "r", region.Replicate)
	ctx := ctxT(t, 30*time.Second)

	for _, n := range tc.running() {
		err := n.Put(ctx, "r", []region.Entry{{Key: "big-" + n.name, Value: bigValue(int(transport.FrameLimit(maxBody)) + 10)}}, region.TTL{})
		if !errors.Is(err, region.ErrTooLarge) {
			t.Errorf("over-limit put through %s: %v; want ErrTooLarge", n.name, err)
		}
	}
	// A body of the largest accepted size goes through any node.
	for _, n := range tc.followers(leader) {
		if err := n.Put(ctx, "r", []region.Entry{{Key: "max-" + n.name, Value: bigValue(maxBody - 20)}}, region.TTL{}); err != nil {
			t.Errorf("put of a %d-byte body through follower %s: %v", maxBody, n.name, err)
		}
	}
	keys := []string{"big-n1", "big-n2", "big-n3", "max-" + tc.followers(leader)[0].name}
	vals, err := leader.Get(ctx, region.Linearizable, "r", keys)
	if err != nil {
		t.Fatal(err)
	}
	for i, v := range vals[:3] {
		if v != nil {
			t.Errorf("%s was stored (%d bytes) although refused", keys[i], len(v))
		}
	}
	if len(vals[3]) < maxBody-20 {
		t.Errorf("%s: %d bytes stored, want the whole value", keys[3], len(vals[3]))
	}
}

// TestRPCAnswerIsNeverCut: an answer longer than the frame limit is an
// error, never the first limit bytes of it (which used to be returned as if
// complete), and one of exactly the limit is read whole.
func TestRPCAnswerIsNeverCut(t *testing.T) {
	const limit = 1 << 20
	serve := func(n int) string {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { ln.Close() })
		go func() {
			for {
				c, err := ln.Accept()
				if err != nil {
					return
				}
				go func() {
					defer c.Close()
					br := bufio.NewReader(c)
					hdr := make([]byte, 2) // the mux header of an RPC connection
					if _, err := io.ReadFull(br, hdr); err != nil {
						return
					}
					req, err := http.ReadRequest(br)
					if err != nil {
						return
					}
					_, _ = io.Copy(io.Discard, req.Body)
					fmt.Fprintf(c, "HTTP/1.1 200 OK\r\nContent-Length: %d\r\nConnection: close\r\n\r\n", n)
					_, _ = c.Write(bytes.Repeat([]byte("a"), n))
				}()
			}
		}()
		return ln.Addr().String()
	}
	c := newRPCClient(&transport.Dialer{Net: &net.Dialer{Timeout: time.Second}}, limit)
	defer c.Close()
	ctx := ctxT(t, 10*time.Second)

	data, err := c.Call(ctx, "GET", serve(limit), "/v1/status", nil)
	if err != nil || len(data) != limit {
		t.Errorf("answer of exactly the limit: %d bytes, %v; want all %d", len(data), err, limit)
	}
	data, err = c.Call(ctx, "GET", serve(limit+1), "/v1/status", nil)
	if !errors.Is(err, region.ErrTooLarge) {
		t.Errorf("answer one byte over the limit: %d bytes, %v; want ErrTooLarge", len(data), err)
	}
	// A read whose answer is too large is not retried elsewhere: it is
	// refused as too large.
	rt := &Router{client: c}
	_, err = rt.Call(ctx, serve(limit+1), 1, "read", []byte(`{"op":"get","region":"r","keys":["k"]}`))
	if !errors.Is(err, region.ErrTooLarge) || retryableRead(err) {
		t.Errorf("read with an over-limit answer: %v; want ErrTooLarge, not retried", err)
	}
}

// TestLargeRemoteAnswersAreRefusedWhole: a multi-key GET and a query of a
// partitioned region answered by a member that hosts the group, for a node
// that does not, are refused as too large when the answer is over the frame
// limit, instead of being cut.
func TestLargeRemoteAnswersAreRefusedWhole(t *testing.T) {
	const maxBody = 1 << 20
	tc := partitionCluster(t, 4, 4, 2, func(c *Config) { c.MaxFrameBytes = transport.FrameLimit(maxBody) })
	leader := tc.leader()
	ctx := ctxT(t, 60*time.Second)

	// A group and the keys written to it.
	const gid = 1
	var keys []string
	for i := 0; len(keys) < 3; i++ {
		if k := fmt.Sprintf("k%d", i); partition.GroupForKey(k, 4) == gid {
			keys = append(keys, k)
		}
	}
	for _, k := range keys {
		// Placement may still be moving leaders: a PUT is idempotent, so
		// retry one whose outcome was unknown.
		for try := 0; ; try++ {
			err := leader.Put(ctx, "p", []region.Entry{{Key: k, Value: bigValue(maxBody * 9 / 10)}}, region.TTL{})
			if err == nil {
				break
			}
			if try == 5 || (!errors.Is(err, region.ErrIndeterminate) && !errors.Is(err, region.ErrNoLeader)) {
				t.Fatalf("put %s: %v", k, err)
			}
		}
	}
	// A node that does not host the group (placement settles first: with 4
	// members and RF 2 each hosts two of the four groups).
	var outsider *testNode
	waitfor.Cond(t, 30*time.Second, "a node that does not host group 1, and placement settled", func() bool {
		outsider = nil
		for _, n := range tc.running() {
			if tbl, _, ok := n.router.view.get(); !ok || len(tbl.Groups) != 4 {
				return false
			}
			if n.groups.get(gid) == nil && n.router.view.localFor(gid) == nil {
				outsider = n
			}
		}
		counts := tc.hostedCounts(t)
		for _, c := range counts {
			if c != 2 {
				return false
			}
		}
		return outsider != nil
	})
	sizes := func(vals []json.RawMessage) []int {
		out := make([]int, len(vals))
		for i, v := range vals {
			out[i] = len(v)
		}
		return out
	}
	// Two values fit in one answer; three do not.
	if vals, err := outsider.Get(ctx, region.Linearizable, "p", keys[:2]); err != nil || len(vals) != 2 || len(vals[0]) < maxBody*9/10 || len(vals[1]) < maxBody*9/10 {
		t.Fatalf("GET of two values through %s: sizes %v, %v", outsider.name, sizes(vals), err)
	}
	if vals, err := outsider.Get(ctx, region.Linearizable, "p", keys); !errors.Is(err, region.ErrTooLarge) {
		t.Errorf("GET of three values through %s: sizes %v, %v; want ErrTooLarge", outsider.name, sizes(vals), err)
	}
	q, err := outsider.CompileQuery("SELECT * FROM /p")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := outsider.Query(ctx, region.Linearizable, q, nil, queryOpts()); !errors.Is(err, region.ErrTooLarge) {
		t.Errorf("query of three large values through %s: %v; want ErrTooLarge", outsider.name, err)
	}
	if outsider.groups.get(gid) != nil {
		t.Fatalf("%s started hosting group %d during the test: placement moved", outsider.name, gid)
	}
}

// TestHaltedGroupStopsOnlyThatGroup: a committed entry that no replica can
// decode (as a cut command was, or a newer peer's format) stops that group
// on every member, without taking any node down; the other groups keep
// serving; /readyz (Ready) names the group and the entry; and after a
// restart of every member, the replay stops at the same entry again instead
// of panicking.
func TestHaltedGroupStopsOnlyThatGroup(t *testing.T) {
	const p = 3
	tc := partitionCluster(t, 3, p, 3, nil)
	ctx := ctxT(t, 90*time.Second)

	const poisoned uint64 = 1
	var g *raftgroup.Group
	waitfor.Cond(t, 10*time.Second, "the leader of group 1", func() bool {
		for _, n := range tc.running() {
			if lg := n.groups.get(poisoned); lg != nil && lg.IsLeader() {
				g = lg
				return true
			}
		}
		return false
	})
	// Straight into the log, past raftgroup's Apply check: what an older build
	// could have written.
	if err := g.Raft().Apply([]byte{9, 9, 9}, 5*time.Second).Error(); err != nil {
		t.Fatalf("append the poison entry: %v", err)
	}
	// The leader halts when it applies the entry and stops the group's
	// Raft; the two others elect a new leader, whose first commit applies
	// the entry, and it halts too. The last replica alone has no quorum:
	// the group serves nothing, and no write is ever applied after the
	// entry anywhere.
	checkHalted := func() {
		t.Helper()
		waitfor.Cond(t, 30*time.Second, "group 1 halted on two members, and their /readyz saying so", func() bool {
			halted := 0
			for _, n := range tc.running() {
				lg := n.groups.get(poisoned)
				if lg == nil || lg.Halted() == nil {
					continue
				}
				err := n.Ready(ctx)
				if err == nil || !strings.Contains(err.Error(), "raft group 1 stopped at log entry") {
					return false
				}
				halted++
			}
			return halted >= 2
		})
		var mine, other string
		for i := 0; mine == "" || other == ""; i++ {
			k := fmt.Sprintf("o%d", i)
			if partition.GroupForKey(k, p) == poisoned {
				mine = k
			} else {
				other = k
			}
		}
		for _, n := range tc.running() {
			if err := n.Put(ctx, "p", []region.Entry{{Key: other, Value: json.RawMessage(`{"n":1}`)}}, region.TTL{}); err != nil {
				t.Errorf("write to a healthy group through %s: %v", n.name, err)
			}
		}
		wctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		err := tc.running()[0].Put(wctx, "p", []region.Entry{{Key: mine, Value: json.RawMessage(`{"n":1}`)}}, region.TTL{})
		if !errors.Is(err, region.ErrNoLeader) && !errors.Is(err, region.ErrIndeterminate) && !errors.Is(err, region.ErrNotLeader) {
			t.Errorf("write to the halted group: %v; want a 503 error", err)
		}
	}
	checkHalted()

	for _, n := range tc.running() {
		tc.crash(n.name)
	}
	for _, name := range names("n", 3) {
		tc.start(name)
	}
	tc.leader()
	checkHalted()
}

// queryOpts are the options a REST query uses, for store tests.
func queryOpts() oql.Options { return oql.Options{MaxRows: 100000} }

// TestLargeCommandIsStaged: a command over stageAbove travels as chunks of
// codec.StageChunkBytes plus a commit (one 100 MiB entry used to cost every
// follower seconds of quadratic decoding, and the leader its lease), and is
// applied whole on every replica.
func TestLargeCommandIsStaged(t *testing.T) {
	tc := newTestCluster(t, 3)
	tc.tune = func(c *Config) { c.MaxFrameBytes = transport.FrameLimit(64 << 20) }
	for _, name := range names("n", 3) {
		tc.start(name)
	}
	leader := tc.leader()
	mustCreate(t, leader, "r", region.Replicate)
	ctx := ctxT(t, 60*time.Second)
	v := bigValue(9 << 20)
	before := leader.groups.control().Raft().LastIndex()
	// A PUT is idempotent: one whose outcome is unknown (a loaded machine
	// under -race can cost a leader its lease) is sent again.
	for try := 1; ; try++ {
		err := tc.followers(leader)[0].Put(ctx, "r", []region.Entry{{Key: "big", Value: v}}, region.TTL{})
		if err == nil {
			break
		}
		if try == 3 || !(errors.Is(err, region.ErrIndeterminate) || errors.Is(err, region.ErrNoLeader)) {
			t.Fatalf("9 MiB put through a follower, try %d: %v", try, err)
		}
		leader = tc.leader()
	}
	if n := leader.groups.control().Raft().LastIndex() - before; n < 10 {
		t.Errorf("the 9 MiB put took %d log entries, want 9 chunks and a commit", n)
	}
	for _, n := range tc.running() {
		vals, err := n.Get(ctx, region.Linearizable, "r", []string{"big"})
		if err != nil || !bytes.Equal(vals[0], v) {
			t.Errorf("%s: %d bytes, %v; want the 9 MiB value", n.name, len(vals[0]), err)
		}
	}
}
