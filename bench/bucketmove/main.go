// Command bucketmove measures one bucket's move between partition groups
// under write load (issue 29's target: a bucket of 100,000 entries of ~200
// bytes moves within 10 s; the p99 of writes to it stays under 500 ms;
// writes to other buckets slow by at most 20%). bench/bucketmove.sh starts
// the cluster and runs it.
//
// It fills one bucket of a PARTITION region with --entries entries, runs
// closed-loop writers on that bucket's keys and on other buckets' keys,
// and after --baseline grows the partition groups by one
// (PATCH /management/v1/partitions): the rebalance moves the fullest
// groups' highest buckets first, so with the default 4 groups bucket 112
// (group 1's highest) moves first. It reports when the bucket changed
// owner, the latencies of the writes to it from the PATCH to then, and
// other buckets' writes during the whole rebalance against the baseline.
// Traffic goes to the members given (127.0.0.1), through package client,
// and every loop is bounded by --max-time.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/kvnode/kvnode/client"
)

type config struct {
	members             []string
	region              string
	bucket              int
	entries, valueBytes int
	moveClients         int
	otherClients        int
	baseline, after     time.Duration
	maxTime             time.Duration
	// logs are the members' log files (level info), where the control
	// leader says when it began and ended the bucket's move.
	logs []string
}

// sample is one write: when it began, how long it took, whether it
// succeeded, and whether it was of the moving bucket.
type sample struct {
	at     time.Time
	took   time.Duration
	ok     bool
	moving bool
}

func main() {
	var cfg config
	var members string
	flag.StringVar(&members, "members", "http://127.0.0.1:19401,http://127.0.0.1:19402,http://127.0.0.1:19403", "the members' REST URLs, comma separated")
	flag.StringVar(&cfg.region, "region", "bm", "the PARTITION region to create and fill")
	flag.IntVar(&cfg.bucket, "bucket", 112, "the bucket to fill (the rebalance's first move)")
	flag.IntVar(&cfg.entries, "entries", 100_000, "entries in the bucket")
	flag.IntVar(&cfg.valueBytes, "value", 200, "bytes of each value")
	flag.IntVar(&cfg.moveClients, "move-clients", 8, "clients writing the moving bucket")
	flag.IntVar(&cfg.otherClients, "other-clients", 24, "clients writing other buckets")
	flag.DurationVar(&cfg.baseline, "baseline", 10*time.Second, "load before the rebalance starts")
	flag.DurationVar(&cfg.after, "after", 3*time.Second, "load after the rebalance ends")
	flag.DurationVar(&cfg.maxTime, "max-time", 3*time.Minute, "bound on the whole load")
	logs := flag.String("logs", "", "the members' log files, comma separated: the move's start and end are read there")
	flag.Parse()
	cfg.members = strings.Split(members, ",")
	if *logs != "" {
		cfg.logs = strings.Split(*logs, ",")
	}
	if err := run(cfg); err != nil {
		fmt.Fprintln(os.Stderr, "bucketmove:", err)
		os.Exit(1)
	}
}

func run(cfg config) error {
	ctx, cancel := context.WithTimeout(context.Background(), cfg.maxTime)
	defer cancel()
	// Package client as any Go program reaches kvnode, each request sent
	// once (a failed write is counted, not retried) and to the members in
	// turn, as before single hop: the move is measured, not the routing.
	c, err := client.New(client.Config{Endpoints: cfg.members, RetryFor: -1, DisableSingleHop: true,
		MaxIdleConnsPerMember: 256, DisableCompression: true})
	if err != nil {
		return err
	}
	defer c.Close()
	cl, r := c.Cluster(), c.Region(cfg.region)
	if err := c.CreateRegion(ctx, client.RegionInfo{Name: cfg.region, Type: client.Partition}); err != nil && !errors.Is(err, client.ErrConflict) {
		return fmt.Errorf("create region: %w", err)
	}
	table, err := cl.Partitions(ctx)
	if err != nil {
		return err
	}
	moving, other := keys(cfg.bucket, cfg.entries, "b", table.Buckets), keys(-cfg.bucket-1, 10_000, "o", table.Buckets)
	value := func(k string, n int) json.RawMessage {
		v := fmt.Sprintf(`{"k":%q,"n":%d,"pad":"`, k, n)
		return json.RawMessage(v + strings.Repeat("x", max(cfg.valueBytes-len(v)-2, 0)) + `"}`)
	}

	// Fill the bucket, 500 entries a request, 4 at a time.
	start := time.Now()
	var wg sync.WaitGroup
	errs := make(chan error, 4)
	for w := range 4 {
		wg.Go(func() {
			for from := w * 500; from < len(moving); from += 4 * 500 {
				part := moving[from:min(from+500, len(moving))]
				entries := make([]client.Entry, len(part))
				for i, k := range part {
					entries[i] = client.Entry{Key: k, Value: value(k, 0)}
				}
				if err := r.PutAll(ctx, entries); err != nil {
					errs <- fmt.Errorf("fill: %w", err)
					return
				}
			}
		})
	}
	wg.Wait()
	select {
	case err := <-errs:
		return err
	default:
	}
	fmt.Printf("filled bucket %d with %d entries of %d bytes in %.1fs\n", cfg.bucket, len(moving), cfg.valueBytes, time.Since(start).Seconds())
	owner0, groups, err := ownerOf(ctx, cl, cfg.bucket)
	if err != nil {
		return err
	}

	// The writers.
	loadCtx, stopLoad := context.WithCancel(ctx)
	defer stopLoad()
	var mu sync.Mutex
	var samples []sample
	writer := func(id int, ks []string, isMoving bool) {
		rng := rand.New(rand.NewPCG(uint64(id), 7))
		var mine []sample
		for n := 1; loadCtx.Err() == nil; n++ {
			k := ks[rng.IntN(len(ks))]
			began := time.Now()
			opCtx, done := context.WithTimeout(loadCtx, 30*time.Second)
			err := r.Put(opCtx, k, value(k, n))
			done()
			if loadCtx.Err() != nil {
				break
			}
			mine = append(mine, sample{at: began, took: time.Since(began), ok: err == nil, moving: isMoving})
		}
		mu.Lock()
		samples = append(samples, mine...)
		mu.Unlock()
	}
	var load sync.WaitGroup
	for i := range cfg.moveClients {
		load.Go(func() { writer(i, moving, true) })
	}
	for i := range cfg.otherClients {
		load.Go(func() { writer(1000+i, other, false) })
	}
	time.Sleep(cfg.baseline)

	patchAt := time.Now()
	id, err := cl.GrowPartitions(ctx, groups+1)
	if err != nil {
		return fmt.Errorf("grow the partition groups: %w", err)
	}
	var switchedAt, endAt time.Time
	var result []byte
	for endAt.IsZero() {
		if ctx.Err() != nil {
			return fmt.Errorf("the rebalance did not end within --max-time")
		}
		time.Sleep(50 * time.Millisecond)
		if switchedAt.IsZero() {
			if owner, _, err := ownerOf(ctx, cl, cfg.bucket); err == nil && owner != owner0 {
				switchedAt = time.Now()
			}
		}
		op, err := cl.Operation(ctx, id)
		if err != nil {
			continue
		}
		switch op.Status {
		case client.OperationSucceeded:
			endAt = time.Now()
			result, _ = json.Marshal(op)
		case client.OperationFailed:
			return fmt.Errorf("the rebalance failed: %s", op.Result.StatusMessage)
		}
	}
	if switchedAt.IsZero() {
		return fmt.Errorf("bucket %d did not move: %s", cfg.bucket, result)
	}
	time.Sleep(cfg.after)
	stopLoad()
	load.Wait()

	fmt.Printf("rebalance %d -> %d groups: PATCH at +0, bucket %d's owner changed at +%.2fs (seen by a 50 ms poll), the rebalance ended at +%.2fs\n",
		groups, groups+1, cfg.bucket, switchedAt.Sub(patchAt).Seconds(), endAt.Sub(patchAt).Seconds())
	fmt.Printf("operation: %s\n", result)
	report := func(what string, from, to time.Time, isMoving bool) {
		var lat []time.Duration
		failed := 0
		for _, s := range samples {
			if s.moving != isMoving || s.at.Before(from) || !s.at.Before(to) {
				continue
			}
			if !s.ok {
				failed++
				continue
			}
			lat = append(lat, s.took)
		}
		slices.Sort(lat)
		q := func(p float64) float64 {
			if len(lat) == 0 {
				return 0
			}
			return float64(lat[min(int(p*float64(len(lat))), len(lat)-1)].Microseconds()) / 1000
		}
		secs := to.Sub(from).Seconds()
		fmt.Printf("%-44s %8.0f writes/s  p50 %7.1f ms  p99 %7.1f ms  max %7.1f ms  failed %d\n", what, float64(len(lat))/secs, q(0.5), q(0.99), q(1), failed)
	}
	report("moving bucket, baseline", patchAt.Add(-cfg.baseline+2*time.Second), patchAt, true)
	report("moving bucket, PATCH to its switch", patchAt, switchedAt, true)
	report("other buckets, baseline", patchAt.Add(-cfg.baseline+2*time.Second), patchAt, false)
	report("other buckets, PATCH to its switch", patchAt, switchedAt, false)
	report("other buckets, whole rebalance", patchAt, endAt, false)
	began, ended, line := moveTimes(cfg.logs, cfg.bucket)
	if began.IsZero() || ended.IsZero() {
		fmt.Println("the move's start and end were not found in the logs (--logs)")
		return nil
	}
	fmt.Printf("the move itself (control leader's log): began at +%.2fs, took %.2fs: %s\n", began.Sub(patchAt).Seconds(), ended.Sub(began).Seconds(), line)
	report("moving bucket, during its move", began, ended, true)
	report("other buckets, during the move", began, ended, false)
	return nil
}

// moveTimes finds in the logs when the control leader began and ended
// bucket b's move, and the line that ended it.
func moveTimes(logs []string, b int) (began, ended time.Time, line string) {
	for _, f := range logs {
		data, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		for _, l := range strings.Split(string(data), "\n") {
			if !strings.Contains(l, fmt.Sprintf(" bucket=%d ", b)) {
				continue
			}
			ts, _, _ := strings.Cut(strings.TrimPrefix(l, "time="), " ")
			at, err := time.Parse(time.RFC3339Nano, ts)
			switch {
			case err != nil:
			case strings.Contains(l, `msg="moving a bucket"`) && began.IsZero():
				began = at
			case strings.Contains(l, `msg="moved a bucket"`) && ended.IsZero():
				ended, line = at, l
			}
		}
	}
	return began, ended, line
}

// keys are n keys of bucket b among buckets with prefix (for b < 0: of
// any bucket but -b-1), hashed as the members do (client.Bucket).
func keys(b, n int, prefix string, buckets int) []string {
	out := make([]string, 0, n)
	for i := 0; len(out) < n; i++ {
		k := fmt.Sprintf("%s%d", prefix, i)
		if bk := client.Bucket(k, buckets); (b >= 0 && bk == b) || (b < 0 && bk != -b-1) {
			out = append(out, k)
		}
	}
	return out
}

// ownerOf is the group that owns bucket b, and the number of groups, from
// the partition table.
func ownerOf(ctx context.Context, cl *client.Cluster, b int) (uint64, int, error) {
	table, err := cl.Partitions(ctx)
	if err != nil {
		return 0, 0, err
	}
	for _, g := range table.Groups {
		if slices.Contains(g.Buckets, b) {
			return g.Group, table.PartitionGroups, nil
		}
	}
	return 0, table.PartitionGroups, fmt.Errorf("no group owns bucket %d", b)
}
