package store

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/raft"

	"github.com/kvnode/kvnode/internal/waitfor"
	"github.com/kvnode/kvnode/region"
	"github.com/kvnode/kvnode/store/raftgroup"
)

// The stale-heartbeat read of docs/chaos.md, without chaos timing: a
// leader (n2, term T) is cut off while one AppendEntries it sent to n0 has
// been answered "success" by n0 but the answer has not reached it yet (a
// SIGSTOP'd leader finds such an answer waiting in its socket when it
// wakes). n0 and n1 elect a new leader in a later term, which acknowledges
// a newer value. Then n2, which still believes it leads, serves a
// linearizable read: a read-index round records its applied index and
// confirms leadership while that old answer is delivered.
//
// hashicorp/raft 1.7.3's VerifyLeader counts the old answer as a vote
// (it counts every successful answer processed after the call, whatever
// request it answers), so the round confirms and the read returns the
// overwritten value. confirmLeadership asks every voter for its term with
// fresh requests, hears the later term, and refuses.
//
// Nothing here depends on timing. The cut-off leader's messages are held
// or refused by the members' wrapped transports (cutNetwork) under the test's
// control; its answer from n0 is released only after the confirmation has
// provably begun: raft sends a heartbeat to n0 only when VerifyLeader asks
// for one (n2's heartbeat timeout is an hour, so none comes on its own
// during the test), and the verification is registered with n0's
// replication before that heartbeat is triggered. n2's leader lease is an
// hour too, so it cannot step down on its own while the test runs; the
// other members use the usual test timeouts.
func TestDeposedLeaderRead(t *testing.T) {
	t.Run("confirmLeadership refuses it", func(t *testing.T) {
		res := deposedLeaderRead(t, func(s *Store) raftgroup.ConfirmFunc { return s.router.confirmLeadership })
		if !errors.Is(res.err, region.ErrNotLeader) || !strings.Contains(res.err.Error(), "after this leader's") {
			t.Fatalf("read on the deposed leader = %s, %v; want ErrNotLeader naming the later term (the newer value %s was acknowledged)",
				res.value, res.err, res.acked)
		}
	})
	// The same scenario with the confirmation the read index used before
	// (raft.VerifyLeader): the stale read goes through. This is what makes
	// the case above a test of the fix: if this stops holding (a
	// hashicorp/raft that no longer counts old answers, or a scenario that
	// no longer produces one), the case above proves nothing.
	t.Run("VerifyLeader lets it through", func(t *testing.T) {
		verify := func(*Store) raftgroup.ConfirmFunc {
			return func(g *raftgroup.Group, _ uint64) error { return g.Raft().VerifyLeader().Error() }
		}
		res := deposedLeaderRead(t, verify)
		if res.err != nil || string(res.value) != `{"v":1}` {
			t.Fatalf("read on the deposed leader with VerifyLeader = %s, %v; want the stale {\"v\":1} served (after %s was acknowledged)",
				res.value, res.err, res.acked)
		}
	})
}

// readResult is what the deposed leader's read returned.
type readResult struct {
	value json.RawMessage
	err   error
	acked string // the newer value the new leader acknowledged before the read
}

// deposedLeaderRead plays the scenario with the read index's confirmation
// step taken from confirm, and returns what the read on the deposed leader
// gave.
func deposedLeaderRead(t *testing.T, confirm func(*Store) raftgroup.ConfirmFunc) readResult {
	t.Helper()
	tc := newTestCluster(t, 3)
	network := newCutNetwork()
	tc.tune = func(c *Config) {
		c.PartitionGroups = 1
		c.Raft.WrapTransport = network.wrap(c.NodeName)
		if c.NodeName != "n2" {
			return
		}
		// n2 never stands for election on its own, never sends a heartbeat
		// unless asked, and never steps down for lack of contact while the
		// test runs; it leads only because leadership is handed to it.
		c.Raft = raftgroup.Config{
			HeartbeatTimeout:   time.Hour,
			ElectionTimeout:    time.Hour,
			LeaderLeaseTimeout: time.Hour,
			CommitTimeout:      5 * time.Millisecond,
			WrapTransport:      c.Raft.WrapTransport,
		}
	}
	for _, name := range names("n", 3) {
		tc.start(name)
	}
	// Registered after the cluster's cleanup, so it runs first: Raft's
	// shutdown waits for the calls the network still holds.
	t.Cleanup(network.end)
	n0, n1, n2 := tc.nodes["n0"], tc.nodes["n1"], tc.nodes["n2"]

	// Hand leadership to n2, again if an attempt fails (the transfer
	// itself is bounded by the current leader's election timeout).
	waitfor.Cond(t, 30*time.Second, "n2 to take the control group's leadership", func() bool {
		for _, n := range []*testNode{n0, n1} {
			if n.IsLeader() {
				_ = n.groups.control().Raft().LeadershipTransferToServer("n2", raft.ServerAddress(n2.addr)).Error()
			}
		}
		return n2.IsLeader()
	})
	g := n2.groups.control()
	mustCreate(t, n2, "r", region.Replicate)
	mustPut(t, n2, "r", "k", `{"v":1}`)
	// A linearizable read on n2: its read index is ready in this term (a
	// barrier), so the round below needs no new entry committed.
	if _, err := n2.Get(ctxT(t, 10*time.Second), region.Linearizable, "r", []string{"k"}); err != nil {
		t.Fatalf("read on n2: %v", err)
	}
	term := g.Raft().CurrentTerm()

	// Cut n2 off, keeping n0's answer to its next AppendEntries.
	network.cut("n2", "n0")
	select {
	case <-network.heldAnswer:
	case <-time.After(20 * time.Second):
		t.Fatal("n0 never answered an AppendEntries of n2 with success after the cut")
	}

	// n0 and n1 elect a leader in a later term, which acknowledges v2.
	waitfor.Cond(t, 20*time.Second, "n0 and n1 to elect a new leader", func() bool {
		l := n0.Leader()
		return l != "" && l != "n2" && l == n1.Leader() && n0.groups.control().Raft().CurrentTerm() > term
	})
	const acked = `{"v":2}`
	mustPut(t, n0, "r", "k", acked)
	if !n2.IsLeader() || g.Raft().CurrentTerm() != term {
		t.Fatalf("n2 no longer believes it leads term %d: the scenario needs a deposed leader that does", term)
	}

	// The read on n2, with the confirmation under test.
	ri := raftgroup.NewReadIndexer(g, confirm(n2.Store))
	done := make(chan readResult, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		if _, err := ri.ReadIndex(ctx); err != nil {
			done <- readResult{err: err, acked: acked}
			return
		}
		v, err := g.FSM().Get("r", 0, "k")
		done <- readResult{value: v, err: err, acked: acked}
	}()
	heartbeat := network.heartbeatTo("n0")
	deadline := time.After(30 * time.Second)
	for {
		select {
		case res := <-done:
			network.releaseAnswer()
			return res
		case <-heartbeat:
			// The confirmation asked raft for a heartbeat to n0: now the
			// old answer arrives.
			heartbeat = nil
			network.releaseAnswer()
		case <-deadline:
			t.Fatal("the read on n2 neither finished nor asked n0 for a heartbeat within 30 s")
		}
	}
}

// errCut is what messages across the cut meet.
var errCut = errors.New("test: the network is cut")

// cutNetwork sits in the control group's transport of every member
// (cutNetwork.wrap) and, once one member is cut off, decides the fate of
// every message to or from it: the next replication answer from one peer
// is received but held back until the test releases it; every other
// AppendEntries the cut member sends is lost (the call waits, as one whose
// packets are dropped, until the test ends); any other request from it,
// and every request to it, fails at once. Heartbeats the cut member tries
// are reported per peer. Pipelining is off, so every AppendEntries passes
// through here. When the test ends, the network heals: waiting calls fail
// and later ones go through, so the members shut down as usual.
type cutNetwork struct {
	mu       sync.Mutex
	isolated raft.ServerID // the cut-off member; "" before the cut
	holdFrom raft.ServerID // the peer whose answer is held
	holding  bool
	hbTo     map[raft.ServerID]chan struct{}
	hbSeen   map[raft.ServerID]bool
	released bool
	endOnce  sync.Once

	heldAnswer chan struct{} // closed once an answer is held
	release    chan struct{} // closed: the held answer is returned
	ended      chan struct{} // closed: the network heals
}

func newCutNetwork() *cutNetwork {
	return &cutNetwork{
		hbTo:       map[raft.ServerID]chan struct{}{},
		hbSeen:     map[raft.ServerID]bool{},
		heldAnswer: make(chan struct{}),
		release:    make(chan struct{}),
		ended:      make(chan struct{}),
	}
}

// wrap is a raftgroup.Config.WrapTransport for member self: the control group's
// transport goes through the network, the others' do not.
func (n *cutNetwork) wrap(self string) func(uint64, raft.Transport) raft.Transport {
	return func(gid uint64, tr raft.Transport) raft.Transport {
		if gid != controlGroup {
			return tr
		}
		return &cutTransport{Transport: tr, net: n, self: raft.ServerID(self)}
	}
}

// cut cuts member off; the next successful replication answer it gets
// from peer is held.
func (n *cutNetwork) cut(member, peer raft.ServerID) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.isolated, n.holdFrom = member, peer
}

// across reports whether a message between from and to crosses the cut.
func (n *cutNetwork) across(from, to raft.ServerID) bool {
	select {
	case <-n.ended:
		return false
	default:
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.isolated != "" && (from == n.isolated || to == n.isolated)
}

// heartbeatTo returns a channel closed at the first heartbeat the cut
// member tries to send to peer.
func (n *cutNetwork) heartbeatTo(peer raft.ServerID) <-chan struct{} {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.hbChan(peer)
}

func (n *cutNetwork) hbChan(peer raft.ServerID) chan struct{} {
	ch, ok := n.hbTo[peer]
	if !ok {
		ch = make(chan struct{})
		n.hbTo[peer] = ch
	}
	return ch
}

// releaseAnswer delivers the held answer.
func (n *cutNetwork) releaseAnswer() {
	n.mu.Lock()
	defer n.mu.Unlock()
	if !n.released {
		n.released = true
		close(n.release)
	}
}

// end heals the network.
func (n *cutNetwork) end() { n.endOnce.Do(func() { close(n.ended) }) }

// cutTransport is one member's control group transport in a cutNetwork.
type cutTransport struct {
	raft.Transport
	net  *cutNetwork
	self raft.ServerID
}

// isHeartbeat is how raft's NetworkTransport tells a heartbeat.
func isHeartbeat(req *raft.AppendEntriesRequest) bool {
	return req.PrevLogEntry == 0 && req.PrevLogTerm == 0 && len(req.Entries) == 0 && req.LeaderCommitIndex == 0
}

func (t *cutTransport) AppendEntries(id raft.ServerID, target raft.ServerAddress, req *raft.AppendEntriesRequest, resp *raft.AppendEntriesResponse) error {
	n := t.net
	if !n.across(t.self, id) {
		return t.Transport.AppendEntries(id, target, req, resp)
	}
	n.mu.Lock()
	if id == n.isolated {
		n.mu.Unlock()
		return errCut // to the cut member: refused at once
	}
	hold := id == n.holdFrom && !n.holding && !isHeartbeat(req)
	if isHeartbeat(req) && !n.hbSeen[id] {
		n.hbSeen[id] = true
		close(n.hbChan(id))
	}
	n.mu.Unlock()
	if hold {
		// Delivered and answered now; the answer reaches raft only when
		// the test releases it.
		err := t.Transport.AppendEntries(id, target, req, resp)
		if err != nil || !resp.Success || resp.Term != req.Term {
			return err // not the answer the scenario needs; the next call tries again
		}
		n.mu.Lock()
		n.holding = true
		n.mu.Unlock()
		close(n.heldAnswer)
		select {
		case <-n.release:
			return nil
		case <-n.ended:
			return errCut
		}
	}
	<-n.ended // lost
	return errCut
}

func (t *cutTransport) AppendEntriesPipeline(raft.ServerID, raft.ServerAddress) (raft.AppendPipeline, error) {
	return nil, raft.ErrPipelineReplicationNotSupported
}

func (t *cutTransport) RequestVote(id raft.ServerID, target raft.ServerAddress, req *raft.RequestVoteRequest, resp *raft.RequestVoteResponse) error {
	if t.net.across(t.self, id) {
		return errCut
	}
	return t.Transport.RequestVote(id, target, req, resp)
}

func (t *cutTransport) RequestPreVote(id raft.ServerID, target raft.ServerAddress, req *raft.RequestPreVoteRequest, resp *raft.RequestPreVoteResponse) error {
	if t.net.across(t.self, id) {
		return errCut
	}
	return t.Transport.(raft.WithPreVote).RequestPreVote(id, target, req, resp)
}

func (t *cutTransport) InstallSnapshot(id raft.ServerID, target raft.ServerAddress, req *raft.InstallSnapshotRequest, resp *raft.InstallSnapshotResponse, data io.Reader) error {
	if t.net.across(t.self, id) {
		return errCut
	}
	return t.Transport.InstallSnapshot(id, target, req, resp, data)
}

func (t *cutTransport) TimeoutNow(id raft.ServerID, target raft.ServerAddress, req *raft.TimeoutNowRequest, resp *raft.TimeoutNowResponse) error {
	if t.net.across(t.self, id) {
		return errCut
	}
	return t.Transport.TimeoutNow(id, target, req, resp)
}
