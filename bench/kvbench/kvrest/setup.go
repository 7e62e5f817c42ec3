package kvrest

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/kvnode/kvnode/bench/kvbench"
)

// The setup of a run, before the first point: the region (created if
// asked), the named query. Each step retries what a cluster answers while
// it elects a leader (503, or no answer) and is bounded.

// setupWait bounds one setup step's retries.
const setupWait = 30 * time.Second

// retryable is an answer worth asking again: no leader right now, or no
// answer from that member (but for a certificate it does not trust, or a
// member refusing this client's certificate or its absence, which asking
// again will not change).
func retryable(a answer, err error) bool {
	if err != nil {
		return kvbench.TransportError(err).Retry
	}
	return a.status == 503
}

// call sends r to the endpoints in turn until one gives an answer that is
// not retryable, for at most setupWait.
func (t *target) call(ctx context.Context, r request) (answer, error) {
	ctx, cancel := context.WithTimeout(ctx, setupWait)
	defer cancel()
	tx := t.tx
	var a answer
	var err error
	for n := 0; ; n++ {
		a, err = tx.send(ctx, tx.endpoints[n%len(tx.endpoints)], r)
		if !retryable(a, err) {
			return a, err
		}
		if n == len(tx.endpoints)-1 {
			why := "503"
			if err != nil {
				why = err.Error()
			}
			t.logf("waiting up to %v for the cluster (%s %s: %s)", setupWait, r.method, r.path, why)
		}
		if !kvbench.SleepUntil(ctx, time.Now().Add(250*time.Millisecond)) {
			if err == nil {
				err = unexpected(r.method+" "+r.path, a)
			}
			return a, fmt.Errorf("%s %s: gave up after %v: %w", r.method, r.path, setupWait, err)
		}
	}
}

// createRegion creates cfg's region with the management API; an existing
// region of the same type is fine.
func (t *target) createRegion(ctx context.Context) error {
	cfg := t.cfg
	r := createRegionRequest(cfg.Region, cfg.CreateRegion)
	a, err := t.call(ctx, r)
	switch {
	case err != nil:
		return fmt.Errorf("create region: %w", err)
	case a.status == 201:
		return nil
	case a.status == 409:
		kind, err := t.lookupRegion(ctx)
		if err != nil {
			return err
		}
		if kind != cfg.CreateRegion {
			return fmt.Errorf("create region %s as %s: it exists as %s", cfg.Region, cfg.CreateRegion, kind)
		}
		return nil
	default:
		return fmt.Errorf("create region: %w", unexpected(r.method+" "+r.path, a))
	}
}

// lookupRegion is the type of the region (REPLICATE or PARTITION), which
// must exist.
func (t *target) lookupRegion(ctx context.Context) (string, error) {
	cfg := t.cfg
	a, err := t.call(ctx, listRegionsRequest)
	if err != nil {
		return "", fmt.Errorf("list regions: %w", err)
	}
	if a.status != 200 {
		return "", fmt.Errorf("list regions: %w", unexpected("GET "+kvPrefix, a))
	}
	var doc struct {
		Regions []struct {
			Name string `json:"name"`
			Type string `json:"type"`
		} `json:"regions"`
	}
	if err := json.Unmarshal(a.body, &doc); err != nil {
		return "", fmt.Errorf("list regions: %w", err)
	}
	for _, r := range doc.Regions {
		if r.Name == cfg.Region {
			return r.Type, nil
		}
	}
	return "", fmt.Errorf("region %q does not exist: create it with --create-region %s:REPLICATE (or :PARTITION)", cfg.Region, cfg.Region)
}

// storeQuery stores the named query under its id, replacing the text of a
// query of the same id.
func (t *target) storeQuery(ctx context.Context) error {
	q := t.query
	r := createQueryRequest(q.id, q.text)
	a, err := t.call(ctx, r)
	if err != nil {
		return fmt.Errorf("store query %s: %w", q.id, err)
	}
	switch a.status {
	case 201:
		return nil
	case 409:
		u := updateQueryRequest(q.id, q.text)
		a, err := t.call(ctx, u)
		if err != nil {
			return fmt.Errorf("update query %s: %w", q.id, err)
		}
		if a.status != 200 {
			return fmt.Errorf("update query %s: %w", q.id, unexpected(u.method+" "+u.path, a))
		}
		return nil
	default:
		return fmt.Errorf("store query %s: %w", q.id, unexpected(r.method+" "+r.path, a))
	}
}

// leaderRefresh is how often --route leader asks again who leads.
const leaderRefresh = 5 * time.Second

// leaderWait bounds the wait for every group to have a leader, as a
// cluster just started has not yet.
const leaderWait = 10 * time.Second

// findLeaders makes the first leader map, waiting up to leaderWait for a
// leader in every group; the keys of a group still without one go round
// robin until a refresh finds it.
func (t *target) findLeaders(ctx context.Context) error {
	deadline := time.Now().Add(leaderWait)
	for {
		lm, err := t.fetchLeaders(ctx)
		if err != nil {
			return fmt.Errorf("--route leader: %w", err)
		}
		t.tx.leaders.Store(lm)
		n := lm.unknown()
		if n == 0 {
			return nil
		}
		if !time.Now().Before(deadline) || !kvbench.SleepUntil(ctx, time.Now().Add(250*time.Millisecond)) {
			if lm.partitioned {
				t.logf("leader routing: %d of %d buckets have no leader yet; their keys go round robin until one is elected", n, len(lm.bucketURL))
			} else {
				t.logf("leader routing: the control group has no leader yet; keys go round robin until one is elected")
			}
			return nil
		}
	}
}

// refreshLeaders asks who leads every leaderRefresh until ctx ends; a
// failed look keeps the map it has.
func (t *target) refreshLeaders(ctx context.Context) {
	tick := time.NewTicker(leaderRefresh)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
			if lm, err := t.fetchLeaders(ctx); err == nil {
				t.tx.leaders.Store(lm)
			} else if ctx.Err() == nil {
				t.logf("leader routing: %v (keeping the last map)", err)
			}
		}
	}
}
