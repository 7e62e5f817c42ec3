package reconcile

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

// Applied is how far other members have applied their groups: member
// name → group ID → applied index.
type Applied map[string]map[uint64]uint64

// HandOver gives the leadership of every group this member leads (the
// control group and partition groups alike) to another voter, before the
// member stops, so that the groups never wait for an election timeout:
// with a leader that just stops, every write to its groups waits for the
// followers' election timeout and the election after it. The groups are
// handed over in parallel, each to the live voter that has applied the
// most of it (raft then brings that voter fully up to date before it
// takes over, and the entries in flight commit under the new leader),
// bounded by ctx. A group without another live voter keeps its leader.
func (r *Reconciler) HandOver(ctx context.Context) error {
	var led []*raftgroup.Group
	for _, g := range r.host.Groups() {
		if g.IsLeader() {
			led = append(led, g)
		}
	}
	if len(led) == 0 {
		return nil
	}
	start := time.Now()
	applied := r.applied(ctx)
	errs := make([]error, len(led))
	handed := make([]bool, len(led))
	var wg sync.WaitGroup
	for i, g := range led {
		wg.Go(func() { handed[i], errs[i] = r.handOver(ctx, g, applied) })
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
		r.logger.Info("handed over the leadership of this member's groups", "handed_over", n, "failed", failed,
			"kept", len(led)-n-failed, "took", time.Since(start).Round(time.Millisecond))
	}
	return errors.Join(errs...)
}

// handOver hands g's leadership to the best voter, trying the next one
// when a target does not take over. It reports whether it handed it over;
// a group without another live voter keeps its leader (and no error).
func (r *Reconciler) handOver(ctx context.Context, g *raftgroup.Group, applied Applied) (bool, error) {
	start := time.Now()
	var tried []string
	var last error
	for attempt := 0; attempt < handOverAttempts && g.IsLeader(); attempt++ {
		conf, err := g.Configuration()
		if err != nil {
			return false, err
		}
		target, ok := handOverTarget(conf, r.cfg.Self, g.ID(), applied, tried)
		if !ok {
			if len(tried) > 0 {
				break
			}
			r.logger.Debug("no other live voter to hand leadership to; the group keeps this leader until it stops", "group", g.ID())
			return false, nil
		}
		tried = append(tried, string(target.ID))
		f := g.Raft().LeadershipTransferToServer(target.ID, target.Address)
		// Raft answers once the target has won its election (nil), or
		// after an election timeout when it has not.
		last = raftgroup.Await(f, raftgroup.InternalTimeout, r.stop)
		if last == nil || !g.IsLeader() {
			leader := r.awaitOtherLeader(ctx, g)
			r.logger.Info("handed over leadership", "group", g.ID(), "to", leader, "term", g.Status().Term,
				"took", time.Since(start).Round(time.Millisecond))
			return true, nil
		}
		r.logger.Warn("leadership handover did not complete; trying another voter", "group", g.ID(), "to", string(target.ID), "error", last)
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
func (r *Reconciler) awaitOtherLeader(ctx context.Context, g *raftgroup.Group) string {
	deadline := time.Now().Add(2 * time.Second)
	for {
		ch := g.LeaderChanged()
		if id, _ := g.Leader(); (id != "" && id != r.cfg.Self) || time.Now().After(deadline) {
			return id
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return ""
		case <-r.stop:
			return ""
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// applied asks every other live member, in parallel, how far it has
// applied each of its groups. Members that do not answer (down, or
// stopping: their status RPC refuses) or answer under another name (a
// restarted container on a shuffled address) are left out: they are no
// place for leadership.
func (r *Reconciler) applied(ctx context.Context) Applied {
	out := Applied{}
	var mu sync.Mutex
	var wg sync.WaitGroup
	for _, m := range r.trustedMembers() {
		if m.Name == r.cfg.Self {
			continue
		}
		wg.Go(func() {
			cctx, cancel := context.WithTimeout(ctx, time.Second)
			defer cancel()
			name, groups, err := r.host.Status(cctx, m.InternalAddr)
			if err != nil || name != m.Name {
				return
			}
			idx := map[uint64]uint64{}
			for _, gs := range groups {
				idx[gs.ID] = gs.AppliedIndex
			}
			mu.Lock()
			out[m.Name] = idx
			mu.Unlock()
		})
	}
	wg.Wait()
	return out
}

// handOverTarget picks, among conf's voters other than self and those
// already tried, the one in applied that has applied the most of group
// gid: it has the least to catch up before it can take over. Ties go to
// the smaller name, so the choice is deterministic.
func handOverTarget(conf raft.Configuration, self string, gid uint64, applied Applied, tried []string) (raft.Server, bool) {
	var best raft.Server
	var bestIdx uint64
	found := false
	for _, srv := range conf.Servers {
		id := string(srv.ID)
		if srv.Suffrage != raft.Voter || id == self || slices.Contains(tried, id) {
			continue
		}
		idx, hosts := applied[id][gid]
		if !hosts {
			continue
		}
		if !found || idx > bestIdx || (idx == bestIdx && id < string(best.ID)) {
			best, bestIdx, found = srv, idx, true
		}
	}
	return best, found
}
