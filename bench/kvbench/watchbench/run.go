package watchbench

import (
	"context"
	"errors"
	"fmt"
	"math"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/kvnode/kvnode/bench/kvbench"
	"github.com/kvnode/kvnode/client"
)

// fileSlack is the files besides the watchers' sockets: writers' and
// metrics' connections, the binary, standard streams.
const fileSlack = 64

// maxDialing bounds the watchers connecting at once, so that a thousand
// do not all land in the member's accept queue in the same millisecond.
const maxDialing = 64

// Run validates cfg, opens cfg.Watchers watches on the first endpoint and
// waits until each has its `ready` event, then writes at cfg.Rate for
// cfg.Duration, waits (at most cfg.DrainTimeout) for every watcher to
// receive every acknowledged write, closes the watches and reports. The
// member's /metrics is read before the watchers connect, once they are
// live, every cfg.SampleEvery while the writes flow (the peak) and after
// they closed. The result is written to out as it is returned.
func Run(ctx context.Context, cfg Config, out kvbench.Output) (Result, error) {
	if err := cfg.Validate(); err != nil {
		return Result{}, err
	}
	tg, err := newTarget(&cfg)
	if err != nil {
		return Result{}, err
	}
	r := &runner{cfg: &cfg, out: out, run: strconv.FormatInt(time.Now().UnixNano(), 36), auth: cfg.Authorization(), lat: newLatencies(), target: tg}
	if note, err := raiseFileLimit(uint64(cfg.Watchers + cfg.Concurrency[0] + fileSlack)); err != nil {
		return Result{}, err
	} else if note != "" {
		r.logf("%s", note)
	}
	if err := r.clients(); err != nil {
		return Result{}, err
	}
	defer r.writeHC.CloseIdleConnections()
	res, err := r.measure(ctx)
	if err != nil {
		return res, err
	}
	if out.Results != nil {
		if out.JSON {
			err = res.WriteJSON(out.Results)
		} else {
			err = res.WriteText(out.Results)
		}
	}
	return res, err
}

// runner is one run's state.
type runner struct {
	cfg     *Config
	out     kvbench.Output
	run     string // the run's id, in every value written
	auth    string
	writeHC *http.Client
	watchHC *http.Client
	lat     *latencies // the watchers' delivery latencies
	target  target
}

func (r *runner) logf(format string, args ...any) {
	if r.out.Progress != nil {
		fmt.Fprintf(r.out.Progress, "kvbench: watch: "+format+"\n", args...)
	}
}

// clients builds the writers' client (with the request timeout) and the
// watchers' (without: a stream lasts the run; only its answer's headers
// are bounded by the timeout).
func (r *runner) clients() error {
	wt, err := kvbench.ClientTransport(&r.cfg.Config, r.cfg.Concurrency[0])
	if err != nil {
		return err
	}
	r.writeHC = &http.Client{Transport: wt, Timeout: r.cfg.Timeout}
	st, err := kvbench.ClientTransport(&r.cfg.Config, 0)
	if err != nil {
		return err
	}
	st.ResponseHeaderTimeout = r.cfg.Timeout
	r.watchHC = &http.Client{Transport: st}
	return nil
}

func (r *runner) measure(ctx context.Context) (Result, error) {
	cfg := r.cfg
	if cfg.CreateRegion != "" {
		if err := r.createRegion(ctx); err != nil {
			return Result{}, err
		}
	}
	res := describe(cfg)
	watched := cfg.Endpoints[0]
	res.Memory.Before = r.memory(ctx, &res)

	wctx, closeWatches := context.WithCancel(ctx)
	defer closeWatches()
	ws, wg, err := r.startWatchers(wctx, watched)
	if err != nil {
		closeWatches()
		wg.Wait()
		return Result{}, err
	}
	res.Memory.Live = r.memory(ctx, &res)
	res.Memory.Peak = res.Memory.Live // a run shorter than SampleEvery still has a peak
	cpu0, t0 := processCPU(), time.Now()

	stopSampling := r.sample(ctx, watched, &res)
	stopProgress := r.progress(ws)
	w := writeAll(ctx, cfg, r.target, r.writeHC, r.run)
	acked := w.count(writeOK)
	drained := r.drain(ctx, ws, acked)
	stopProgress()
	stopSampling()
	closeWatches()
	wg.Wait()
	cpu1, t1 := processCPU(), time.Now()
	if !kvbench.SleepUntil(ctx, time.Now().Add(time.Second)) { // let the member notice the closed streams
		return Result{}, ctx.Err()
	}
	res.Memory.After = r.memory(ctx, &res)
	res.ToolCPU = math.Round((cpu1-cpu0).Seconds()/t1.Sub(t0).Seconds()*100) / 100
	if res.MemoryError == "" {
		// The member's counter was read at Live and at the last sample
		// before the close: Peak keeps its largest, the latest.
		if d := res.Memory.Peak.CPUSeconds - res.Memory.Live.CPUSeconds; d > 0 {
			res.MemberCPU = math.Round(d/t1.Sub(t0).Seconds()*100) / 100
		}
	}
	res.account(w, ws, drained)
	res.Latency = kvbench.LatencyOf(r.lat.merged())
	return res, ctx.Err()
}

// startWatchers opens the watches, at most maxDialing at a time, and
// waits until each is live, for at most cfg.ReadyTimeout. A watcher that
// could not get there fails the run: the writes would not be measured
// against what was asked.
func (r *runner) startWatchers(ctx context.Context, base string) ([]*watcher, *sync.WaitGroup, error) {
	cfg := r.cfg
	s := &watchStream{hc: r.watchHC, target: r.target, base: base, finder: newStampFinder(r.run), lat: r.lat, now: time.Now}
	n := cfg.writes()
	ws := make([]*watcher, cfg.Watchers)
	ready := make(chan error, cfg.Watchers)
	dialing := make(chan struct{}, maxDialing)
	wg := &sync.WaitGroup{}
	t0 := time.Now()
	for i := range ws {
		ws[i] = newWatcher(i, n)
		wg.Add(1)
		go func() {
			defer wg.Done()
			select {
			case dialing <- struct{}{}:
			case <-ctx.Done():
				ready <- ctx.Err()
				return
			}
			ws[i].run(ctx, s, func(err error) { <-dialing; ready <- err })
		}()
	}
	timeout := time.NewTimer(cfg.ReadyTimeout)
	defer timeout.Stop()
	var failed int
	var first error
	for live := 0; live+failed < len(ws); {
		select {
		case err := <-ready:
			if err == nil {
				live++
				continue
			}
			failed++
			if first == nil {
				first = err
			}
		case <-timeout.C:
			return ws, wg, fmt.Errorf("%d of %d watchers were not live after %v", len(ws)-live, len(ws), cfg.ReadyTimeout)
		case <-ctx.Done():
			return ws, wg, ctx.Err()
		}
	}
	if failed > 0 {
		return ws, wg, fmt.Errorf("%d of %d watchers did not start: %w", failed, len(ws), first)
	}
	r.logf("%d watchers live on %s in %v", len(ws), base, time.Since(t0).Round(time.Millisecond))
	return ws, wg, nil
}

// drain waits until every watcher still open has received acked writes
// (one the member ended will not),
// for at most cfg.DrainTimeout; it returns when it stopped waiting.
func (r *runner) drain(ctx context.Context, ws []*watcher, acked int64) time.Time {
	deadline := time.Now().Add(r.cfg.DrainTimeout)
	for {
		behind := 0
		for _, w := range ws {
			if !w.ended.Load() && w.distinct.Load() < acked {
				behind++
			}
		}
		now := time.Now()
		if behind == 0 {
			return now
		}
		if !now.Before(deadline) {
			r.logf("%d watchers still behind after waiting %v; stopping", behind, r.cfg.DrainTimeout)
			return now
		}
		if !kvbench.SleepUntil(ctx, now.Add(10*time.Millisecond)) {
			return now
		}
	}
}

// memory reads the watched member's memory; a failure is noted in res
// (once) and reads as zeros.
func (r *runner) memory(ctx context.Context, res *Result) Memory {
	m, err := scrapeMemory(ctx, r.writeHC, r.cfg.Endpoints[0], r.auth)
	if err != nil && res.MemoryError == "" {
		res.MemoryError = err.Error()
		r.logf("%v (memory not measured)", err)
	}
	return m
}

// sample keeps the peak of the member's memory until stopped.
func (r *runner) sample(ctx context.Context, base string, res *Result) (stop func()) {
	return every(ctx, r.cfg.SampleEvery, func() {
		if m, err := scrapeMemory(ctx, r.writeHC, base, r.auth); err == nil {
			res.Memory.Peak.peak(m)
		}
	})
}

// progress writes a line a second: events delivered per second and
// watchers still open.
func (r *runner) progress(ws []*watcher) (stop func()) {
	if r.out.Progress == nil {
		return func() {}
	}
	var last int64
	lastAt, start := time.Now(), time.Now()
	return every(context.Background(), time.Second, func() {
		var n int64
		for _, w := range ws {
			n += w.distinct.Load()
		}
		now := time.Now()
		r.logf("%4.0fs %14s events/s delivered", now.Sub(start).Seconds(), kvbench.Thousands(float64(n-last)/now.Sub(lastAt).Seconds()))
		last, lastAt = n, now
	})
}

// every calls f every d on one goroutine until stopped (and waits for the
// call under way).
func every(ctx context.Context, d time.Duration, f func()) (stop func()) {
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		tick := time.NewTicker(d)
		defer tick.Stop()
		for {
			select {
			case <-done:
				return
			case <-ctx.Done():
				return
			case <-tick.C:
				f()
			}
		}
	}()
	return func() { close(done); wg.Wait() }
}

// createRegion creates the region with the management API; one that
// exists already is fine (its type is what it is). Config.Validate has
// refused it for any target but kvnode.
func (r *runner) createRegion(ctx context.Context) error {
	cfg := r.cfg
	k, ok := r.target.(*kvnodeTarget)
	if !ok {
		return fmt.Errorf("create region: target %s has no regions", cfg.Target)
	}
	c, err := k.client(r.writeHC, cfg.Endpoints[0])
	if err != nil {
		return err
	}
	err = c.CreateRegion(ctx, client.RegionInfo{Name: cfg.Region, Type: cfg.CreateRegion})
	if err != nil && !errors.Is(err, client.ErrConflict) {
		return fmt.Errorf("create region %s: %w", cfg.Region, err)
	}
	return nil
}
