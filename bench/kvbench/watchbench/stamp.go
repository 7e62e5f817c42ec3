package watchbench

import (
	"bytes"
	"encoding/json"
	"strconv"
	"sync"
	"time"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"
)

// What a write stores, and how a watcher recognises it: the value carries
// the run's id, the write's sequence number and its send time in Unix
// nanoseconds, in this order and without spaces,
//
//	{"run":"lx2k9a","seq":42,"t":1764100000123456789}
//
// padded with a "pad" member up to the value size asked for. The watch
// contract sends values byte for byte, so a watcher finds the stamp by a
// byte search and decodes JSON only when that fails.

// encodeValue is the value of write seq of run, sent at t.
func encodeValue(run string, seq int64, t time.Time, size int) []byte {
	b := make([]byte, 0, max(size, 64))
	b = append(b, `{"run":"`...)
	b = append(b, run...)
	b = append(b, `","seq":`...)
	b = strconv.AppendInt(b, seq, 10)
	b = append(b, `,"t":`...)
	b = strconv.AppendInt(b, t.UnixNano(), 10)
	if pad := size - len(b) - len(`,"pad":""}`); pad > 0 {
		b = append(b, `,"pad":"`...)
		b = append(b, bytes.Repeat([]byte{'x'}, pad)...)
		b = append(b, '"')
	}
	return append(b, '}')
}

// stamp is what an event says about one write of this run.
type stamp struct {
	seq  int64
	sent int64 // Unix nanoseconds
}

// stampFinder finds this run's stamps in events' data.
type stampFinder struct {
	run    string
	marker []byte // `{"run":"RUN","seq":`
}

func newStampFinder(run string) stampFinder {
	return stampFinder{run: run, marker: []byte(`{"run":"` + run + `","seq":`)}
}

// find returns the stamp in an event's data, or false when the event is
// not about a write of this run (another writer's, or one without a
// value: destroy, expire, clear).
func (f stampFinder) find(data []byte) (stamp, bool) {
	if i := bytes.Index(data, f.marker); i >= 0 {
		rest := data[i+len(f.marker):]
		seq, rest, ok := leadingInt(rest)
		if ok && bytes.HasPrefix(rest, []byte(`,"t":`)) {
			if t, _, ok := leadingInt(rest[len(`,"t":`):]); ok {
				return stamp{seq: seq, sent: t}, true
			}
		}
	}
	if !bytes.Contains(data, []byte(f.run)) {
		return stamp{}, false
	}
	// The value came back in another shape: read it as JSON.
	var ev struct {
		Value struct {
			Run string `json:"run"`
			Seq *int64 `json:"seq"`
			T   *int64 `json:"t"`
		} `json:"value"`
	}
	if json.Unmarshal(data, &ev) != nil || ev.Value.Run != f.run || ev.Value.Seq == nil || ev.Value.T == nil {
		return stamp{}, false
	}
	return stamp{seq: *ev.Value.Seq, sent: *ev.Value.T}, true
}

// leadingInt parses the decimal digits b starts with.
func leadingInt(b []byte) (int64, []byte, bool) {
	n := 0
	for n < len(b) && n < 19 && b[n] >= '0' && b[n] <= '9' {
		n++
	}
	if n == 0 {
		return 0, b, false
	}
	v, err := strconv.ParseInt(string(b[:n]), 10, 64)
	return v, b[n:], err == nil
}

// Delivery latencies are recorded in microseconds, from 1 µs to an hour,
// to three significant digits, as kvbench records request latencies.
const (
	histMin     = 1
	histMax     = int64(time.Hour / time.Microsecond)
	histSigDigs = 3
)

// latencies merges the watchers' delivery latencies. A histogram costs
// ~200 KB, so a thousand watchers share a few, each behind its lock, and
// each watcher hands over its latencies in batches (flushEvery) so that
// the locks are taken seldom.
type latencies struct {
	shards []latencyShard
}

type latencyShard struct {
	mu sync.Mutex
	h  *hdrhistogram.Histogram
}

const (
	latencyShards = 16
	flushEvery    = 256
)

func newLatencies() *latencies {
	l := &latencies{shards: make([]latencyShard, latencyShards)}
	for i := range l.shards {
		l.shards[i].h = hdrhistogram.New(histMin, histMax, histSigDigs)
	}
	return l
}

// add records a watcher's batch of latencies in microseconds, clamped to
// the histogram's range (a latency below 1 µs, or negative after a clock
// step, counts as 1 µs).
func (l *latencies) add(watcher int, us []int64) {
	s := &l.shards[watcher%len(l.shards)]
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, v := range us {
		_ = s.h.RecordValue(min(max(v, histMin), histMax)) // in range by construction
	}
}

// merged is every latency recorded, in one histogram.
func (l *latencies) merged() *hdrhistogram.Histogram {
	out := hdrhistogram.New(histMin, histMax, histSigDigs)
	for i := range l.shards {
		s := &l.shards[i]
		s.mu.Lock()
		out.Merge(s.h)
		s.mu.Unlock()
	}
	return out
}
