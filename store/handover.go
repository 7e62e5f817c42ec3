package store

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/hashicorp/raft"

	"github.com/kvnode/kvnode/store/raftgroup"
)

// handOverAttempts is how many voters a group's leadership is offered to
// before HandOver gives up on that group (each attempt is bounded by
// raft's election timeout: a target that does not take over by then is
// skipped).
const handOverAttempts = 3

// HandOver gives the leadership of every group this member leads (the
// control group and partition groups alike) to another voter, before the
// member stops, so that the groups never wait for an election timeout:
// with a leader that just stops, every write to its groups waits for the
// followers' election timeout and the election after it. The groups are
// handed over in parallel, each to its most up-to-date live voter (raft
// then brings that voter fully up to date before it takes over, and the
// entries in flight commit under the new leader), bounded by ctx.
//
// From the first call the member reports itself stopping (NodeStatus,
// Ready): the leaders of its groups then neither promote it nor hand it
// their leadership, and /readyz answers 503. The member stays a member:
// a restart is not a leave (Leave is). HandOver may be called again, for
// a group whose leadership came back meanwhile; a group without another
// voter keeps its leader.
func (s *Store) HandOver(ctx context.Context) error {
	s.stopping.Store(true)
	var led []*raftgroup.Group
	for _, g := range s.groups.sorted() {
		if g.IsLeader() {
			led = append(led, g)
		}
	}
	if len(led) == 0 {
		return nil
	}
	start := time.Now()
	progress := s.peerProgress(ctx)
	errs := make([]error, len(led))
	handed := make([]bool, len(led))
	var wg sync.WaitGroup
	for i, g := range led {
		wg.Go(func() { handed[i], errs[i] = s.handOver(ctx, g, progress) })
	}
	wg.Wait()
	n, failed := 0, 0
	for i := range led {
		if handed[i] {
			n++
		}
		if errs[i] != nil {
			failed++
		}
	}
	if n+failed > 0 {
		s.logger.Info("handed over the leadership of this member's groups", "handed_over", n, "failed", failed,
			"kept", len(led)-n-failed, "took", time.Since(start).Round(time.Millisecond))
	}
	return errors.Join(errs...)
}

// handOver hands g's leadership to the best voter, trying the next one
// when a target does not take over. It reports whether it handed it over;
// a group without another live voter keeps its leader (and no error).
func (s *Store) handOver(ctx context.Context, g *raftgroup.Group, progress map[string]map[uint64]uint64) (bool, error) {
	start := time.Now()
	var tried []string
	var last error
	for attempt := 0; attempt < handOverAttempts && g.IsLeader(); attempt++ {
		conf, err := g.Configuration()
		if err != nil {
			return false, err
		}
		target, ok := handOverTarget(conf, s.name, g.ID(), progress, tried)
		if !ok {
			if len(tried) > 0 {
				break
			}
			s.logger.Debug("no other live voter to hand leadership to; the group keeps this leader until it stops", "group", g.ID())
			return false, nil
		}
		tried = append(tried, string(target.ID))
		f := g.Raft().LeadershipTransferToServer(target.ID, target.Address)
		// Raft answers once the target has won its election (nil), or
		// after an election timeout when it has not.
		last = raftgroup.Await(f, raftgroup.InternalTimeout, s.stop)
		if last == nil || !g.IsLeader() {
			leader := s.awaitOtherLeader(ctx, g)
			s.logger.Info("handed over leadership", "group", g.ID(), "to", leader, "term", g.Status().Term,
				"took", time.Since(start).Round(time.Millisecond))
			return true, nil
		}
		s.logger.Warn("leadership handover did not complete; trying another voter", "group", g.ID(), "to", string(target.ID), "error", last)
		if ctx.Err() != nil {
			break
		}
	}
	if !g.IsLeader() {
		return true, nil
	}
	if last == nil {
		last = ctx.Err()
	}
	return false, fmt.Errorf("group %d: leadership not handed over (tried %v): %w", g.ID(), tried, last)
}

// awaitOtherLeader waits briefly, bounded by ctx, until g knows its new
// leader, and returns it ("" when none is known yet).
func (s *Store) awaitOtherLeader(ctx context.Context, g *raftgroup.Group) string {
	deadline := time.Now().Add(2 * time.Second)
	for {
		ch := g.LeaderChanged()
		if id, _ := g.Leader(); (id != "" && id != s.name) || time.Now().After(deadline) {
			return id
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return ""
		case <-s.stop:
			return ""
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// peerProgress asks every other live member, in parallel, how far it has
// applied each of its groups. Members that do not answer, answer under
// another name (a restarted container on a shuffled address) or are
// stopping themselves are left out: they are no place for leadership.
func (s *Store) peerProgress(ctx context.Context) map[string]map[uint64]uint64 {
	out := map[string]map[uint64]uint64{}
	var mu sync.Mutex
	ctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	var wg sync.WaitGroup
	for name, addr := range s.router.view.internalAddrs() {
		if name == s.name {
			continue
		}
		wg.Go(func() {
			ns, err := s.client.status(ctx, addr)
			if err != nil || ns.Name != name || ns.Stopping {
				return
			}
			applied := map[uint64]uint64{}
			for _, gs := range ns.Groups {
				applied[gs.ID] = gs.AppliedIndex
			}
			mu.Lock()
			out[name] = applied
			mu.Unlock()
		})
	}
	wg.Wait()
	return out
}

// handOverTarget picks, among conf's voters other than self and those
// already tried, the one that answered peerProgress and has applied the
// most of group gid: it has the least to catch up before it can take
// over. Ties go to the smaller name, so the choice is deterministic.
func handOverTarget(conf raft.Configuration, self string, gid uint64, progress map[string]map[uint64]uint64, tried []string) (raft.Server, bool) {
	var best raft.Server
	var bestIdx uint64
	found := false
	for _, srv := range conf.Servers {
		id := string(srv.ID)
		if srv.Suffrage != raft.Voter || id == self || slices.Contains(tried, id) {
			continue
		}
		groups, live := progress[id]
		if !live {
			continue
		}
		idx, hosts := groups[gid]
		if !hosts {
			continue
		}
		if !found || idx > bestIdx || (idx == bestIdx && id < string(best.ID)) {
			best, bestIdx, found = srv, idx, true
		}
	}
	return best, found
}
