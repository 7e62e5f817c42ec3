package query

import (
	"context"
	"encoding/json"
	"runtime"
	"sync"

	"github.com/kvnode/kvnode/index"
	"github.com/kvnode/kvnode/oql"
	"github.com/kvnode/kvnode/store/regions"
)

// A full scan of a large replicated region is spread over the cores: one
// goroutine walks the region (a copy-on-write clone of its tree, so writes
// go on) and deals its entries in chunks, round robin, to one partial per
// worker; the partials are merged as a partitioned region's are. Reading
// the stored JSON of each entry is the cost of a scan (a predicate over a
// million entries is ~0.4 s on one core), and the walk itself is cheap.
//
// Only queries that oql says are Splittable take this way (their answer
// does not depend on the order of the scan, and they read the region
// once), and only over regions of at least parallelMinEntries entries and
// without indexes (the planner might serve them from an index, which a
// chunk cannot). The deal is round robin rather than first come, so that
// the same data gives the same partials: a SUM of doubles adds in the same
// order on every run.
const (
	parallelMinEntries = 64 << 10
	parallelMaxWorkers = 8
	chunkEntries       = 1024
)

// scanWorkers is how many partials a long scan is split into here.
func scanWorkers() int { return min(runtime.GOMAXPROCS(0), parallelMaxWorkers) }

// parallelizable says whether q over the replicated region ref is worth
// and safe to split over workers (see above).
func (qs *source) parallelizable(q *oql.Query, ref regions.Ref, workers int) bool {
	if workers < 2 || !q.Splittable() || len(qs.indexDefs(ref)) > 0 {
		return false
	}
	n, err := qs.f0.Count(ref.Name, 0)
	return err == nil && n >= parallelMinEntries
}

// scanParallel runs q as workers partials over the replicated region ref
// and merges them.
func (e *Engine) scanParallel(ctx context.Context, qs *source, ref regions.Ref, q *oql.Query, params []any, opt oql.Options, workers int) (*oql.Result, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	feeds := make([]chan []kv, workers)
	for i := range feeds {
		feeds[i] = make(chan []kv, 2)
	}
	// Chunks come back when a worker is done with them (rows keep the
	// values, never the chunk): a chunk is 40 KiB, which the runtime
	// would otherwise allocate and clear a thousand times a million entries.
	free := make(chan []kv, 4*workers)
	go func() {
		defer func() {
			for _, ch := range feeds {
				close(ch)
			}
		}()
		fresh := func() []kv {
			select {
			case c := <-free:
				return c[:0]
			default:
				return make([]kv, 0, chunkEntries)
			}
		}
		chunk, next := fresh(), 0
		send := func() bool {
			select {
			case feeds[next] <- chunk:
			case <-ctx.Done():
				return false
			}
			chunk, next = fresh(), (next+1)%workers
			return true
		}
		err := qs.f0.Scan(ref.Name, 0, func(k string, v json.RawMessage) bool {
			chunk = append(chunk, kv{k, v})
			return len(chunk) < chunkEntries || send()
		})
		if err == nil && len(chunk) > 0 {
			send()
		}
	}()

	parts := make([]*oql.Partial, workers)
	errs := make([]error, workers)
	var wg sync.WaitGroup
	for i := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			shard := &chunkSource{qs: qs, scatter: q.ScatterRegion(), feed: feeds[i], free: free}
			parts[i], errs[i] = q.ExecutePartial(ctx, qs, shard, params, opt)
			if errs[i] != nil {
				cancel()
			}
			shard.drain()
		}()
	}
	wg.Wait()
	if err := regions.FirstError(errs); err != nil {
		return nil, err
	}
	return q.Merge(ctx, parts, params, opt)
}

// kv is one entry dealt to a worker.
type kv struct {
	key   string
	value []byte
}

// chunkSource is one worker's oql.Source: the scatter region is the chunks
// dealt to it, everything else reads through qs.
type chunkSource struct {
	qs      *source
	scatter string
	feed    <-chan []kv
	free    chan<- []kv // where a chunk goes once read (dropped when full; dies with the query)
	drained bool
}

func (cs *chunkSource) Scan(ctx context.Context, path string, fn func(key string, value []byte) bool) error {
	if path != cs.scatter {
		return cs.qs.Scan(ctx, path, fn)
	}
	for chunk := range cs.feed {
		for _, e := range chunk {
			if !fn(e.key, e.value) {
				return ctx.Err()
			}
		}
		select {
		case cs.free <- chunk:
		default:
		}
	}
	cs.drained = true
	return ctx.Err()
}

// drain takes whatever is left for this worker (one that stopped early),
// so that the dealer never waits on it.
func (cs *chunkSource) drain() {
	if !cs.drained {
		for range cs.feed {
		}
	}
}

func (cs *chunkSource) Get(ctx context.Context, path, key string) ([]byte, bool, error) {
	return cs.qs.Get(ctx, path, key)
}

func (cs *chunkSource) Size(ctx context.Context, path string) (int, error) {
	return cs.qs.Size(ctx, path)
}

// Indexes has none for the scatter region (parallelizable picks regions
// without), the source's for the others.
func (cs *chunkSource) Indexes(path string) []index.Def {
	if path == cs.scatter {
		return nil
	}
	return cs.qs.Indexes(path)
}

func (cs *chunkSource) ScanIndex(ctx context.Context, path, name string, ranges []index.Range, fn func(key string, value []byte) bool) (bool, error) {
	if path == cs.scatter {
		return false, nil
	}
	return cs.qs.ScanIndex(ctx, path, name, ranges, fn)
}

// ValuesImmutable: as source's.
func (cs *chunkSource) ValuesImmutable() {}
