package chaos

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/anishathalye/porcupine"
	"github.com/kvnode/kvnode/chaos/backend"
	"github.com/kvnode/kvnode/chaos/model"
	"github.com/kvnode/kvnode/chaos/workload"
	"github.com/kvnode/kvnode/client"
)

// Scenario is a named nemesis: it injects faults until ctx ends and leaves
// undoing them to the run (Run.Restore), though it should undo its own.
type Scenario struct {
	Name string
	// Doc says what it does, for docs/chaos.md.
	Doc     string
	Nemesis func(ctx context.Context, r *Run)
	// NeedsLinkFaults: the scenario cuts single directions of links, which
	// only some backends can (backend.Cluster.LinkFaults).
	NeedsLinkFaults bool
	// NeedsPowerFaults: the scenario cuts members' power, which only the
	// process backend can (backend.Cluster.PowerFaults).
	NeedsPowerFaults bool
	// Moves: the scenario moves buckets between partition groups and adds
	// groups, so the workload keeps each family in one bucket and the
	// probes follow the partition table (workload.Clients.Moves,
	// Prober.Moves).
	Moves bool
}

// RunConfig is one run of one scenario.
type RunConfig struct {
	Backend  backend.Cluster
	Backends string // the backend's name, for the report
	// Concurrent counts the chaos clusters on the host during the run,
	// this one included (0 or 1: alone). Runs that shared the CPUs are
	// reported apart: their latencies say less about kvnode.
	Concurrent int
	Scenario   Scenario
	Duration   time.Duration
	Regions    []backend.RegionSpec
	Clients    int // per region
	ResultsDir string
	Logf       func(format string, args ...any)
	Seed       uint64
	// StaleReads: see workload.Clients.StaleReads. Only to check the
	// checker.
	StaleReads bool
	// WatchIdle: the watcher leaves a member from which nothing came for
	// this long (workload.Watcher.IdleTimeout); 4 s when zero.
	WatchIdle time.Duration
}

// FaultEvent is one fault a nemesis injected.
type FaultEvent struct {
	At     time.Duration `json:"at"` // since the run began
	Kind   string        `json:"kind"`
	Target string        `json:"target"`
	Led    []uint64      `json:"led"` // groups the target led when it was hit
}

// RegionReport is what one region's clients saw.
type RegionReport struct {
	Region       string        `json:"region"`
	Ops          int           `json:"ops"`
	Definite     int           `json:"definite"`
	Unknown      int           `json:"unknown"`
	Refused      int           `json:"refused"`
	Availability float64       `json:"availability"`
	Failovers    int           `json:"failovers"`
	FailoverP50  time.Duration `json:"failoverP50"`
	FailoverMax  time.Duration `json:"failoverMax"`
	NoRecovery   int           `json:"noRecovery"` // leader faults after which no write succeeded before the run ended
	Verdict      string        `json:"verdict"`    // ok, illegal, unknown (checker timed out)
	LedgerAcked  int           `json:"ledgerAcked"`
	LedgerLost   int           `json:"ledgerLost"`
	Diverged     int           `json:"diverged"` // keys whose replicas disagree after the run
	Saved        []string      `json:"saved,omitempty"`
	// Causes counts why outcomes were unknown.
	Causes map[string]int `json:"causes,omitempty"`
	// FailoverEvery is, per leader fault, the time until every group the
	// member led acknowledged a write again (FailoverP50 and FailoverMax
	// are of the first such group); Unrecovered counts the faults after
	// which some group never did. Runs recorded before these existed lack
	// them.
	FailoverEvery    []time.Duration `json:"failoverEvery,omitempty"`
	FailoverEveryP50 time.Duration   `json:"failoverEveryP50,omitempty"`
	FailoverEveryP99 time.Duration   `json:"failoverEveryP99,omitempty"`
	FailoverEveryMax time.Duration   `json:"failoverEveryMax,omitempty"`
	Unrecovered      int             `json:"unrecovered,omitempty"`
	// CheckTime is how long porcupine took over the history.
	CheckTime time.Duration `json:"checkTime,omitempty"`
	// Watch is the watcher's verdict; runs recorded before the watcher
	// existed lack it.
	Watch *WatchReport `json:"watch,omitempty"`
}

// Report is one run's outcome.
type Report struct {
	Scenario string `json:"scenario"`
	Backend  string `json:"backend"`
	// Concurrent is RunConfig.Concurrent: how many chaos clusters shared
	// the host, this one included; 0 or 1 when it ran alone.
	Concurrent int            `json:"concurrent,omitempty"`
	Started    time.Time      `json:"started"`
	Duration   time.Duration  `json:"duration"`
	Faults     []FaultEvent   `json:"faults"`
	Elections  uint64         `json:"elections"` // growth of the sum of all groups' terms
	Regions    []RegionReport `json:"regions"`
	Errors     []string       `json:"errors,omitempty"`
	// Rebalance is what the rebalance nemesis asked for and saw; only its
	// runs have it.
	Rebalance *RebalanceReport `json:"rebalance,omitempty"`
}

// OK reports whether the run proved what it should: every history
// linearizable, no acknowledged write lost, replicas in agreement.
func (r Report) OK() bool {
	if len(r.Errors) > 0 {
		return false
	}
	for _, rr := range r.Regions {
		if rr.Verdict != "ok" || rr.LedgerLost > 0 || rr.Diverged > 0 || (rr.Watch != nil && rr.Watch.Verdict != "ok") {
			return false
		}
	}
	return true
}

// Run is a run in progress, as the nemesis sees it.
type Run struct {
	B     backend.Cluster
	start time.Time
	rng   *rand.Rand
	logf  func(format string, args ...any)

	mu     sync.Mutex
	down   []bool // killed or stopped
	paused []bool
	cut    bool
	events []FaultEvent
	cycle  int
	errs   []string
	// rebalance is the rebalance nemesis's report, when it runs.
	rebalance *RebalanceReport
}

// Logf logs a line with the run's clock.
func (r *Run) Logf(format string, args ...any) {
	if r.logf != nil {
		r.logf("%6.1fs "+format, append([]any{time.Since(r.start).Seconds()}, args...)...)
	}
}

// Rand is the run's random source (not safe for concurrent use: nemeses
// are one goroutine).
func (r *Run) Rand() *rand.Rand { return r.rng }

// Sleep waits d or until ctx ends; it reports whether the run goes on.
func (r *Run) Sleep(ctx context.Context, d time.Duration) bool {
	select {
	case <-ctx.Done():
		return false
	case <-time.After(d):
		return true
	}
}

// Left is how long the run has to go: a nemesis starts no fault it
// would not see the cluster recover from (it would count as a failover
// that never happened).
func (r *Run) Left(ctx context.Context) time.Duration {
	if dl, ok := ctx.Deadline(); ok {
		return time.Until(dl)
	}
	return time.Hour
}

// Down reports whether member i is killed, stopped or paused.
func (r *Run) Down(i int) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.down[i] || r.paused[i]
}

func (r *Run) fail(format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	r.Logf("ERROR %s", msg)
	r.mu.Lock()
	r.errs = append(r.errs, msg)
	r.mu.Unlock()
}

// Leader picks a member that leads something: on alternate calls the
// control group's leader (REPLICATE regions) and the member leading the
// most partition groups. It returns -1 when no leader is known.
func (r *Run) Leader(ctx context.Context) int {
	l, err := FetchLeaders(ctx, r.B, r.Down)
	if err != nil {
		r.Logf("no leader known: %v", err)
		return -1
	}
	r.mu.Lock()
	r.cycle++
	control := r.cycle%2 == 1
	r.mu.Unlock()
	name := l.Control
	if !control {
		count := map[string]int{}
		for _, m := range l.Partitions {
			count[m]++
		}
		best := -1
		for m, c := range count {
			if c > best || (c == best && m < name) {
				name, best = m, c
			}
		}
	}
	return r.index(name)
}

// Follower picks a member that leads nothing, or failing that one that
// does not lead the control group.
func (r *Run) Follower(ctx context.Context) int {
	l, err := FetchLeaders(ctx, r.B, r.Down)
	if err != nil {
		return r.rng.IntN(r.B.Size())
	}
	var cands []int
	for i := range r.B.Size() {
		if len(l.Led(r.B.Name(i))) == 0 {
			cands = append(cands, i)
		}
	}
	if len(cands) == 0 {
		for i := range r.B.Size() {
			if r.B.Name(i) != l.Control {
				cands = append(cands, i)
			}
		}
	}
	return cands[r.rng.IntN(len(cands))]
}

func (r *Run) index(name string) int {
	for i := range r.B.Size() {
		if r.B.Name(i) == name {
			return i
		}
	}
	return -1
}

// prepare notes what target leads before a fault hits it; commit dates
// the fault once it is in force (a docker command takes a while), so
// failover is measured from when the fault really began.
func (r *Run) prepare(ctx context.Context, kind string, target int) FaultEvent {
	ev := FaultEvent{Kind: kind, Target: r.B.Name(target)}
	if l, err := FetchLeaders(ctx, r.B, r.Down); err == nil {
		ev.Led = l.Led(ev.Target)
		slices.Sort(ev.Led)
	}
	return ev
}

func (r *Run) commit(ev FaultEvent) {
	ev.At = time.Since(r.start)
	r.mu.Lock()
	r.events = append(r.events, ev)
	r.mu.Unlock()
	r.Logf("%s %s (leads %v)", ev.Kind, ev.Target, ev.Led)
}

// inject puts fault kind on member i with do, noting what i led before
// and when the fault was in force; then marks the member's new state.
func (r *Run) inject(ctx context.Context, kind string, i int, do func(int) error, mark func()) {
	ev := r.prepare(ctx, kind, i)
	if err := do(i); err != nil {
		r.fail("%s %s: %v", kind, r.B.Name(i), err)
		return
	}
	r.commit(ev)
	r.mu.Lock()
	mark()
	r.mu.Unlock()
}

// Kill SIGKILLs member i.
func (r *Run) Kill(ctx context.Context, i int) {
	r.inject(ctx, "kill", i, r.B.Kill, func() { r.down[i] = true })
}

// Stop stops member i gracefully.
func (r *Run) Stop(ctx context.Context, i int) {
	r.inject(ctx, "stop", i, r.B.Stop, func() { r.down[i] = true })
}

// Start starts member i again and waits until it is ready.
func (r *Run) Start(i int) {
	r.mu.Lock()
	wasDown := r.down[i]
	r.mu.Unlock()
	if !wasDown {
		return
	}
	if err := r.B.Start(i); err != nil {
		r.fail("start %s: %v", r.B.Name(i), err)
		return
	}
	r.mu.Lock()
	r.down[i] = false
	r.mu.Unlock()
	r.Logf("started %s", r.B.Name(i))
}

// WaitReady waits until every member that is up is ready.
func (r *Run) WaitReady() {
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	for i := range r.B.Size() {
		if r.Down(i) {
			continue
		}
		if err := r.B.WaitReady(ctx, i); err != nil {
			r.fail("%v", err)
		}
	}
}

// Pause freezes member i.
func (r *Run) Pause(ctx context.Context, i int) {
	r.inject(ctx, "pause", i, r.B.Pause, func() { r.paused[i] = true })
}

// Resume thaws member i.
func (r *Run) Resume(i int) {
	r.mu.Lock()
	was := r.paused[i]
	r.paused[i] = false
	r.mu.Unlock()
	if was {
		if err := r.B.Resume(i); err != nil {
			r.fail("resume %s: %v", r.B.Name(i), err)
		}
		r.Logf("resumed %s", r.B.Name(i))
	}
}

// Isolate cuts member i off from the others.
func (r *Run) Isolate(ctx context.Context, i int) {
	r.inject(ctx, "isolate", i, r.B.Isolate, func() { r.cut = true })
}

// CutOutgoing drops everything member i sends to the others, not what
// they send it.
func (r *Run) CutOutgoing(ctx context.Context, i int) error {
	return r.linkFault(ctx, "cut-outgoing", i, r.B.CutOneWay)
}

// Slow delays everything member i sends.
func (r *Run) Slow(ctx context.Context, i int, ms int) error {
	return r.linkFault(ctx, fmt.Sprintf("slow-%dms", ms), i, func(from, to int) error { return r.B.Slow(from, to, ms) })
}

// linkFault applies fault to every link from member i; ErrUnsupported
// when the backend cannot cut single directions.
func (r *Run) linkFault(ctx context.Context, kind string, i int, fault func(from, to int) error) error {
	if !r.B.LinkFaults() {
		return backend.ErrUnsupported
	}
	r.inject(ctx, kind, i, func(i int) error {
		for j := range r.B.Size() {
			if j != i {
				if err := fault(i, j); err != nil {
					return err
				}
			}
		}
		return nil
	}, func() { r.cut = true })
	return nil
}

// Heal ends network faults.
func (r *Run) Heal() {
	r.mu.Lock()
	was := r.cut
	r.cut = false
	r.mu.Unlock()
	if was {
		if err := r.B.Heal(); err != nil {
			r.fail("heal: %v", err)
		}
		r.Logf("healed")
	}
}

// Restore undoes every fault: heal, thaw, start, and wait for readiness.
func (r *Run) Restore() {
	r.Heal()
	for i := range r.B.Size() {
		r.Resume(i)
	}
	for i := range r.B.Size() {
		r.Start(i)
	}
	r.WaitReady()
}

// Execute runs one scenario: workloads and ledgers on every region while
// the nemesis works, then restores the cluster, reads every key through
// every member, checks the histories and the ledgers.
func Execute(cfg RunConfig) Report {
	if cfg.Seed == 0 {
		cfg.Seed = uint64(time.Now().UnixNano())
	}
	b := cfg.Backend
	r := &Run{
		B: b, start: time.Now(), rng: rand.New(rand.NewPCG(cfg.Seed, 0x6b766e6f6465)), logf: cfg.Logf,
		down: make([]bool, b.Size()), paused: make([]bool, b.Size()),
	}
	rep := Report{Scenario: cfg.Scenario.Name, Backend: cfg.Backends, Concurrent: cfg.Concurrent, Started: r.start, Duration: cfg.Duration}
	urls, names := make([]string, b.Size()), make([]string, b.Size())
	for i := range b.Size() {
		urls[i], names[i] = b.URL(i), b.Name(i)
	}
	before, err := waitLeaders(b)
	if err != nil {
		r.fail("leaders before the run: %v", err)
	}

	values := &atomic.Int64{}
	type regionRun struct {
		spec   backend.RegionSpec
		hist   *model.History
		wl     *workload.Clients
		ledger *workload.Ledger
		prober *Prober
		watch  *workload.Watcher
	}
	var runs []*regionRun
	for k, spec := range cfg.Regions {
		h := model.NewHistoryAt(r.start)
		runs = append(runs, &regionRun{
			spec:   spec,
			hist:   h,
			wl:     &workload.Clients{Region: spec.Name, Partitioned: spec.Partitioned, Groups: before.P, Moves: cfg.Scenario.Moves, Concurrency: cfg.Clients, URLs: urls, Names: names, History: h, Values: values, StaleReads: cfg.StaleReads},
			ledger: &workload.Ledger{Region: spec.Name, URLs: urls, Names: names},
			prober: &Prober{Region: spec, URLs: urls, Names: names, P: before.P, Clock: r.start, Moves: cfg.Scenario.Moves},
			watch:  newWatcher(cfg, spec, k%b.Size(), urls, names, h, r.Logf),
		})
	}
	// The watchers are live before the first write, so that every write is
	// in their streams; they outlive the load until they have caught up.
	watchCtx, stopWatch := context.WithCancel(context.Background())
	defer stopWatch()
	var watchWG sync.WaitGroup
	for _, rr := range runs {
		watchWG.Add(1)
		go func() { defer watchWG.Done(); rr.watch.Run(watchCtx) }()
	}
	for _, rr := range runs {
		r.waitWatchReady(rr.watch)
	}

	ctx, cancel := context.WithTimeout(context.Background(), cfg.Duration)
	var wg sync.WaitGroup
	for _, rr := range runs {
		wg.Add(3)
		go func() { defer wg.Done(); rr.wl.Run(ctx) }()
		go func() { defer wg.Done(); rr.ledger.Run(ctx) }()
		go func() { defer wg.Done(); rr.prober.Run(ctx) }()
	}
	nemesisDone := make(chan struct{})
	go func() {
		defer close(nemesisDone)
		cfg.Scenario.Nemesis(ctx, r)
	}()
	wg.Wait()
	<-nemesisDone
	cancel()
	r.Logf("load over; restoring the cluster")
	r.Restore()

	// Elections: terms now against terms before.
	if after, err := waitLeaders(b); err == nil && before.Partitions != nil {
		rep.Elections = after.TermSum() - before.TermSum()
	}

	// The watchers' verdicts first (each waits for its watcher to catch
	// up), then they stop: they must not reconnect over and over to an
	// idle cluster while the linearizability checks take the CPU.
	watches := make([]*WatchReport, len(runs))
	for k, rr := range runs {
		name := fmt.Sprintf("%s-%s-%s", cfg.Scenario.Name, rr.spec.Name, r.start.Format("20060102T150405"))
		watches[k] = r.checkWatch(rr.watch, rr.hist, cfg.ResultsDir, name)
	}
	stopWatch()
	watchWG.Wait()
	for k, rr := range runs {
		rep.Regions = append(rep.Regions, r.finish(cfg, rr.spec, rr.hist, rr.wl, rr.ledger))
		rep.Regions[k].Watch = watches[k]
	}
	r.mu.Lock()
	rep.Faults = r.events
	rep.Errors = append(rep.Errors, r.errs...)
	rep.Rebalance = r.rebalance
	r.mu.Unlock()
	for k, rr := range runs {
		rr.prober.Failover(&rep.Regions[k], rep.Faults)
	}
	return rep
}

// waitLeaders waits up to 30s until some member names a leader for every
// group (a member is ready before it knows every partition group's leader).
func waitLeaders(b backend.Cluster) (Leaders, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for {
		l, err := FetchLeaders(ctx, b, nil)
		if err == nil || ctx.Err() != nil {
			return l, err
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// finish reads every key through every member into the history, checks
// it, and checks the ledger and the replicas.
func (r *Run) finish(cfg RunConfig, spec backend.RegionSpec, h *model.History, wl *workload.Clients, ledger *workload.Ledger) RegionReport {
	rr := RegionReport{Region: spec.Name}
	// A client of each member alone: every key is read through each one.
	through := make([]*client.Client, r.B.Size())
	for m := range through {
		cl, err := wl.NewClient(m, false)
		if err != nil {
			r.fail("%s: a client of %s: %v", spec.Name, r.B.Name(m), err)
			return rr
		}
		defer cl.Close()
		through[m] = cl
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	final := map[string]int64{}
	for k, key := range wl.KeyNames() {
		for m := range r.B.Size() {
			for attempt := 0; ; attempt++ {
				op, sent := wl.Do(ctx, through[m], model.Input{Kind: model.Get, Key: key})
				op.Client = 1_000_000 + k*r.B.Size() + m
				if sent {
					h.Add(op)
				}
				if sent && !op.Output.Unknown {
					final[key] = op.Output.Value
					break
				}
				if attempt == 20 || ctx.Err() != nil {
					r.fail("%s: final read of %s through %s never answered", spec.Name, key, r.B.Name(m))
					break
				}
				time.Sleep(250 * time.Millisecond)
			}
		}
	}
	ops := h.Ops()
	rr.Ops = len(ops)
	rr.Definite = int(wl.Stats.Definite.Load())
	rr.Unknown = int(wl.Stats.Unknown.Load())
	for _, op := range ops {
		if op.Output.Unknown {
			if rr.Causes == nil {
				rr.Causes = map[string]int{}
			}
			rr.Causes[cause(op.Error)]++
		}
	}
	rr.Refused = int(wl.Stats.Refused.Load())
	if n := wl.Stats.Attempts.Load(); n > 0 {
		rr.Availability = float64(rr.Definite) / float64(n)
	}

	checkStart := time.Now()
	v := model.Check(ops, 3*time.Minute)
	rr.CheckTime = time.Since(checkStart)
	switch v.Result {
	case porcupine.Ok:
		rr.Verdict = "ok"
	case porcupine.Illegal:
		rr.Verdict = "illegal"
	default:
		rr.Verdict = "unknown"
	}
	if rr.Verdict != "ok" && cfg.ResultsDir != "" {
		name := fmt.Sprintf("%s-%s-%s", cfg.Scenario.Name, spec.Name, r.start.Format("20060102T150405"))
		hp, html, err := v.Save(cfg.ResultsDir, name, ops)
		if err != nil {
			r.fail("save %s: %v", name, err)
		}
		rr.Saved = []string{hp, html}
		r.Logf("%s: history not linearizable (%s); saved %s and %s", spec.Name, rr.Verdict, hp, html)
	}

	ctx, cancel = context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	lr := ledger.Check(ctx)
	rr.LedgerAcked, rr.LedgerLost = lr.Acked, lr.Lost
	for _, msg := range lr.Problems {
		r.fail("%s ledger: %s", spec.Name, msg)
	}
	rr.Diverged = checkReplicas(ctx, r.B, spec.Name, final, func(format string, args ...any) { r.fail(format, args...) })
	return rr
}

// checkReplicas waits until every member's own copy (a stale read) of
// every key holds the value the final linearizable reads saw, and returns
// how many keys still disagree after a while.
func checkReplicas(ctx context.Context, b backend.Cluster, region string, final map[string]int64, fail func(string, ...any)) int {
	replicas := make([]*client.Region, b.Size())
	for m := range replicas {
		// Each member alone, each read as sent: its own replica.
		cl, err := client.New(client.Config{Endpoints: []string{b.URL(m)}, DisableSingleHop: true})
		if err != nil {
			fail("%s: a client of %s: %v", region, b.Name(m), err)
			return len(final)
		}
		defer cl.Close()
		replicas[m] = cl.Region(region)
	}
	keys := make([]string, 0, len(final))
	for k := range final {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	deadline := time.Now().Add(30 * time.Second)
	for {
		var bad []string
		for _, key := range keys {
			for m := range b.Size() {
				got, err := staleGet(ctx, replicas[m], key)
				if err != nil || got != final[key] {
					bad = append(bad, fmt.Sprintf("%s on %s: %d (%v), want %d", key, b.Name(m), got, err, final[key]))
				}
			}
		}
		if len(bad) == 0 {
			return 0
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			fail("%s: replicas disagree after 30s: %s", region, strings.Join(bad, "; "))
			return len(bad)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// staleGet reads a key from one member's own replica.
func staleGet(ctx context.Context, r *client.Region, key string) (int64, error) {
	ctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	v, err := r.Get(ctx, key, client.Stale())
	if errors.Is(err, client.ErrNotFound) {
		return model.Absent, nil
	}
	if err != nil {
		return 0, err
	}
	return workload.ParseValue(v)
}

// cause shortens an unknown outcome's error to a class worth counting.
func cause(e string) string {
	switch {
	case strings.Contains(e, "Client.Timeout") || strings.Contains(e, "context deadline exceeded"):
		return "client timeout"
	case strings.Contains(e, "connection reset"):
		return "connection reset"
	case strings.Contains(e, "EOF"):
		return "connection closed"
	}
	if len(e) > 3 && e[0] == '5' {
		var body struct {
			Cause string `json:"cause"`
		}
		if i := strings.IndexByte(e, ' '); i > 0 && json.Unmarshal([]byte(e[i+1:]), &body) == nil && body.Cause != "" {
			e = e[:i] + " " + body.Cause
		}
	}
	if len(e) > 70 {
		e = e[:70]
	}
	return e
}
