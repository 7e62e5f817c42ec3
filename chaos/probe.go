package chaos

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/kvnode/kvnode/chaos/backend"
	"github.com/kvnode/kvnode/chaos/workload"
	"github.com/kvnode/kvnode/client"
	"github.com/kvnode/kvnode/partition"
)

// Prober measures failover: through every member separately it writes, one
// after another with a short timeout, a key in every group of the region,
// so after a fault it sees the first write a survivor acknowledges for
// the groups the faulty member led. The workload cannot tell this: its
// clients pick members at random and soon all wait on a frozen one.
type Prober struct {
	Region  backend.RegionSpec
	URLs    []string
	Names   []string
	P       int // partition groups
	Clock   time.Time
	Timeout time.Duration // 500ms when zero: a finer clock than the workload's 3s
	// Moves: buckets move between partition groups and groups are added
	// during the run, so the probes follow the partition table (read from
	// the members every second): each group is probed with a key of a
	// bucket it owns, new groups too.
	Moves bool

	mu    sync.Mutex
	probe []probeOp
	owns  map[uint64]int // with Moves: a bucket each group owns
}

type probeOp struct {
	member    string
	group     uint64
	call, ret time.Duration
	ok        bool
}

// probeKey is a key of group g written through member m.
func (p *Prober) probeKey(m int, g uint64) string {
	if !p.Region.Partitioned {
		return fmt.Sprintf("p%d", m)
	}
	for s := 0; ; s++ {
		k := fmt.Sprintf("p%d-%d-%d", m, g, s)
		if partition.GroupForKey(k, p.P) == g {
			return k
		}
	}
}

// bucketKey is a key of bucket b written through member m.
func bucketKey(m, b int) string {
	for s := 0; ; s++ {
		if k := fmt.Sprintf("p%d-b%d-%d", m, b, s); partition.Bucket(k) == b {
			return k
		}
	}
}

// Run probes until ctx ends.
func (p *Prober) Run(ctx context.Context) {
	if p.Timeout == 0 {
		p.Timeout = 500 * time.Millisecond
	}
	if p.Region.Partitioned && p.P < 1 {
		return // the partition count is unknown: the run has failed already
	}
	groups := []uint64{0}
	if p.Region.Partitioned {
		groups = groups[:0]
		for g := 1; g <= p.P; g++ {
			groups = append(groups, uint64(g))
		}
	}
	var wg sync.WaitGroup
	moves := p.Moves && p.Region.Partitioned
	if moves {
		p.owns = map[uint64]int{}
		for _, g := range groups {
			p.owns[g] = partition.BucketsOf(g, p.P)[0]
		}
		wg.Add(1)
		go func() { defer wg.Done(); p.followTable(ctx) }()
	}
	for m := range p.URLs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			// This member alone, each write sent once: the probe measures
			// when this member's writes succeed.
			cl, err := memberClient(p.URLs[m])
			if err != nil {
				return
			}
			defer cl.Close()
			keys := make([]string, len(groups))
			for i, g := range groups {
				keys[i] = p.probeKey(m, g)
			}
			byBucket := map[int]string{}
			for n := 0; ctx.Err() == nil; n++ {
				i := n % len(groups)
				g, key := groups[i], keys[i]
				if moves {
					g, key = p.target(n, m, byBucket)
				}
				call := time.Since(p.Clock)
				ok, refused := p.write(ctx, cl, key, n)
				p.mu.Lock()
				p.probe = append(p.probe, probeOp{member: p.Names[m], group: g, call: call, ret: time.Since(p.Clock), ok: ok})
				p.mu.Unlock()
				if refused {
					time.Sleep(50 * time.Millisecond)
				}
			}
		}()
	}
	wg.Wait()
}

// target is, with Moves, the n-th probe's group (of those the table
// had when last read) and a key of a bucket it owned then.
func (p *Prober) target(n, m int, byBucket map[int]string) (uint64, string) {
	p.mu.Lock()
	gs := slices.Sorted(maps.Keys(p.owns))
	g := gs[n%len(gs)]
	b := p.owns[g]
	p.mu.Unlock()
	k, ok := byBucket[b]
	if !ok {
		k = bucketKey(m, b)
		byBucket[b] = k
	}
	return g, k
}

// followTable reads the partition table every second from every member
// into owns, when a majority of them show the same owners (a member cut
// off shows an old table).
func (p *Prober) followTable(ctx context.Context) {
	var members []*client.Cluster
	for _, u := range p.URLs {
		cl, err := memberClient(u)
		if err != nil {
			return
		}
		defer cl.Close()
		members = append(members, cl.Cluster())
	}
	for ctx.Err() == nil {
		votes := map[string]int{}
		tables := map[string]map[uint64]int{}
		for _, cl := range members {
			rctx, cancel := context.WithTimeout(ctx, time.Second)
			pv, err := cl.Partitions(rctx)
			cancel()
			if err != nil {
				continue
			}
			owns := map[uint64]int{}
			for _, g := range pv.Groups {
				if len(g.Buckets) > 0 {
					owns[g.Group] = slices.Min(g.Buckets)
				}
			}
			k := fmt.Sprint(owns) // fmt sorts map keys
			votes[k]++
			tables[k] = owns
		}
		for k, n := range votes {
			if 2*n > len(p.URLs) && len(tables[k]) > 0 {
				p.mu.Lock()
				p.owns = tables[k]
				p.mu.Unlock()
			}
		}
		select {
		case <-ctx.Done():
		case <-time.After(time.Second):
		}
	}
}

func (p *Prober) write(ctx context.Context, cl *client.Client, key string, n int) (ok, refused bool) {
	ctx, cancel := context.WithTimeout(ctx, p.Timeout)
	defer cancel()
	err := cl.Region(p.Region.Name).Put(ctx, key, workload.ValueJSON(int64(n+1)))
	return err == nil, err != nil && workload.IsRefused(err)
}

// Failover measures, for every fault on a member that led one of the
// region's groups, how long the groups it led went without a leader that
// acknowledges writes: per group, the time from the fault to the first
// write to that group, begun after the fault, that another member
// acknowledged. The fastest group gives FailoverP50/Max (the first write
// that got through); the slowest, the time until every group the member
// led took writes again, gives FailoverEvery and its quantiles. A fault
// after which some group never took a write again counts in Unrecovered
// (and in NoRecovery when none did). With Moves, groups no probe wrote
// to before the fault are left out.
func (p *Prober) Failover(rr *RegionReport, faults []FaultEvent) {
	p.mu.Lock()
	ops := slices.Clone(p.probe)
	p.mu.Unlock()
	// With Moves a group is measured only when the probes wrote to it
	// before the fault: a group just added owns no bucket yet and is not
	// probed, and its first write would be the first bucket moving in,
	// not a failover.
	probed := map[uint64]time.Duration{}
	for _, op := range ops {
		if at, ok := probed[op.group]; !ok || op.call < at {
			probed[op.group] = op.call
		}
	}
	measured := func(g uint64, at time.Duration) bool {
		first, ok := probed[g]
		return !p.Moves || ok && first < at
	}
	var first []time.Duration
	for _, f := range faults {
		groups := map[uint64]time.Duration{}
		for _, g := range f.Led {
			if measured(g, f.At) && p.Region.Partitioned == (g != 0) {
				groups[g] = -1
			}
		}
		if len(groups) == 0 {
			continue
		}
		rr.Failovers++
		for _, op := range ops {
			best, led := groups[op.group]
			if !led || !op.ok || op.call < f.At || op.member == f.Target {
				continue
			}
			if d := op.ret - f.At; best < 0 || d < best {
				groups[op.group] = d
			}
		}
		fastest, slowest := time.Duration(-1), time.Duration(0)
		for _, d := range groups {
			if d >= 0 && (fastest < 0 || d < fastest) {
				fastest = d
			}
			if d < 0 || slowest < 0 {
				slowest = -1
			} else {
				slowest = max(slowest, d)
			}
		}
		if fastest < 0 {
			rr.NoRecovery++
		} else {
			first = append(first, fastest)
		}
		if slowest < 0 {
			rr.Unrecovered++
		} else {
			rr.FailoverEvery = append(rr.FailoverEvery, slowest)
		}
	}
	if len(first) > 0 {
		slices.Sort(first)
		rr.FailoverP50 = quantile(first, 0.5)
		rr.FailoverMax = first[len(first)-1]
	}
	if len(rr.FailoverEvery) > 0 {
		every := slices.Sorted(slices.Values(rr.FailoverEvery))
		rr.FailoverEveryP50 = quantile(every, 0.5)
		rr.FailoverEveryP99 = quantile(every, 0.99)
		rr.FailoverEveryMax = every[len(every)-1]
	}
}

// quantile is the value of rank floor(q*n)+1 in sorted (n values): the
// upper median for q = 0.5, and never below the true quantile, so that a
// few faults make p99 the maximum rather than something smaller.
func quantile(sorted []time.Duration, q float64) time.Duration {
	i := min(int(q*float64(len(sorted))), len(sorted)-1)
	return sorted[i]
}
