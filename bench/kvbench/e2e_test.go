package kvbench_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/kvnode/kvnode/bench/kvbench"
	"github.com/kvnode/kvnode/internal/waitfor"
	"github.com/kvnode/kvnode/node/nodetest"
)

// TestEndToEnd runs every workload briefly (a few hundred operations)
// against an in-process cluster of three members, through all three
// endpoints, and checks the counts, that no operation failed, and that
// what the workload wrote is there afterwards.
func TestEndToEnd(t *testing.T) {
	c := nodetest.New(t)
	var urls []string
	for i := 1; i <= 3; i++ {
		n := c.Start(fmt.Sprintf("n%d", i), 3)
		urls = append(urls, "http://"+n.HTTPAddr())
	}
	leader := c.Leader()
	waitfor.Cond(t, 30*time.Second, "a leader in every partition group", func() bool {
		r := nodetest.Call(t, leader, "GET", "/management/v1/partitions", "")
		var pt struct {
			Groups []struct {
				Leader string `json:"leader"`
			} `json:"groups"`
		}
		if r.Status != 200 || json.Unmarshal([]byte(r.Body), &pt) != nil || len(pt.Groups) == 0 {
			return false
		}
		for _, g := range pt.Groups {
			if g.Leader == "" {
				return false
			}
		}
		return true
	})

	config := func(w kvbench.Workload, region string) kvbench.Config {
		cfg := kvbench.Default()
		cfg.Endpoints = append([]string(nil), urls...)
		cfg.Workload, cfg.Region, cfg.CreateRegion = w, region, "REPLICATE"
		cfg.Keys, cfg.ValueSize = 20, 200
		cfg.Concurrency = []int{4}
		cfg.MaxOps = 200
		cfg.Duration = 2 * time.Minute // the count ends each run
		return cfg
	}
	// run runs cfg, and checks that each point ended by its count with no
	// error (conflicts are CAS's expected answer).
	run := func(t *testing.T, cfg kvbench.Config) []kvbench.Result {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		results, err := kvbench.Run(ctx, cfg, kvbench.Output{})
		if err != nil {
			t.Fatalf("run: %v", err)
		}
		if len(results) != len(cfg.Concurrency) {
			t.Fatalf("%d results for %d points", len(results), len(cfg.Concurrency))
		}
		for _, r := range results {
			if r.Ops != cfg.MaxOps || r.Errors != 0 || r.OK+r.Conflicts != r.Ops {
				t.Errorf("c=%d: %d ops (%d ok, %d conflicts, %d errors %v), want %d without errors",
					r.Concurrency, r.Ops, r.OK, r.Conflicts, r.Errors, r.ErrorsByKind, cfg.MaxOps)
			}
			if r.OK > 0 && (r.Latency.P50 <= 0 || r.Latency.Max < r.Latency.P99 || r.OpsPerSec <= 0) {
				t.Errorf("c=%d: latency %+v, %v ops/s", r.Concurrency, r.Latency, r.OpsPerSec)
			}
		}
		return results
	}
	count := func(t *testing.T, region string) int {
		t.Helper()
		r := nodetest.MustCall(t, leader, "HEAD", "/kv/v1/"+region, "", 200)
		n, err := strconv.Atoi(r.Header.Get("Resource-Count"))
		if err != nil {
			t.Fatalf("Resource-Count %q", r.Header.Get("Resource-Count"))
		}
		return n
	}
	revisions := func(t *testing.T, region string, keys int) (sum int64) {
		t.Helper()
		for i := range keys {
			r := nodetest.MustCall(t, leader, "GET", fmt.Sprintf("/kv/v1/%s/kvbench-%08d", region, i), "", 200)
			var v struct {
				Type string `json:"@type"`
				Rev  int64  `json:"rev"`
			}
			if err := json.Unmarshal([]byte(r.Body), &v); err != nil || v.Type != "Order" {
				t.Fatalf("key %d: %s (%v)", i, r.Body, err)
			}
			sum += v.Rev
		}
		return sum
	}

	t.Run("put", func(t *testing.T) {
		cfg := config(kvbench.Put, "puts")
		cfg.Keys, cfg.Preload = 10, false
		run(t, cfg)
		// 200 uniform draws over 10 keys reach every key (but with odds
		// of 1 in 10^8), and only those.
		if n := count(t, "puts"); n != 10 {
			t.Errorf("%d entries after the puts, want the 10 keys", n)
		}
		revisions(t, "puts", 10)
	})

	t.Run("get", func(t *testing.T) {
		cfg := config(kvbench.Get, "gets")
		cfg.Warmup = 200 * time.Millisecond
		r := run(t, cfg)[0]
		if r.Consistency != "linearizable" || r.ByOp["get"].OK != 200 {
			t.Errorf("%+v", r)
		}
		if n := count(t, "gets"); n != cfg.Keys {
			t.Errorf("%d entries after the preload, want %d", n, cfg.Keys)
		}
	})

	t.Run("stale get sweep", func(t *testing.T) {
		cfg := config(kvbench.Get, "gets")
		cfg.Stale, cfg.Zipf, cfg.Concurrency, cfg.MaxOps = true, true, []int{1, 4}, 100
		for i, r := range run(t, cfg) {
			if r.Consistency != "stale" || r.Concurrency != cfg.Concurrency[i] {
				t.Errorf("point %d: %+v", i, r)
			}
		}
	})

	t.Run("put-if-absent", func(t *testing.T) {
		cfg := config(kvbench.PutIfAbsent, "creates")
		run(t, cfg)
		if n := count(t, "creates"); n != 200 {
			t.Errorf("%d entries after 200 put-if-absent, want 200", n)
		}
	})

	t.Run("cas", func(t *testing.T) {
		cfg := config(kvbench.CAS, "swaps")
		cfg.Keys = 5 // four clients on five keys: some races lost
		r := run(t, cfg)[0]
		if r.OK == 0 {
			t.Fatalf("no CAS succeeded: %+v", r)
		}
		// Each successful CAS raised one key's revision by one, from the
		// preload's 0; a lost race raised none.
		if sum := revisions(t, "swaps", cfg.Keys); sum != r.OK {
			t.Errorf("revisions add up to %d after %d successful CAS (%d conflicts)", sum, r.OK, r.Conflicts)
		}
	})

	t.Run("mixed", func(t *testing.T) {
		cfg := config(kvbench.Mixed, "gets")
		cfg.ReadPercent = 50
		r := run(t, cfg)[0]
		get, put := r.ByOp["get"], r.ByOp["put"]
		if get.OK == 0 || put.OK == 0 || get.OK+put.OK != 200 {
			t.Errorf("mixed: %d gets, %d puts", get.OK, put.OK)
		}
	})

	t.Run("multi-put", func(t *testing.T) {
		cfg := config(kvbench.MultiPut, "batches")
		cfg.Keys, cfg.Batch, cfg.Preload = 10, 4, false
		r := run(t, cfg)[0]
		if r.Batch != 4 || r.EntriesPerSec < 3.9*r.OpsPerSec {
			t.Errorf("multi-put: batch %d, %v entries/s at %v ops/s", r.Batch, r.EntriesPerSec, r.OpsPerSec)
		}
		if n := count(t, "batches"); n != 10 {
			t.Errorf("%d entries after 800 keys written in batches of 4 over 10 keys, want 10", n)
		}
		revisions(t, "batches", 10)
	})

	t.Run("ad-hoc query", func(t *testing.T) {
		cfg := config(kvbench.Query, "gets")
		cfg.Preload = false
		run(t, cfg)
	})

	t.Run("named query", func(t *testing.T) {
		cfg := config(kvbench.Query, "gets")
		cfg.Preload, cfg.NamedQuery, cfg.QueryID = false, true, "kvbench-e2e"
		run(t, cfg)
		r := nodetest.MustCall(t, leader, "GET", "/kv/v1/queries", "", 200)
		if !strings.Contains(r.Body, `{"id":"kvbench-e2e","oql":"SELECT * FROM /gets o WHERE o.customerId = $1"}`) {
			t.Errorf("queries: %s", r.Body)
		}
	})

	t.Run("partitioned region, leader routing", func(t *testing.T) {
		cfg := config(kvbench.Put, "events")
		cfg.CreateRegion, cfg.Route, cfg.Keys, cfg.Preload = "PARTITION", kvbench.Leader, 10, false
		r := run(t, cfg)[0]
		if r.RegionType != "PARTITION" || r.LeaderRouted != r.Ops {
			t.Errorf("%s region, %d of %d requests sent to a leader", r.RegionType, r.LeaderRouted, r.Ops)
		}
		if n := count(t, "events"); n != 10 {
			t.Errorf("%d entries, want 10", n)
		}
		var regions struct {
			Regions []struct{ Name, Type string }
		}
		_ = json.Unmarshal([]byte(nodetest.MustCall(t, leader, "GET", "/kv/v1", "", 200).Body), &regions)
		if !strings.Contains(fmt.Sprint(regions.Regions), "{events PARTITION}") {
			t.Errorf("regions: %v", regions.Regions)
		}
	})

	t.Run("fixed rate", func(t *testing.T) {
		cfg := config(kvbench.Get, "gets")
		cfg.Preload, cfg.Rate, cfg.MaxOps, cfg.Concurrency = false, 100, 50, []int{8}
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		results, err := kvbench.Run(ctx, cfg, kvbench.Output{})
		if err != nil || len(results) != 1 {
			t.Fatalf("%v, %v", results, err)
		}
		r := results[0]
		// 50 operations due over 0.5 s: each sent or counted unsent.
		if r.Mode != "fixed-rate" || r.Errors != 0 || r.Ops+r.Unsent != 50 || r.Seconds < 0.45 || r.Seconds > 10 {
			t.Errorf("fixed rate: %s, %d ops + %d unsent in %v s, %d errors", r.Mode, r.Ops, r.Unsent, r.Seconds, r.Errors)
		}
	})

	// The region creation refuses a type the region does not have.
	cfg := config(kvbench.Put, "events")
	cfg.MaxOps = 1
	if _, err := kvbench.Run(context.Background(), cfg, kvbench.Output{}); err == nil || !strings.Contains(err.Error(), "exists as PARTITION") {
		t.Errorf("creating events as REPLICATE: %v", err)
	}
}
