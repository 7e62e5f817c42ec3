package kvbench

import (
	"context"
	"math/rand/v2"
	"sync/atomic"
)

// worker is one simulated client: its random source, its key choice, and
// the count of its requests (which endpoint is next).
type worker struct {
	id    int
	cfg   *Config
	tx    *transport
	rng   *rand.Rand
	keys  keyChooser
	names keyNamer
	query *queryPlan
	run   string // the run's id, in fresh keys
	sent  uint64 // requests sent
	fresh uint64 // fresh keys made
	batch []int
	// next is the load workload's cursor, shared by the point's clients:
	// the first key not yet taken.
	next *atomic.Int64
}

func newWorker(id int, point int, cfg *Config, tx *transport, query *queryPlan, run string) *worker {
	rng := rand.New(rand.NewPCG(cfg.Seed, uint64(point)<<32|uint64(id)))
	return &worker{id: id, cfg: cfg, tx: tx, rng: rng, keys: newKeyChooser(cfg, rng), names: newKeyNamer(cfg), query: query, run: run}
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
		return w.runQuery(ctx)
	default:
		return w.put(ctx)
	}
}

// exchange sends r to the next endpoint and classifies the answer: want is
// done, 409 a conflict when conflicts are the API's expected answer, any
// other answer or none a failure.
func (w *worker) exchange(ctx context.Context, kind opKind, r request, want int, conflicts bool) (answer, outcome) {
	base := w.tx.endpoint(r, w.id, w.sent)
	w.sent++
	a, err := w.tx.send(ctx, base, r)
	o := outcome{kind: kind}
	switch {
	case err != nil && ctx.Err() != nil:
		o.class = aborted
	case err != nil:
		o.class, o.errKind = failed, errorKind(a, err)
	case a.status == want:
		o.class, o.entries = done, 1
	case conflicts && a.status == 409:
		o.class = conflict
	default:
		o.class, o.errKind = failed, errorKind(a, nil)
	}
	return a, o
}

func (w *worker) put(ctx context.Context) outcome {
	i := w.keys.next()
	_, o := w.exchange(ctx, opPut, putRequest(w.cfg.Region, w.names.name(i), value(i, 0, w.cfg.ValueSize)), 200, false)
	return o
}

func (w *worker) get(ctx context.Context) outcome {
	_, o := w.exchange(ctx, opGet, getRequest(w.cfg.Region, w.names.name(w.keys.next()), w.cfg.Stale), 200, false)
	return o
}

// create puts a key no one has used: it must be created (201).
func (w *worker) create(ctx context.Context) outcome {
	w.fresh++
	key := w.names.fresh(w.run, w.id, w.fresh)
	_, o := w.exchange(ctx, opCreate, createRequest(w.cfg.Region, key, value(int(w.fresh), 0, w.cfg.ValueSize)), 201, false)
	return o
}

// cas is a read-modify-write as the REST API requires it: GET the current
// value, then PUT ?op=CAS with it as @old and the next revision as @new.
// Its latency is both round trips; a 409 (another client swapped first) is
// a conflict, not an error.
func (w *worker) cas(ctx context.Context) outcome {
	i := w.keys.next()
	key := w.names.name(i)
	read := getRequest(w.cfg.Region, key, w.cfg.Stale)
	read.keep = true
	a, o := w.exchange(ctx, opCAS, read, 200, false)
	if o.class != done {
		if o.class == failed {
			o.errKind = "read " + o.errKind
		}
		return o
	}
	rev, err := revision(a.body)
	if err != nil {
		return outcome{kind: opCAS, class: failed, errKind: "read: not a JSON object"}
	}
	_, o = w.exchange(ctx, opCAS, casRequest(w.cfg.Region, key, a.body, value(i, rev+1, w.cfg.ValueSize)), 200, true)
	return o
}

// multiPut writes Batch different keys in one request.
func (w *worker) multiPut(ctx context.Context) outcome {
	w.batch = distinctKeys(w.keys, w.cfg.Batch, w.cfg.Keys, w.batch)
	keys := make([]string, len(w.batch))
	values := make([][]byte, len(w.batch))
	for j, i := range w.batch {
		keys[j], values[j] = w.names.name(i), value(i, 0, w.cfg.ValueSize)
	}
	_, o := w.exchange(ctx, opMultiPut, multiPutRequest(w.cfg.Region, keys, values), 200, false)
	if o.class == done {
		o.entries = len(keys)
	}
	return o
}

// load writes the next Batch keys of the key space not yet taken, each
// once (the point runs just enough operations to write them all).
func (w *worker) load(ctx context.Context) outcome {
	lo := int(w.next.Add(int64(w.cfg.Batch))) - w.cfg.Batch
	hi := min(lo+w.cfg.Batch, w.cfg.Keys)
	if lo >= hi {
		return outcome{kind: opMultiPut, class: failed, errKind: "no key left"}
	}
	keys := make([]string, 0, hi-lo)
	values := make([][]byte, 0, hi-lo)
	for i := lo; i < hi; i++ {
		keys = append(keys, w.names.name(i))
		values = append(values, value(i, 0, w.cfg.ValueSize))
	}
	r := putRequest(w.cfg.Region, keys[0], values[0])
	if len(keys) > 1 {
		r = multiPutRequest(w.cfg.Region, keys, values)
	}
	_, o := w.exchange(ctx, opMultiPut, r, 200, false)
	if o.class == done {
		o.entries = len(keys)
	}
	return o
}

func (w *worker) runQuery(ctx context.Context) outcome {
	_, o := w.exchange(ctx, opQuery, w.query.request(w.query.binds(w.rng)), 200, false)
	return o
}
