package kvrest

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/kvnode/kvnode/bench/kvbench"
	"github.com/kvnode/kvnode/client"
)

// The setup of a run, before the first point: the region (created if
// asked), the routing document under --route leader, the named query.
// Each step retries what a cluster answers while it elects a leader (503,
// an unknown outcome, no answer) and is bounded.

// setupWait bounds one setup step's retries.
const setupWait = 30 * time.Second

// setupRetryable is an error of a setup step worth asking again: no
// leader right now, or no answer from the members (but for a certificate
// refused, which asking again will not change), or a creation whose
// outcome is unknown (asking again finds what it created: an existing
// region or query of the same text is accepted).
func setupRetryable(err error) bool {
	var oe *kvbench.OpError
	return errors.Is(err, client.ErrOutcomeUnknown) || errors.As(opError(err), &oe) && oe.Retry
}

// retry runs step until it succeeds or fails for a reason asking again
// will not change, for at most setupWait.
func (t *target) retry(ctx context.Context, what string, step func(ctx context.Context) error) error {
	ctx, cancel := context.WithTimeout(ctx, setupWait)
	defer cancel()
	for n := 0; ; n++ {
		err := step(ctx)
		if err == nil || !setupRetryable(err) || ctx.Err() != nil {
			return err
		}
		if n == 0 {
			t.logf("waiting up to %v for the cluster (%s: %v)", setupWait, what, err)
		}
		if !kvbench.SleepUntil(ctx, time.Now().Add(250*time.Millisecond)) {
			return fmt.Errorf("gave up after %v: %w", setupWait, err)
		}
	}
}

// createRegion creates cfg's region; an existing region of the same type
// is fine.
func (t *target) createRegion(ctx context.Context) error {
	cfg := t.cfg
	err := t.retry(ctx, "create region", func(ctx context.Context) error {
		return t.c.CreateRegion(ctx, client.RegionInfo{Name: cfg.Region, Type: cfg.CreateRegion})
	})
	switch {
	case err == nil:
		return nil
	case errors.Is(err, client.ErrConflict):
		kind, err := t.lookupRegion(ctx)
		if err != nil {
			return err
		}
		if kind != cfg.CreateRegion {
			return fmt.Errorf("create region %s as %s: it exists as %s", cfg.Region, cfg.CreateRegion, kind)
		}
		return nil
	default:
		return fmt.Errorf("create region: %w", err)
	}
}

// lookupRegion is the type of the region (REPLICATE or PARTITION), which
// must exist (Client.Regions: GET /kv/v1, DATA:READ).
func (t *target) lookupRegion(ctx context.Context) (string, error) {
	var regions []client.RegionInfo
	err := t.retry(ctx, "list regions", func(ctx context.Context) error {
		var err error
		regions, err = t.c.Regions(ctx)
		return err
	})
	if err != nil {
		return "", fmt.Errorf("list regions: %w", err)
	}
	for _, r := range regions {
		if r.Name == t.cfg.Region {
			return r.Type, nil
		}
	}
	return "", fmt.Errorf("region %q does not exist: create it with --create-region %s:REPLICATE (or :PARTITION)", t.cfg.Region, t.cfg.Region)
}

// leaderWait bounds the wait for every group to have a leader, as a
// cluster just started has not yet.
const leaderWait = 10 * time.Second

// findLeaders reads the routing document (Client.Routing, which the client
// routes by from then on) until every group has a leader, for at most
// leaderWait; the keys of a group still without one go to the members in
// turn until the client reads a document that names it. Every leader's
// URL must pass the endpoint rules, as the endpoints given did.
func (t *target) findLeaders(ctx context.Context) error {
	deadline := time.Now().Add(leaderWait)
	for {
		var rt *client.Routing
		err := t.retry(ctx, "routing document", func(ctx context.Context) error {
			var err error
			rt, err = t.c.Routing(ctx)
			return err
		})
		if err != nil {
			return fmt.Errorf("--route leader: reading the routing document (it needs CLUSTER:READ): %w", err)
		}
		n, err := leaderless(t.cfg, rt)
		if err != nil {
			return fmt.Errorf("--route leader: %w", err)
		}
		if n == 0 {
			return nil
		}
		if !time.Now().Before(deadline) || !kvbench.SleepUntil(ctx, time.Now().Add(250*time.Millisecond)) {
			t.logf("leader routing: %d of %d groups have no leader yet; their keys go to the members in turn until one is elected", n, len(rt.Groups))
			return nil
		}
	}
}

// leaderless counts the groups of rt without a leader, and refuses a
// leader's URL that the endpoint rules refuse (off this machine without
// --allow-nonloopback).
func leaderless(cfg *kvbench.Config, rt *client.Routing) (int, error) {
	n := 0
	for _, g := range rt.Groups {
		if g.URL == "" {
			n++
			continue
		}
		if _, err := cfg.CheckURL(g.URL); err != nil {
			return 0, fmt.Errorf("group %d's leader %s: %w", g.Group, g.Leader, err)
		}
	}
	if len(rt.Groups) == 0 {
		n = 1 // no table yet
	}
	return n, nil
}
