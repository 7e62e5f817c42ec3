package watchbench

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync/atomic"
	"time"
)

// watcher is one stream on the watched member and its bookkeeping of
// this run's writes.
type watcher struct {
	id int
	// seen has a bit per write sequence number (writes of them): set when
	// received.
	seen   []uint64
	writes int64
	// distinct counts the writes received (the drain waits on it).
	distinct atomic.Int64
	// duplicates counts writes received again; outOfRange stamps whose
	// sequence number no write of this run had.
	duplicates, outOfRange int64
	// cause says why the stream ended before the run closed it ("" while
	// it is open, or when the run closed it).
	cause string
	// ended is set when the stream has stopped, for whatever reason (the
	// drain does not wait for it).
	ended atomic.Bool
	// pending holds latencies not yet handed to the shared histograms.
	pending []int64
}

func newWatcher(id int, writes int64) *watcher {
	return &watcher{id: id, seen: make([]uint64, (writes+63)/64), writes: writes, pending: make([]int64, 0, flushEvery)}
}

// watchStream is what a watcher needs of the run: where to connect and
// how, and what to record into.
type watchStream struct {
	hc     *http.Client // without a timeout: a stream lasts the run
	target target
	base   string // the watched member
	finder stampFinder
	lat    *latencies
	// now is the receive time of an event (time.Now; tests may pin it).
	now func() time.Time
}

// errEnded is a stream the server ended while the run still read it.
var errEnded = errors.New("stream ended")

// run opens the stream and reads it until ctx ends or the server ends it.
// ready is called once: with nil when the `ready` event arrives, or with
// the reason the watcher never got there.
func (w *watcher) run(ctx context.Context, s *watchStream, ready func(error)) {
	readied := false
	signal := func(err error) {
		if !readied {
			readied = true
			ready(err)
		}
	}
	err := w.read(ctx, s, func() { signal(nil) })
	defer w.ended.Store(true)
	w.flush(s.lat)
	if ctx.Err() != nil {
		signal(ctx.Err())
		return
	}
	w.cause = err.Error()
	signal(err)
}

// read is run's loop: err is why the stream stopped.
func (w *watcher) read(ctx context.Context, s *watchStream, ready func()) error {
	return s.target.watch(ctx, s.hc, s.base, ready, func(data []byte) {
		if st, ok := s.finder.find(data); ok {
			w.received(st, s.now(), s.lat)
		}
	})
}

// received records one write's event, received at now.
func (w *watcher) received(st stamp, now time.Time, lat *latencies) {
	if st.seq < 0 || st.seq >= w.writes {
		w.outOfRange++
		return
	}
	word, bit := st.seq/64, uint64(1)<<(st.seq%64)
	if w.seen[word]&bit != 0 {
		w.duplicates++
		return
	}
	w.seen[word] |= bit
	w.distinct.Add(1)
	w.pending = append(w.pending, (now.UnixNano()-st.sent)/int64(time.Microsecond))
	if len(w.pending) == cap(w.pending) {
		w.flush(lat)
	}
}

func (w *watcher) flush(lat *latencies) {
	if len(w.pending) > 0 {
		lat.add(w.id, w.pending)
		w.pending = w.pending[:0]
	}
}

// has says whether the watcher received write seq. Call it once run
// has returned.
func (w *watcher) has(seq int64) bool {
	return w.seen[seq/64]&(uint64(1)<<(seq%64)) != 0
}

// answerError is a request refused (a watch before its stream started):
// the status and the API's {"cause": ...}.
func answerError(what string, resp *http.Response) error {
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	var doc struct {
		Cause string `json:"cause"`
	}
	cause := strings.TrimSpace(string(body))
	if json.Unmarshal(body, &doc) == nil && doc.Cause != "" {
		cause = doc.Cause
	}
	err := fmt.Errorf("%s: %d %s", what, resp.StatusCode, cause)
	if resp.StatusCode == http.StatusServiceUnavailable {
		err = fmt.Errorf("%w (the member serves at most --max-watchers watches: start it with more)", err)
	}
	return err
}
