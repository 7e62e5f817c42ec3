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

// leaderRefresh is how often --route leader asks again who leads.
const leaderRefresh = 5 * time.Second

// Run validates cfg, sets the run up (region, named query, preload),
// then measures each point of the sweep in turn (warm-up, then the
// measured phase), writing each result as it comes. It returns the
// results so far, and stops early when ctx ends.
func Run(ctx context.Context, cfg Config, out Output) ([]Result, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if cfg.Workload == Watch {
		return nil, errors.New("the watch workload is run by package watchbench, not kvbench.Run")
	}
	b := &bench{cfg: &cfg, out: out, run: strconv.FormatInt(time.Now().UnixNano(), 36)}
	var err error
	if b.tx, err = newTransport(&cfg, slices.Max(cfg.Concurrency)); err != nil {
		return nil, err
	}
	defer b.tx.close()
	if err := b.setup(ctx); err != nil {
		return nil, err
	}
	if cfg.Route == Leader {
		stop := b.refreshLeaders(ctx)
		defer stop()
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
	tx         *transport
	run        string // the run's id, in fresh keys
	regionType string
	query      *queryPlan
}

func (b *bench) logf(format string, args ...any) {
	if b.out.Progress != nil {
		fmt.Fprintf(b.out.Progress, "kvbench: "+format+"\n", args...)
	}
}

func (b *bench) setup(ctx context.Context) error {
	cfg := b.cfg
	if cfg.CreateRegion != "" {
		if err := b.createRegion(ctx); err != nil {
			return err
		}
	}
	var err error
	if b.regionType, err = b.lookupRegion(ctx); err != nil {
		return err
	}
	if cfg.Route == Leader {
		if err := b.findLeaders(ctx); err != nil {
			return err
		}
	}
	if cfg.Workload == Query {
		b.query = newQueryPlan(cfg)
		if cfg.NamedQuery {
			if err := b.storeQuery(ctx); err != nil {
				return err
			}
		}
	}
	if cfg.Preload && cfg.Workload != PutIfAbsent && cfg.Workload != Load {
		t0 := time.Now()
		if err := preload(ctx, cfg, b.tx, min(slices.Max(cfg.Concurrency), 8)); err != nil {
			return err
		}
		b.logf("preloaded %d keys into %s in %v", cfg.Keys, cfg.Region, time.Since(t0).Round(time.Millisecond))
	}
	return nil
}

// leaderWait bounds the wait for every group to have a leader, as a
// cluster just started has not yet.
const leaderWait = 10 * time.Second

// findLeaders makes the first leader map, waiting up to leaderWait for a
// leader in every group; the keys of a group still without one go round
// robin until a refresh finds it.
func (b *bench) findLeaders(ctx context.Context) error {
	deadline := time.Now().Add(leaderWait)
	for {
		lm, err := b.fetchLeaders(ctx)
		if err != nil {
			return fmt.Errorf("--route leader: %w", err)
		}
		b.tx.leaders.Store(lm)
		n := lm.unknown()
		if n == 0 {
			return nil
		}
		if !time.Now().Before(deadline) || !SleepUntil(ctx, time.Now().Add(250*time.Millisecond)) {
			if lm.partitioned {
				b.logf("leader routing: %d of %d buckets have no leader yet; their keys go round robin until one is elected", n, len(lm.bucketURL))
			} else {
				b.logf("leader routing: the control group has no leader yet; keys go round robin until one is elected")
			}
			return nil
		}
	}
}

// refreshLeaders asks who leads every leaderRefresh until stopped; a
// failed look keeps the map it has.
func (b *bench) refreshLeaders(ctx context.Context) (stop func()) {
	ctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		tick := time.NewTicker(leaderRefresh)
		defer tick.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
				if lm, err := b.fetchLeaders(ctx); err == nil {
					b.tx.leaders.Store(lm)
				} else if ctx.Err() == nil {
					b.logf("leader routing: %v (keeping the last map)", err)
				}
			}
		}
	}()
	return func() { cancel(); wg.Wait() }
}

// point measures one point of the sweep: clients clients, after the
// warm-up.
func (b *bench) point(ctx context.Context, index, clients int) Result {
	cfg := b.cfg
	workers := make([]*worker, clients)
	next := new(atomic.Int64)
	for c := range workers {
		workers[c] = newWorker(c, index, cfg, b.tx, b.query, b.run)
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
	b.tx.routed.Store(0)
	stop := b.progress(rec, fmt.Sprintf("%s c=%d", cfg.Workload, clients))
	pr := runPhase(ctx, p, op, rec)
	stop()
	r := describe(cfg, b.regionType, clients)
	r.LeaderRouted = b.tx.routed.Load()
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
