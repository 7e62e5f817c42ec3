package chaos

import (
	"context"
	"strings"
	"time"
)

// PowerCut cuts the power of members at once (backend.Cluster.PowerCut):
// each is recorded as a "power-loss" fault with what it led just before,
// so failover is measured from the cut.
func (r *Run) PowerCut(ctx context.Context, members ...int) {
	evs := make([]FaultEvent, len(members))
	for k, i := range members {
		evs[k] = r.prepare(ctx, "power-loss", i)
	}
	lost, err := r.B.PowerCut(members...)
	for _, l := range lost {
		r.Logf("power cut lost %s", l)
	}
	for k := range members {
		r.commit(evs[k])
	}
	if err != nil {
		names := make([]string, len(members))
		for k, i := range members {
			names[k] = r.B.Name(i)
		}
		r.fail("power-loss %s: %v", strings.Join(names, ","), err)
	}
	// Down even after a failed cut, so that the members are started again
	// (a member the cut did not kill refuses the start, which fails the
	// run as it should).
	r.mu.Lock()
	for _, i := range members {
		r.down[i] = true
	}
	r.mu.Unlock()
}

// powerLoss cuts one member's power, alternately a leader (see
// Run.Leader) and a member picked at random, and brings it back after a
// while on what its disk kept.
func powerLoss(ctx context.Context, r *Run) {
	n := 0
	pick := func() int {
		n++
		if n%2 == 1 {
			return r.Leader(ctx)
		}
		return r.Rand().IntN(r.B.Size())
	}
	cycles(ctx, r, pick, func(i int) { r.PowerCut(ctx, i) }, r.Start)
}

// powerLossAll cuts every member's power at once and starts them all
// again: an acknowledged write was fsynced by a quorum, so it is on some
// member's disk, and the log that holds it must win the elections.
func powerLossAll(ctx context.Context, r *Run) {
	all := make([]int, r.B.Size())
	for i := range all {
		all[i] = i
	}
	for r.Sleep(ctx, 2*quiet) && r.Left(ctx) > hold {
		r.PowerCut(ctx, all...)
		r.Sleep(ctx, time.Second)
		for i := range all {
			r.Start(i)
		}
		r.WaitReady()
	}
}
