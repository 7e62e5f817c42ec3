package watchbench

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"

	"github.com/kvnode/kvnode/bench/kvbench"
	"github.com/kvnode/kvnode/client"
)

// Outcome of each write, by sequence number.
const (
	writeUnsent byte = iota
	writeOK
	writeFailed
)

// writes is the writer's record: each write's outcome, the latency of the
// acknowledged ones, and the failures by kind.
type writes struct {
	outcome []byte // by sequence number; each written by the one client that took it
	mu      sync.Mutex
	hist    *hdrhistogram.Histogram
	errors  map[string]int64
	// first and last bound the writes' sends.
	start, end time.Time
}

// writeAll writes cfg.writes() values at cfg.Rate per second, write seq
// due at start + seq/rate, spread over cfg.Keys keys and the endpoints in
// turn, with cfg.Concurrency[0] writes in flight at most. No write starts
// at or after start + cfg.Duration, nor after ctx ends. Each value carries
// its actual send time; the acknowledgement latency is measured from the
// time the write was due, as kvbench's fixed rate does, so that a stalled
// member is not hidden.
func writeAll(ctx context.Context, cfg *Config, tg target, hc *http.Client, run string) *writes {
	n := cfg.writes()
	w := &writes{outcome: make([]byte, n), hist: hdrhistogram.New(histMin, histMax, histSigDigs), errors: map[string]int64{}}
	w.start = time.Now()
	end := w.start.Add(cfg.Duration)
	var tickets atomic.Int64
	var wg sync.WaitGroup
	for range cfg.Concurrency[0] {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ctx.Err() == nil {
				seq := tickets.Add(1) - 1
				if seq >= n {
					return
				}
				due := w.start.Add(time.Duration(float64(seq) / cfg.Rate * float64(time.Second)))
				if !due.Before(end) || !kvbench.SleepUntil(ctx, due) || !time.Now().Before(end) {
					return
				}
				base := cfg.Endpoints[seq%int64(len(cfg.Endpoints))]
				key := cfg.KeyPrefix + strconv.FormatInt(seq%int64(cfg.Keys), 10)
				err := tg.put(ctx, hc, base, key, encodeValue(run, seq, time.Now(), cfg.ValueSize))
				w.record(seq, time.Since(due), err)
			}
		}()
	}
	wg.Wait()
	w.end = time.Now()
	return w
}

func (w *writes) record(seq int64, lat time.Duration, err error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if err != nil {
		w.outcome[seq] = writeFailed
		w.errors[errorKind(err)]++
		return
	}
	w.outcome[seq] = writeOK
	_ = w.hist.RecordValue(min(max(lat.Microseconds(), histMin), histMax))
}

// count is the number of writes with outcome o.
func (w *writes) count(o byte) int64 {
	return int64(bytes.Count(w.outcome, []byte{o}))
}

// statusError is a write etcd answered with something else than 200 (a
// kvnode member's refusal is a *client.Error).
type statusError struct{ status int }

func (e *statusError) Error() string { return fmt.Sprintf("write answered %d", e.status) }

// errorKind names a failed write as kvbench does: its status code,
// timeout, or transport when no answer came.
func errorKind(err error) string {
	var se *statusError
	var ce *client.Error
	var ne net.Error
	switch {
	case errors.As(err, &se):
		return strconv.Itoa(se.status)
	case errors.As(err, &ce):
		return strconv.Itoa(ce.Status)
	case errors.Is(err, context.DeadlineExceeded) || errors.As(err, &ne) && ne.Timeout():
		return "timeout"
	default:
		return "transport"
	}
}
