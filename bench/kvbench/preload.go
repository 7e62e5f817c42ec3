package kvbench

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"
)

// preloadBatch is the number of keys of one preload write (under etcd's
// limit of 128 operations in a transaction).
const preloadBatch = 100

// preloadAttempts bounds the tries of one preload write while the system
// answers that it has no leader yet, or nothing.
const preloadAttempts = 20

// preload writes every key of the key space at revision 0 in PutMany
// writes (upserts, so that a retry is harmless) through the first workers
// clients of t, bounded by cfg.PreloadTimeout.
func preload(ctx context.Context, cfg *Config, t Target, workers int) error {
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
			c := t.Client(w)
			for ctx.Err() == nil {
				b := int(next.Add(1) - 1)
				if b >= batches {
					return
				}
				lo, hi := b*preloadBatch, min((b+1)*preloadBatch, cfg.Keys)
				if err := preloadRange(ctx, cfg, c, names, lo, hi); err != nil {
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

// preloadRange writes keys [lo, hi), trying again while the system answers
// that it may succeed later.
func preloadRange(ctx context.Context, cfg *Config, c Client, names keyNamer, lo, hi int) error {
	keys, values := keyRange(cfg, names, lo, hi)
	for attempt := 1; ; attempt++ {
		err := c.PutMany(ctx, keys, values)
		switch {
		case err == nil:
			return nil
		case ctx.Err() != nil:
			return ctx.Err()
		case !retryable(err) || attempt >= preloadAttempts:
			return fmt.Errorf("keys %s..%s: %w", keys[0], keys[len(keys)-1], err)
		}
		if !SleepUntil(ctx, time.Now().Add(250*time.Millisecond)) {
			return ctx.Err()
		}
	}
}

// keyRange is the keys [lo, hi) and their values at revision 0.
func keyRange(cfg *Config, names keyNamer, lo, hi int) ([]string, [][]byte) {
	keys := make([]string, 0, hi-lo)
	values := make([][]byte, 0, hi-lo)
	for i := lo; i < hi; i++ {
		keys = append(keys, names.name(i))
		values = append(values, value(i, 0, cfg.ValueSize))
	}
	return keys, values
}
