package reconcile

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/hashicorp/raft"

	"github.com/kvnode/kvnode/partition"
	"github.com/kvnode/kvnode/region"
)

// drainSelfRemoveAfter is how long a leaving member waits for the groups'
// leaders to move its replicas before it removes itself from groups it
// still leads.
const drainSelfRemoveAfter = 5 * time.Second

// Drain waits, bounded by ctx, until this member is no longer in any
// partition group; it runs once the member has left the control group.
// Leaving the control group takes it out of the placement, and the
// groups' leaders first add a replacement replica (when a member is left
// to take it), then remove this one. Without the wait, a member that
// leaves takes a replica with it at once, and two members leaving
// together (a StatefulSet scaled down by two) could take two of a group's
// three voters, with writes only they had acknowledged.
//
// This member's copy of the partition table stops changing once it has
// left the control group, so it must not lead the move: it hands
// leadership of its groups to members that see the new table.
func (r *Reconciler) Drain(ctx context.Context) error {
	start, lastReport := time.Now(), time.Now()
	transferred := map[uint64]time.Time{}
	var lastAsked time.Time
	out := map[uint64]bool{} // groups whose leader no longer counts us
	for {
		if time.Since(lastAsked) > time.Second {
			lastAsked = time.Now()
			for gid := range r.removedByLeaders(ctx) {
				out[gid] = true
			}
		}
		var inside []uint64
		for _, g := range r.host.Groups() {
			if out[g.ID()] || g.ID() == partition.ControlGroup || !g.HasState() {
				continue
			}
			conf, err := g.Configuration()
			if err != nil {
				continue
			}
			member := false
			for _, srv := range conf.Servers {
				if string(srv.ID) == r.cfg.Self {
					member = true
				}
			}
			if !member {
				continue
			}
			inside = append(inside, g.ID())
			if !g.IsLeader() {
				continue
			}
			if time.Since(start) > drainSelfRemoveAfter && voters(conf) > 1 {
				// Still leading with a stale table: take this replica out
				// directly. Safe while we are alive: the change commits on
				// the remaining voters, which then hold every write.
				r.logger.Info("removing this replica from a partition group it still leads", "group", g.ID())
				if err := r.await(g.Raft().RemoveServer(raft.ServerID(r.cfg.Self), 0, 5*time.Second)); err != nil {
					r.logger.Debug("self-removal while draining", "group", g.ID(), "error", err)
				}
				continue
			}
			if time.Since(transferred[g.ID()]) > 2*time.Second {
				transferred[g.ID()] = time.Now()
				if err := r.await(g.Raft().LeadershipTransfer()); err != nil {
					r.logger.Debug("leadership transfer while draining", "group", g.ID(), "error", err)
				}
			}
		}
		if len(inside) == 0 {
			r.logger.Info("partition replicas moved away", "took", time.Since(start).Round(time.Millisecond))
			return nil
		}
		if time.Since(lastReport) > 2*time.Second {
			lastReport = time.Now()
			r.logger.Info("waiting for partition replicas to move away", "groups", inside, "waited", time.Since(start).Round(time.Millisecond))
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("leave: partition groups %v still count on this member: %w", inside, ctx.Err())
		case <-r.stop:
			return region.ErrShuttingDown
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// removedByLeaders asks every alive member for its status and returns the
// partition groups whose leader has committed a configuration without this
// member. A member removed from a group may never hear of it: the leader
// stops replicating to it as soon as it appends the change, and its
// best-effort last send can fail; its own copy of the configuration then
// names it for ever (seen: TestScaleDownTwoAtOnce waited 30 s for such a
// group).
func (r *Reconciler) removedByLeaders(ctx context.Context) map[uint64]bool {
	out := map[uint64]bool{}
	for _, m := range r.trustedMembers() {
		if m.Name == r.cfg.Self {
			continue
		}
		cctx, cancel := context.WithTimeout(ctx, 500*time.Millisecond)
		name, groups, err := r.host.Status(cctx, m.InternalAddr)
		cancel()
		if err != nil || name != m.Name {
			continue
		}
		for _, gs := range groups {
			if gs.ID == partition.ControlGroup || gs.State != raft.Leader.String() || gs.CommitIndex < gs.ConfigIndex {
				continue
			}
			if !slices.Contains(gs.Voters, r.cfg.Self) && !slices.Contains(gs.NonVoters, r.cfg.Self) {
				out[gs.ID] = true
			}
		}
	}
	return out
}

// voters counts conf's voters.
func voters(conf raft.Configuration) int {
	n := 0
	for _, srv := range conf.Servers {
		if srv.Suffrage == raft.Voter {
			n++
		}
	}
	return n
}
