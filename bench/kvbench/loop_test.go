package kvbench

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

func TestScheduleAt(t *testing.T) {
	start := time.Unix(1000, 0)
	s := schedule{start: start, rate: 1000}
	for i, want := range map[int64]time.Duration{0: 0, 1: time.Millisecond, 1500: 1500 * time.Millisecond} {
		if got := s.at(i).Sub(start); got != want {
			t.Errorf("rate 1000: op %d due at +%v, want +%v", i, got, want)
		}
	}
	// A rate that does not divide a second: no drift from rounding.
	s.rate = 3
	if got := s.at(3000).Sub(start); got != 1000*time.Second {
		t.Errorf("rate 3: op 3000 due at +%v, want +1000s", got)
	}
}

// countAbove is how many recorded latencies of t are at least d.
func countAbove(t *tally, d time.Duration) int64 {
	n := int64(0)
	for _, b := range t.hist.Distribution() {
		if b.From >= d.Microseconds() {
			n += b.Count
		}
	}
	return n
}

func instant(context.Context, int) outcome { return outcome{kind: opGet, class: done, entries: 1} }

// TestFixedRatePacing: a fixed rate sends about rate × duration
// operations, none before it is due.
func TestFixedRatePacing(t *testing.T) {
	var mu sync.Mutex
	var sends []time.Time
	op := func(ctx context.Context, c int) outcome {
		mu.Lock()
		sends = append(sends, time.Now())
		mu.Unlock()
		return instant(ctx, c)
	}
	rec := newRecorder(4)
	start := time.Now()
	runPhase(context.Background(), phase{clients: 4, rate: 200, duration: 500 * time.Millisecond, maxOps: 1000}, op, rec)
	total, _ := rec.tallies()
	if total.ok < 95 || total.ok > 101 {
		t.Errorf("200 ops/s for 0.5 s sent %d operations, want ~100", total.ok)
	}
	// Clients take due times in order; the i-th send is never before
	// the i-th due time (they sleep until it).
	sched := schedule{start: start, rate: 200}
	late := time.Duration(0)
	for i, s := range sends {
		d := s.Sub(sched.at(int64(i)))
		if d < 0 {
			t.Fatalf("operation %d sent %v before it was due", i, -d)
		}
		late = max(late, d)
	}
	if first := sends[0].Sub(start); first > 50*time.Millisecond {
		t.Errorf("first operation sent %v after the start", first)
	}
	if late > 250*time.Millisecond {
		t.Errorf("an operation went %v after it was due, with idle clients", late)
	}
}

// stallOnce answers at once, but for the n-th call, which takes d: a
// server that stalls.
func stallOnce(n int64, d time.Duration) func(context.Context, int) outcome {
	var calls atomic.Int64
	return func(ctx context.Context, c int) outcome {
		if calls.Add(1) == n {
			time.Sleep(d)
		}
		return instant(ctx, c)
	}
}

// TestCoordinatedOmission: one client at 200 ops/s meets a 300 ms stall.
// The ~60 operations due during the stall waited for it, and a fixed
// rate reports them so, measured from their due times: dozens of
// latencies over 100 ms. A closed loop (or a fixed rate timing from the
// actual send) sees one slow operation.
func TestCoordinatedOmission(t *testing.T) {
	const stall = 300 * time.Millisecond
	p := phase{clients: 1, rate: 200, duration: time.Second, maxOps: 10_000}
	rec := newRecorder(1)
	runPhase(context.Background(), p, stallOnce(20, stall), rec)
	total, _ := rec.tallies()
	if slow := countAbove(total, 100*time.Millisecond); slow < 30 {
		t.Errorf("fixed rate: %d of %d latencies ≥ 100 ms after a %v stall, want ≥ 30 (the operations that waited for it)", slow, total.ok, stall)
	}
	if total.ok < 190 {
		t.Errorf("fixed rate: %d operations in 1 s at 200/s: the schedule stretched instead of catching up", total.ok)
	}
	if p99 := time.Duration(total.hist.ValueAtQuantile(99)) * time.Microsecond; p99 < 200*time.Millisecond {
		t.Errorf("fixed rate: p99 %v after a %v stall, want ≥ 200ms", p99, stall)
	}

	p.rate = 0
	rec = newRecorder(1)
	runPhase(context.Background(), p, stallOnce(20, stall), rec)
	total, _ = rec.tallies()
	if slow := countAbove(total, 100*time.Millisecond); slow != 1 {
		t.Errorf("closed loop: %d latencies ≥ 100 ms, want the 1 stalled operation", slow)
	}
}

// TestPhaseBounds: every loop ends at its operation count or its
// duration, whichever comes first.
func TestPhaseBounds(t *testing.T) {
	rec := newRecorder(3)
	t0 := time.Now()
	runPhase(context.Background(), phase{clients: 3, duration: time.Minute, maxOps: 50}, instant, rec)
	total, _ := rec.tallies()
	if total.ok != 50 || time.Since(t0) > 5*time.Second {
		t.Errorf("maxOps 50: %d operations in %v", total.ok, time.Since(t0))
	}

	slow := func(ctx context.Context, c int) outcome { time.Sleep(time.Millisecond); return instant(ctx, c) }
	for _, rate := range []float64{0, 1e6} {
		rec = newRecorder(3)
		t0 = time.Now()
		res := runPhase(context.Background(), phase{clients: 3, rate: rate, duration: 200 * time.Millisecond, maxOps: 1 << 40}, slow, rec)
		if took := time.Since(t0); took > 2*time.Second || res.elapsed < 150*time.Millisecond {
			t.Errorf("rate %g, duration 200ms: ran %v (measured %v)", rate, took, res.elapsed)
		}
		// A million a second for 0.2 s is 200,000 due; three clients
		// taking 1 ms each sent at most 600 of them.
		total, _ := rec.tallies()
		if rate > 0 && (res.unsent < 199_000 || res.unsent+total.ok != 200_000) {
			t.Errorf("rate %g: %d sent, %d unsent; want the 200,000 due split between them", rate, total.ok, res.unsent)
		}
		if rate == 0 && res.unsent != 0 {
			t.Errorf("closed loop: %d unsent", res.unsent)
		}
	}

	// An interrupt ends the loop too.
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	t0 = time.Now()
	runPhase(ctx, phase{clients: 2, rate: 1, duration: time.Hour, maxOps: 1 << 40}, instant, newRecorder(2))
	if took := time.Since(t0); took > 2*time.Second {
		t.Errorf("cancelled after 100ms, ran %v", took)
	}
}
