package kvbench

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// The setup of a run, before the first point: the region (created if
// asked), the named query, the preload. Each step retries what a cluster
// answers while it elects a leader (503, or no answer) and is bounded.

// setupWait bounds one setup step's retries.
const setupWait = 30 * time.Second

// retryable is an answer worth asking again: no leader right now, or no
// answer from that member (but for a certificate it does not trust, or a
// member refusing this client's certificate or its absence, which asking
// again will not change).
func retryable(a answer, err error) bool {
	var cve *tls.CertificateVerificationError
	var op *net.OpError
	if errors.As(err, &cve) || errors.As(err, &op) && op.Op == "remote error" && strings.Contains(op.Err.Error(), "certificate") {
		return false
	}
	return err != nil || a.status == 503
}

// call sends r to the endpoints in turn until one gives an answer that is
// not retryable, for at most setupWait.
func (b *bench) call(ctx context.Context, r request) (answer, error) {
	ctx, cancel := context.WithTimeout(ctx, setupWait)
	defer cancel()
	t := b.tx
	var a answer
	var err error
	for n := 0; ; n++ {
		a, err = t.send(ctx, t.endpoints[n%len(t.endpoints)], r)
		if !retryable(a, err) {
			return a, err
		}
		if n == len(t.endpoints)-1 {
			why := "503"
			if err != nil {
				why = err.Error()
			}
			b.logf("waiting up to %v for the cluster (%s %s: %s)", setupWait, r.method, r.path, why)
		}
		if !SleepUntil(ctx, time.Now().Add(250*time.Millisecond)) {
			if err == nil {
				err = unexpected(r.method+" "+r.path, a)
			}
			return a, fmt.Errorf("%s %s: gave up after %v: %w", r.method, r.path, setupWait, err)
		}
	}
}

// createRegion creates cfg's region with the management API; an existing
// region of the same type is fine.
func (b *bench) createRegion(ctx context.Context) error {
	cfg := b.cfg
	r := createRegionRequest(cfg.Region, cfg.CreateRegion)
	a, err := b.call(ctx, r)
	switch {
	case err != nil:
		return fmt.Errorf("create region: %w", err)
	case a.status == 201:
		return nil
	case a.status == 409:
		kind, err := b.lookupRegion(ctx)
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
func (b *bench) lookupRegion(ctx context.Context) (string, error) {
	cfg := b.cfg
	a, err := b.call(ctx, listRegionsRequest)
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
func (b *bench) storeQuery(ctx context.Context) error {
	q := b.query
	r := createQueryRequest(q.id, q.text)
	a, err := b.call(ctx, r)
	if err != nil {
		return fmt.Errorf("store query %s: %w", q.id, err)
	}
	switch a.status {
	case 201:
		return nil
	case 409:
		u := updateQueryRequest(q.id, q.text)
		a, err := b.call(ctx, u)
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

// preloadBatch is the number of keys of one preload request.
const preloadBatch = 100

// preload writes every key of the key space at revision 0 in multi-key
// puts (upserts, so that a retry is harmless), with up to workers requests
// in flight, bounded by cfg.PreloadTimeout.
func preload(ctx context.Context, cfg *Config, t *transport, workers int) error {
	ctx, cancel := context.WithTimeout(ctx, cfg.PreloadTimeout)
	defer cancel()
	names := newKeyNamer(cfg)
	batches := (cfg.Keys + preloadBatch - 1) / preloadBatch
	var next atomic.Int64
	var mu sync.Mutex
	var firstErr error
	var wg sync.WaitGroup
	for w := range min(workers, batches) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for n := uint64(w); ctx.Err() == nil; n++ {
				b := int(next.Add(1) - 1)
				if b >= batches {
					return
				}
				lo, hi := b*preloadBatch, min((b+1)*preloadBatch, cfg.Keys)
				if err := preloadRange(ctx, cfg, t, names, lo, hi, n); err != nil {
					mu.Lock()
					firstErr = cmpErr(firstErr, err)
					mu.Unlock()
					cancel()
					return
				}
			}
		}()
	}
	wg.Wait()
	if firstErr == nil && next.Load() < int64(batches) {
		firstErr = ctx.Err()
	}
	if firstErr != nil {
		return fmt.Errorf("preload: %w", firstErr)
	}
	return nil
}

func cmpErr(first, err error) error {
	if first == nil || errors.Is(first, context.Canceled) {
		return err
	}
	return first
}

// preloadRange writes keys [lo, hi), trying again while the cluster
// answers 503 or not at all.
func preloadRange(ctx context.Context, cfg *Config, t *transport, names keyNamer, lo, hi int, n uint64) error {
	keys := make([]string, 0, hi-lo)
	values := make([][]byte, 0, hi-lo)
	for i := lo; i < hi; i++ {
		keys = append(keys, names.name(i))
		values = append(values, value(i, 0, cfg.ValueSize))
	}
	r := putRequest(cfg.Region, keys[0], values[0])
	if len(keys) > 1 {
		r = multiPutRequest(cfg.Region, keys, values)
	}
	r.keep = true
	for attempt := uint64(0); ; attempt++ {
		a, err := t.send(ctx, t.endpoints[(n+attempt)%uint64(len(t.endpoints))], r)
		switch {
		case err == nil && a.status == 200:
			return nil
		case ctx.Err() != nil:
			return ctx.Err()
		case !retryable(a, err) || attempt >= 20:
			if err != nil {
				return fmt.Errorf("keys %s..%s: %w", keys[0], keys[len(keys)-1], err)
			}
			return fmt.Errorf("keys %s..%s: %w", keys[0], keys[len(keys)-1], unexpected(r.method+" "+kvPrefix+"/"+cfg.Region+"/...", a))
		}
		if !SleepUntil(ctx, time.Now().Add(250*time.Millisecond)) {
			return ctx.Err()
		}
	}
}
