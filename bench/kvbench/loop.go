package kvbench

import (
	"context"
	"math"
	"sync"
	"sync/atomic"
	"time"
)

// phase is one bounded load loop: clients in flight, for at most duration
// and at most maxOps operations, in a closed loop (rate 0) or at a fixed
// rate.
type phase struct {
	clients  int
	rate     float64
	duration time.Duration
	maxOps   int64
}

// schedule is a fixed rate's timetable: operation i (numbered from 0 in
// the order clients take them) is due at start + i/rate.
type schedule struct {
	start time.Time
	rate  float64
}

func (s schedule) at(i int64) time.Time {
	return s.start.Add(time.Duration(float64(i) / s.rate * float64(time.Second)))
}

// runPhase runs op on p.clients goroutines and records every outcome in
// rec; it returns the time from the start to the last completion, and at a
// fixed rate how many operations due were never sent.
//
// In a closed loop each client sends its next operation when the last one
// is answered, and an operation's latency runs from its send.
//
// At a fixed rate, operations are numbered as clients take them and each
// is due at its time in the schedule; a client sleeps until then. When
// every client is busy past an operation's due time (the cluster is slower
// than the rate), the operation is sent late, and its latency still runs
// from the time it was due: the wait counts, as it would for a user whose
// request arrived then. Measuring from the actual send instead would hide
// a stall behind the few operations that happened to be in flight
// (coordinated omission). Clients bound what is in flight; the schedule
// does not stretch.
//
// Either way no operation starts at or after the phase's end (at a fixed
// rate, one due before the end but not sent by then is counted as unsent),
// and no more than p.maxOps start; ctx's end (an interrupt) stops the
// clients too.
func runPhase(ctx context.Context, p phase, op func(ctx context.Context, client int) outcome, rec *recorder) phaseResult {
	start := time.Now()
	end := start.Add(p.duration)
	sched := schedule{start: start, rate: p.rate}
	var tickets atomic.Int64
	var last atomic.Int64 // nanoseconds after start of the last completion
	var sent atomic.Int64
	var wg sync.WaitGroup
	for c := 0; c < p.clients; c++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ctx.Err() == nil {
				i := tickets.Add(1) - 1
				if i >= p.maxOps {
					return
				}
				var due time.Time
				if p.rate > 0 {
					due = sched.at(i)
					if !due.Before(end) || !SleepUntil(ctx, due) || !time.Now().Before(end) {
						return
					}
				} else if due = time.Now(); !due.Before(end) {
					return
				}
				sent.Add(1)
				o := op(ctx, c)
				now := time.Now()
				rec.record(c, o, now.Sub(due))
				storeMax(&last, int64(now.Sub(start)))
				if o.class == failed && o.errKind == "transport" {
					// No answer at all (refused, reset): a dead endpoint is not
					// hammered in a tight loop.
					time.Sleep(time.Millisecond)
				}
			}
		}()
	}
	wg.Wait()
	res := phaseResult{elapsed: time.Duration(last.Load())}
	if p.rate > 0 {
		due := min(p.maxOps, int64(math.Ceil(p.duration.Seconds()*p.rate)))
		res.unsent = max(due-sent.Load(), 0)
	}
	return res
}

// phaseResult is what a phase measured besides its outcomes.
type phaseResult struct {
	// elapsed runs from the start to the last completion.
	elapsed time.Duration
	// unsent counts, at a fixed rate, the operations due before the end
	// that no client was free to send: the cluster fell behind the rate.
	unsent int64
}

// SleepUntil waits until t, or returns false when ctx ends first.
func SleepUntil(ctx context.Context, t time.Time) bool {
	d := time.Until(t)
	if d <= 0 {
		return ctx.Err() == nil
	}
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case <-timer.C:
		return true
	case <-ctx.Done():
		return false
	}
}

func storeMax(a *atomic.Int64, v int64) {
	for {
		cur := a.Load()
		if v <= cur || a.CompareAndSwap(cur, v) {
			return
		}
	}
}
