package watchbench

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/kvnode/kvnode/client"
)

// Why the kvnode watcher reads its streams itself rather than through
// client.Watch (issue 31 asked to move it): at issue 21's load, 1,000
// watchers of 1,000 writes/s, kvbench reads ~1 M events a second on a
// machine it shares with the member, and its own reader costs ~2 allocations
// per event where client.Watch's (a general SSE reader, then each event's
// JSON decoded into an Event) costs ~18 and ~1 KB: several µs more per
// event, more CPU than the machine has at that rate, so that the delivery
// latency measured would be kvbench's. These two benchmarks read the same
// stream over HTTP both ways (ns/op is per event):
//
//	go test -run '^$' -bench StreamOf -benchmem -benchtime 400000x ./bench/kvbench/watchbench

// cmpStream is a stream of events updates, between a ready and an end.
func cmpStream(events int) []byte {
	stream := []byte("event: ready\nid: 0:1.0\ndata: {\"type\":\"ready\"}\n\n")
	for seq := range events {
		v := encodeValue("r1", int64(seq), time.Now(), 0)
		stream = fmt.Appendf(stream, "event: update\nid: 0:%d.0\ndata: {\"type\":\"update\",\"region\":\"watched\",\"key\":\"w-%d\",\"value\":%s}\n\n", seq+2, seq%1000, v)
	}
	return append(stream, "event: end\ndata: {\"type\":\"end\",\"cause\":\"done\"}\n\n"...)
}

// cmpServer answers every request with stream.
func cmpServer(b *testing.B, stream []byte) *httptest.Server {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		_, _ = w.Write(stream)
	}))
	b.Cleanup(srv.Close)
	return srv
}

// cmpEvents is the length of one stream; a benchmark reads as many as
// its b.N events take.
const cmpEvents = 1 << 16

func BenchmarkStreamOfOwnReader(b *testing.B) {
	srv := cmpServer(b, cmpStream(cmpEvents))
	f, lat := newStampFinder("r1"), newLatencies()
	k := &kvnodeTarget{region: "watched"}
	b.ResetTimer()
	n := 0
	for n < b.N {
		w := newWatcher(0, cmpEvents)
		_ = k.watch(context.Background(), http.DefaultClient, srv.URL, func() {}, func(data []byte) {
			if st, ok := f.find(data); ok {
				w.received(st, time.Now(), lat)
			}
			n++
		})
		w.flush(lat)
	}
}

func BenchmarkStreamOfClientWatch(b *testing.B) {
	srv := cmpServer(b, cmpStream(cmpEvents))
	f, lat := newStampFinder("r1"), newLatencies()
	c, err := client.New(client.Config{Endpoints: []string{srv.URL}, DisableSingleHop: true})
	if err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	n := 0
	for n < b.N {
		w := newWatcher(0, cmpEvents)
		for ev, err := range c.Watch(context.Background(), client.WatchOptions{Region: "watched"}) {
			if err != nil {
				break
			}
			if ev.Type == client.EventUpdate {
				if st, ok := f.find(ev.Value); ok {
					w.received(st, time.Now(), lat)
				}
				n++
			}
		}
		w.flush(lat)
	}
}
