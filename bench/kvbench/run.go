package kvbench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

// Output says where a run writes.
type Output struct {
	// Results receives each point's result when it is measured: the text
	// summary, or one line of JSON with JSON set.
	Results io.Writer
	JSON    bool
	// Progress, when not nil, receives a line a second while a point runs
	// (elapsed time, ops/s over the last second, errors so far) and the
	// setup's steps.
	Progress io.Writer
}

// Run validates cfg, dials its target, prepares the run (the target's
// setup, then the preload), then measures each point of the sweep in turn
// (warm-up, then the measured phase), writing each result as it comes. It
// returns the results so far, and stops early when ctx ends.
func Run(ctx context.Context, cfg Config, dial Dial, out Output) ([]Result, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if cfg.Workload == Watch {
		return nil, errors.New("the watch workload is run by package watchbench, not kvbench.Run")
	}
	t, err := dial(&cfg, slices.Max(cfg.Concurrency))
	if err != nil {
		return nil, fmt.Errorf("target %s: %w", cfg.Target, err)
	}
	defer t.Close()
	if err := checkTarget(&cfg, t.Client(0)); err != nil {
		return nil, err
	}
	b := &bench{cfg: &cfg, out: out, target: t, run: strconv.FormatInt(time.Now().UnixNano(), 36)}
	if err := b.setup(ctx); err != nil {
		return nil, err
	}
	var results []Result
	for i, clients := range cfg.Concurrency {
		if ctx.Err() != nil {
			break
		}
		r := b.point(ctx, i, clients)
		results = append(results, r)
		if out.Results != nil {
			if out.JSON {
				err = r.WriteJSON(out.Results)
			} else {
				err = r.WriteText(out.Results)
			}
			if err != nil {
				return results, err
			}
		}
	}
	return results, ctx.Err()
}

// bench is one run's state between its points.
type bench struct {
	cfg        *Config
	out        Output
	target     Target
	run        string // the run's id, in fresh keys
	regionType string
}

func (b *bench) logf(format string, args ...any) {
	if b.out.Progress != nil {
		fmt.Fprintf(b.out.Progress, "kvbench: "+format+"\n", args...)
	}
}

// setup prepares the target, then preloads the key space (all workloads
// but put-if-absent, which writes fresh keys, and load, which writes them).
func (b *bench) setup(ctx context.Context) error {
	cfg := b.cfg
	p, err := b.target.Prepare(ctx, b.logf)
	if err != nil {
		return err
	}
	b.regionType = p.RegionType
	if cfg.Preload && cfg.Workload != PutIfAbsent && cfg.Workload != Load {
		t0 := time.Now()
		if err := preload(ctx, cfg, b.target, min(slices.Max(cfg.Concurrency), 8)); err != nil {
			return err
		}
		b.logf("preloaded %d keys into %s in %v", cfg.Keys, cfg.Region, time.Since(t0).Round(time.Millisecond))
	}
	return nil
}

// point measures one point of the sweep: clients clients, after the
// warm-up.
func (b *bench) point(ctx context.Context, index, clients int) Result {
	cfg := b.cfg
	workers := make([]*worker, clients)
	next := new(atomic.Int64)
	for c := range workers {
		workers[c] = newWorker(c, index, cfg, b.target.Client(c), b.run)
		workers[c].next = next
	}
	op := func(ctx context.Context, c int) outcome { return workers[c].op(ctx) }
	p := phase{clients: clients, rate: cfg.Rate, duration: cfg.Warmup, maxOps: cfg.MaxOps}
	if cfg.Workload == Load {
		p.maxOps = min(p.maxOps, int64((cfg.Keys+cfg.Batch-1)/cfg.Batch))
	}
	if cfg.Warmup > 0 {
		rec := newRecorder(clients)
		stop := b.progress(rec, fmt.Sprintf("%s c=%d warm-up", cfg.Workload, clients))
		runPhase(ctx, p, op, rec)
		stop()
	}
	p.duration = cfg.Duration
	rec := newRecorder(clients)
	routes, _ := b.target.(RouteCounter)
	if routes != nil {
		routes.TakeRouted()
	}
	stop := b.progress(rec, fmt.Sprintf("%s c=%d", cfg.Workload, clients))
	pr := runPhase(ctx, p, op, rec)
	stop()
	r := describe(cfg, b.regionType, clients)
	if routes != nil {
		r.LeaderRouted = routes.TakeRouted()
	}
	r.Unsent = pr.unsent
	total, byKind := rec.tallies()
	r.measured(pr.elapsed, total, byKind)
	return r
}

// progress writes a line a second about rec's phase until stopped.
func (b *bench) progress(rec *recorder, what string) (stop func()) {
	if b.out.Progress == nil {
		return func() {}
	}
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		start := time.Now()
		tick := time.NewTicker(time.Second)
		defer tick.Stop()
		var last int64
		lastAt := start
		for {
			select {
			case <-done:
				return
			case now := <-tick.C:
				n := rec.finished.Load()
				rate := float64(n-last) / now.Sub(lastAt).Seconds()
				last, lastAt = n, now
				fmt.Fprintf(b.out.Progress, "kvbench: %s %5.0fs %10s ops/s %8d errors\n",
					what, now.Sub(start).Seconds(), Thousands(rate), rec.errs.Load())
			}
		}
	}()
	return func() { close(done); wg.Wait() }
}
