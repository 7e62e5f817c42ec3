package chaos

import (
	"context"
	"time"
)

// Timing of the nemeses: a quiet spell, then a fault held for a while.
const (
	quiet = 3 * time.Second
	hold  = 5 * time.Second
)

// Scenarios are the nemeses, in the order the runs take them. Each one
// keeps at most one member of three faulty at a time, except crash-all
// and power-loss-all.
func Scenarios() []Scenario {
	return []Scenario{
		{Name: "none", Doc: "no faults: the baseline, and the check for elections nobody asked for under load", Nemesis: func(ctx context.Context, r *Run) { <-ctx.Done() }},
		{Name: "kill-leader", Doc: "SIGKILL the leader (alternately of the control group and of the most partition groups), restart it 5 s later", Nemesis: killLeader},
		{Name: "kill-follower", Doc: "SIGKILL a member that leads nothing (with four groups on three members, usually one that leads only partition groups: never the control group's leader), restart it 5 s later", Nemesis: killFollower},
		{Name: "pause-leader", Doc: "SIGSTOP the leader for 5 s, then SIGCONT: it wakes up believing it leads", Nemesis: pauseLeader},
		{Name: "isolate-leader", Doc: "blackhole every link of the leader in both directions for 5 s; clients still reach it, and it must not acknowledge", Nemesis: isolateLeader},
		{Name: "partition", Doc: "split the cluster into {1} and {2} around a random member for 5 s", Nemesis: partitionRandom},
		{Name: "one-way", Doc: "drop everything the leader sends to the others for 5 s, while it still hears them", Nemesis: oneWay, NeedsLinkFaults: true},
		{Name: "rolling-restart", Doc: "SIGTERM each member in turn (it hands its leaderships over and stays a member), start it again, wait until ready", Nemesis: rollingRestart},
		{Name: "crash-all", Doc: "SIGKILL every member at once, restart all; no acknowledged write may be lost", Nemesis: crashAll},
		{Name: "power-loss", Doc: "cut the power of one member (alternately the leader and a random member): SIGKILL, and its file system loses every write and directory change it had not fsynced; restart it 5 s later", Nemesis: powerLoss, NeedsPowerFaults: true},
		{Name: "power-loss-all", Doc: "cut the power of every member at once, restart all; no acknowledged write may be lost (a quorum fsynced it)", Nemesis: powerLossAll, NeedsPowerFaults: true},
		{Name: "random", Doc: "every 2-5 s a random fault (kill, pause, isolate, one-way cut, 200 ms delay) on a random member, one member at a time", Nemesis: randomFaults},
		{Name: "rebalance", Doc: "every 1.5-3 s grow the partition groups by one or two (PATCH /management/v1/partitions, from 3 up to 12) or start a rebalance (POST, one time in four and at the cap), and while buckets move (or, one time in three, with the request sent during it) one fault on a random member (SIGKILL and restart, SIGSTOP/SIGCONT, or isolation) held 2-5 s; a refused request is logged, not a failure, but once healed the table must have the groups last accepted, no operation may stay IN_PROGRESS and the buckets must be even within 60 s", Nemesis: rebalanceFaults, Moves: true},
	}
}

// ScenarioNamed finds a scenario.
func ScenarioNamed(name string) (Scenario, bool) {
	for _, s := range Scenarios() {
		if s.Name == name {
			return s, true
		}
	}
	return Scenario{}, false
}

// cycles repeats, until ctx ends, a quiet spell, a fault on the member
// pick names (none when it names -1) held for a while, and its undoing.
func cycles(ctx context.Context, r *Run, pick func() int, inject, undo func(i int)) {
	for r.Sleep(ctx, quiet) && r.Left(ctx) > hold+2*time.Second {
		i := pick()
		if i < 0 {
			continue
		}
		inject(i)
		r.Sleep(ctx, hold)
		undo(i)
		r.WaitReady()
	}
}

func killLeader(ctx context.Context, r *Run) {
	cycles(ctx, r, func() int { return r.Leader(ctx) }, func(i int) { r.Kill(ctx, i) }, r.Start)
}

func killFollower(ctx context.Context, r *Run) {
	cycles(ctx, r, func() int { return r.Follower(ctx) }, func(i int) { r.Kill(ctx, i) }, r.Start)
}

func pauseLeader(ctx context.Context, r *Run) {
	cycles(ctx, r, func() int { return r.Leader(ctx) }, func(i int) { r.Pause(ctx, i) }, r.Resume)
}

func isolateLeader(ctx context.Context, r *Run) {
	cycles(ctx, r, func() int { return r.Leader(ctx) }, func(i int) { r.Isolate(ctx, i) }, func(int) { r.Heal() })
}

func partitionRandom(ctx context.Context, r *Run) {
	cycles(ctx, r, func() int { return r.Rand().IntN(r.B.Size()) }, func(i int) { r.Isolate(ctx, i) }, func(int) { r.Heal() })
}

func oneWay(ctx context.Context, r *Run) {
	cut := func(i int) {
		if err := r.CutOutgoing(ctx, i); err != nil {
			r.fail("one-way cut: %v", err)
		}
	}
	cycles(ctx, r, func() int { return r.Leader(ctx) }, cut, func(int) { r.Heal() })
}

func rollingRestart(ctx context.Context, r *Run) {
	for i := 0; r.Sleep(ctx, quiet) && r.Left(ctx) > hold; i = (i + 1) % r.B.Size() {
		r.Stop(ctx, i)
		r.Start(i)
		r.WaitReady()
	}
}

func crashAll(ctx context.Context, r *Run) {
	for r.Sleep(ctx, 2*quiet) && r.Left(ctx) > hold {
		for i := range r.B.Size() {
			r.Kill(ctx, i)
		}
		r.Sleep(ctx, time.Second)
		for i := range r.B.Size() {
			r.Start(i)
		}
		r.WaitReady()
	}
}

func randomFaults(ctx context.Context, r *Run) {
	for r.Sleep(ctx, time.Duration(1000+r.Rand().IntN(2000))*time.Millisecond) && r.Left(ctx) > hold+2*time.Second {
		i := r.Rand().IntN(r.B.Size())
		d := time.Duration(2000+r.Rand().IntN(3000)) * time.Millisecond
		switch r.Rand().IntN(5) {
		case 0:
			r.Kill(ctx, i)
			r.Sleep(ctx, d)
			r.Start(i)
		case 1:
			r.Pause(ctx, i)
			r.Sleep(ctx, d)
			r.Resume(i)
		case 2:
			r.Isolate(ctx, i)
			r.Sleep(ctx, d)
			r.Heal()
		case 3:
			if err := r.CutOutgoing(ctx, i); err != nil {
				continue // the backend cannot; pick again
			}
			r.Sleep(ctx, d)
			r.Heal()
		case 4:
			if err := r.Slow(ctx, i, 200); err != nil {
				continue
			}
			r.Sleep(ctx, d)
			r.Heal()
		}
		r.WaitReady()
	}
}
