package kvbench

import (
	"context"
	"errors"
	"math/rand/v2"
	"sync/atomic"
)

// worker is one simulated client: its random source, its key choice, and
// its way to the target.
type worker struct {
	id    int
	cfg   *Config
	c     Client
	rng   *rand.Rand
	keys  keyChooser
	names keyNamer
	run   string // the run's id, in fresh keys
	fresh uint64 // fresh keys made
	batch []int
	// next is the load workload's cursor, shared by the point's clients:
	// the first key not yet taken.
	next *atomic.Int64
}

func newWorker(id int, point int, cfg *Config, c Client, run string) *worker {
	rng := rand.New(rand.NewPCG(cfg.Seed, uint64(point)<<32|uint64(id)))
	return &worker{id: id, cfg: cfg, c: c, rng: rng, keys: newKeyChooser(cfg, rng), names: newKeyNamer(cfg), run: run}
}

// op runs one operation of the workload.
func (w *worker) op(ctx context.Context) outcome {
	switch w.cfg.Workload {
	case Get:
		return w.get(ctx)
	case PutIfAbsent:
		return w.create(ctx)
	case CAS:
		return w.cas(ctx)
	case Mixed:
		if w.rng.IntN(100) < w.cfg.ReadPercent {
			return w.get(ctx)
		}
		return w.put(ctx)
	case MultiPut:
		return w.multiPut(ctx)
	case Load:
		return w.load(ctx)
	case Query:
		return classify(ctx, opQuery, 1, w.c.(QueryClient).Query(ctx, w.rng))
	default:
		return w.put(ctx)
	}
}

// classify is how an operation that wrote or read entries ended: err nil
// is done, ErrConflict a conflict (a lost race, expected under
// concurrency), any other error a failure of its kind, but an error once
// ctx has ended (an interrupt), which is not counted.
func classify(ctx context.Context, kind opKind, entries int, err error) outcome {
	o := outcome{kind: kind}
	var oe *OpError
	switch {
	case err == nil:
		o.class, o.entries = done, entries
	case errors.Is(err, ErrConflict):
		o.class = conflict
	case ctx.Err() != nil:
		o.class = aborted
	case errors.As(err, &oe):
		o.class, o.errKind = failed, oe.Kind
	default:
		o.class, o.errKind = failed, "error"
	}
	return o
}

func (w *worker) put(ctx context.Context) outcome {
	i := w.keys.next()
	return classify(ctx, opPut, 1, w.c.Put(ctx, w.names.name(i), value(i, 0, w.cfg.ValueSize)))
}

func (w *worker) get(ctx context.Context) outcome {
	return classify(ctx, opGet, 1, w.c.Get(ctx, w.names.name(w.keys.next())))
}

// create puts a key no one has used: it must be created.
func (w *worker) create(ctx context.Context) outcome {
	w.fresh++
	key := w.names.fresh(w.run, w.id, w.fresh)
	return classify(ctx, opCreate, 1, w.c.Create(ctx, key, value(int(w.fresh), 0, w.cfg.ValueSize)))
}

// cas is a read-modify-write: read the current value, then swap it for
// the next revision. Its latency is both round trips; a lost race is a
// conflict, not an error.
func (w *worker) cas(ctx context.Context) outcome {
	c := w.c.(CASClient)
	i := w.keys.next()
	key := w.names.name(i)
	old, err := c.Read(ctx, key)
	if err != nil {
		o := classify(ctx, opCAS, 1, err)
		if o.class == failed {
			o.errKind = "read " + o.errKind
		}
		return o
	}
	rev, err := revision(old)
	if err != nil {
		return outcome{kind: opCAS, class: failed, errKind: "read: not a JSON object"}
	}
	return classify(ctx, opCAS, 1, c.CAS(ctx, key, old, value(i, rev+1, w.cfg.ValueSize)))
}

// multiPut writes Batch different keys in one operation.
func (w *worker) multiPut(ctx context.Context) outcome {
	w.batch = distinctKeys(w.keys, w.cfg.Batch, w.cfg.Keys, w.batch)
	keys := make([]string, len(w.batch))
	values := make([][]byte, len(w.batch))
	for j, i := range w.batch {
		keys[j], values[j] = w.names.name(i), value(i, 0, w.cfg.ValueSize)
	}
	return classify(ctx, opMultiPut, len(keys), w.c.PutMany(ctx, keys, values))
}

// load writes the next Batch keys of the key space not yet taken, each
// once (the point runs just enough operations to write them all).
func (w *worker) load(ctx context.Context) outcome {
	lo := int(w.next.Add(int64(w.cfg.Batch))) - w.cfg.Batch
	hi := min(lo+w.cfg.Batch, w.cfg.Keys)
	if lo >= hi {
		return outcome{kind: opMultiPut, class: failed, errKind: "no key left"}
	}
	keys, values := keyRange(w.cfg, w.names, lo, hi)
	return classify(ctx, opMultiPut, len(keys), w.c.PutMany(ctx, keys, values))
}
