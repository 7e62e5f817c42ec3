package kvbench

import (
	"sync"
	"sync/atomic"
	"time"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"
)

// opKind is what one operation did, for the per-operation breakdown.
type opKind int

const (
	opGet opKind = iota
	opPut
	opCreate
	opCAS
	opMultiPut
	opQuery
	numKinds
)

var kindNames = [numKinds]string{"get", "put", "put-if-absent", "cas", "multi-put", "query"}

func (k opKind) String() string { return kindNames[k] }

// class is how an operation ended.
type class int

const (
	// done: the answer the operation wanted (200, 201).
	done class = iota
	// conflict: a CAS whose @old was no longer current (409), the API's
	// answer to a lost race, expected under concurrency.
	conflict
	// failed: anything else, counted by errorKind.
	failed
	// aborted: cut off by the end of the run (an interrupt), not counted.
	aborted
)

// outcome is one operation's result.
type outcome struct {
	kind    opKind
	class   class
	errKind string // when failed: OpError.Kind (a status code, timeout, transport...)
	entries int    // entries written or read when done
}

// Latencies are recorded in microseconds, from 1 µs to an hour (a fixed
// rate's backlog can outgrow any request timeout), to three significant
// digits.
const (
	histMin     = 1
	histMax     = int64(time.Hour / time.Microsecond)
	histSigDigs = 3
)

func newHistogram() *hdrhistogram.Histogram {
	return hdrhistogram.New(histMin, histMax, histSigDigs)
}

// recorder gathers the outcomes of one measured phase. Clients record into
// shards (client mod shards) so that they seldom wait for each other; a
// histogram costs ~200 KB, so there are not one per client.
type recorder struct {
	shards []shard
	// finished and errs are read by the progress line while clients run.
	finished atomic.Int64
	errs     atomic.Int64
}

type shard struct {
	mu    sync.Mutex
	kinds [numKinds]*tally
}

// tally is the count and latencies of one kind of operation.
type tally struct {
	ok, conflicts, errors, entries int64
	errKinds                       map[string]int64
	hist                           *hdrhistogram.Histogram
}

func newTally() *tally {
	return &tally{errKinds: map[string]int64{}, hist: newHistogram()}
}

const maxShards = 16

func newRecorder(clients int) *recorder {
	return &recorder{shards: make([]shard, min(max(clients, 1), maxShards))}
}

// record counts o, which took lat: the latencies of done operations and
// of conflicts (both complete round trips with the answer the API gives)
// go into the histogram; errors are counted by kind.
func (r *recorder) record(client int, o outcome, lat time.Duration) {
	if o.class == aborted {
		return
	}
	r.finished.Add(1)
	if o.class == failed {
		r.errs.Add(1)
	}
	s := &r.shards[client%len(r.shards)]
	s.mu.Lock()
	defer s.mu.Unlock()
	t := s.kinds[o.kind]
	if t == nil {
		t = newTally()
		s.kinds[o.kind] = t
	}
	switch o.class {
	case done:
		t.ok++
		t.entries += int64(o.entries)
	case conflict:
		t.conflicts++
	case failed:
		t.errors++
		t.errKinds[o.errKind]++
		return
	}
	us := min(max(lat.Microseconds(), histMin), histMax)
	_ = t.hist.RecordValue(us) // in range by construction
}

// merge adds u into t.
func (t *tally) merge(u *tally) {
	t.ok += u.ok
	t.conflicts += u.conflicts
	t.errors += u.errors
	t.entries += u.entries
	for k, n := range u.errKinds {
		t.errKinds[k] += n
	}
	t.hist.Merge(u.hist)
}

// tallies sums the shards: the whole phase and each kind of operation
// that happened. Call it once the clients have stopped.
func (r *recorder) tallies() (*tally, map[opKind]*tally) {
	total := newTally()
	byKind := map[opKind]*tally{}
	for i := range r.shards {
		s := &r.shards[i]
		s.mu.Lock()
		for k, t := range s.kinds {
			if t == nil {
				continue
			}
			if byKind[opKind(k)] == nil {
				byKind[opKind(k)] = newTally()
			}
			byKind[opKind(k)].merge(t)
			total.merge(t)
		}
		s.mu.Unlock()
	}
	return total, byKind
}
