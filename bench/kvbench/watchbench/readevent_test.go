package watchbench

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"
)

// BenchmarkReadEvent is a kvnode watcher's cost per event received
// (client.Watch over HTTP: SSE, the event's JSON, the stamp, the
// bookkeeping): at 1,000 watchers × 1,000 writes/s the tool reads a
// million events a second on the member's machine, so this bounds what
// the tool takes from the member it measures. ns/op is per event:
//
//	go test -run '^$' -bench ReadEvent -benchmem -benchtime 400000x ./bench/kvbench/watchbench
//
// Issue 31 moved the watchers from a reader of their own onto
// client.Watch (Undecoded: the stamp is found in the data). Quiet 2 vCPU
// Xeon, 2026-11-29: the own reader at 763c804 0.41-0.46 µs and 2
// allocations an event, client.Watch then 3.2-3.8 µs and 19; client.Watch
// since (SSE lines as bytes, events read by jsonscan) 0.92-1.10 µs and 3,
// Undecoded 0.59-0.71 µs and 2.
func BenchmarkReadEvent(b *testing.B) {
	const events = 1 << 16
	stream := []byte("event: ready\nid: 0:1.0\ndata: {\"type\":\"ready\"}\n\n")
	for seq := range events {
		v := encodeValue("r1", int64(seq), time.Now(), 0)
		stream = fmt.Appendf(stream, "event: update\nid: 0:%d.0\ndata: {\"type\":\"update\",\"region\":\"watched\",\"key\":\"w-%d\",\"value\":%s}\n\n", seq+2, seq%1000, v)
	}
	stream = append(stream, "event: end\ndata: {\"type\":\"end\",\"cause\":\"done\"}\n\n"...)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		_, _ = w.Write(stream)
	}))
	b.Cleanup(srv.Close)
	k := &kvnodeTarget{region: "watched"}
	s := &watchStream{hc: &http.Client{Transport: &http.Transport{}}, target: k, base: srv.URL,
		finder: newStampFinder("r1"), lat: newLatencies(), now: time.Now}
	b.SetBytes(int64(len(stream) / events))
	b.ResetTimer()
	for n := 0; n < b.N; n += events {
		w := newWatcher(0, events)
		w.run(context.Background(), s, func(error) {})
		if got := w.distinct.Load(); got != events {
			b.Fatalf("%d events of %d read (%s)", got, events, w.cause)
		}
	}
}
