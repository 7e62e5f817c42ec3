package watchbench

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/kvnode/kvnode/bench/kvbench"
)

// TestStampFinder: a watcher recognises this run's writes in events as
// the server sends them (the value byte for byte, or reformatted), and
// nothing else.
func TestStampFinder(t *testing.T) {
	sent := time.Unix(1764100000, 123456789)
	v := encodeValue("r1", 42, sent, 200)
	if len(v) != 200 || !json.Valid(v) {
		t.Fatalf("value %s: %d bytes, valid %v; want 200 bytes of JSON", v, len(v), json.Valid(v))
	}
	if small := encodeValue("r1", 42, sent, 0); string(small) != `{"run":"r1","seq":42,"t":1764100000123456789}` {
		t.Errorf("unpadded value: got %s", small)
	}
	f := newStampFinder("r1")
	want := stamp{seq: 42, sent: sent.UnixNano()}
	for _, c := range []struct {
		data string
		want stamp
		ok   bool
	}{
		{`{"type":"update","region":"orders","key":"k2","value":` + string(v) + `}`, want, true},
		{`{"value": {"t": 1764100000123456789, "seq": 42, "run": "r1"}, "type": "create"}`, want, true}, // reformatted
		{`{"type":"update","value":{"run":"r2","seq":42,"t":1}}`, stamp{}, false},                       // another run's
		{`{"type":"update","value":{"other":"r1"}}`, stamp{}, false},                                    // no stamp
		{`{"type":"destroy","region":"orders","key":"r1"}`, stamp{}, false},                             // no value
		{`{"type":"update","value":{"run":"r1","seq":,"t":5}}`, stamp{}, false},                         // not JSON
	} {
		got, ok := f.find([]byte(c.data))
		if got != c.want || ok != c.ok {
			t.Errorf("find(%s): got %+v, %v; want %+v, %v", c.data, got, ok, c.want, c.ok)
		}
	}
}

// TestDeliveryAccounting: each write counts once per watcher with its
// receive time minus its send time; a second copy, or a sequence number
// no write had, is counted apart and not as a latency.
func TestDeliveryAccounting(t *testing.T) {
	lat := newLatencies()
	w1, w2 := newWatcher(1, 100), newWatcher(2, 100)
	sent := time.Unix(1000, 0)
	for seq := range int64(100) {
		// watcher 1 receives write seq after seq ms, watcher 2 after 1 s
		w1.received(stamp{seq: seq, sent: sent.UnixNano()}, sent.Add(time.Duration(seq+1)*time.Millisecond), lat)
		if seq != 7 {
			w2.received(stamp{seq: seq, sent: sent.UnixNano()}, sent.Add(time.Second), lat)
		}
	}
	w1.received(stamp{seq: 3, sent: sent.UnixNano()}, sent.Add(time.Hour), lat)
	w1.received(stamp{seq: 100, sent: sent.UnixNano()}, sent, lat)
	w2.received(stamp{seq: 8, sent: sent.Add(time.Second).UnixNano()}, sent, lat) // a duplicate, even from the future
	w1.flush(lat)
	w2.flush(lat)
	if got := [4]int64{w1.distinct.Load(), w1.duplicates, w1.outOfRange, w2.distinct.Load()}; got != [4]int64{100, 1, 1, 99} {
		t.Errorf("distinct, duplicates, out of range of w1, distinct of w2: got %v, want [100 1 1 99]", got)
	}
	if w2.has(7) || !w2.has(8) || !w1.has(99) {
		t.Errorf("has: w2 7 %v, w2 8 %v, w1 99 %v; want false, true, true", w2.has(7), w2.has(8), w1.has(99))
	}
	h := lat.merged()
	l := kvbench.LatencyOf(h)
	if h.TotalCount() != 199 || l.P50 < 99 || l.P50 > 101 || l.Max < 999 || l.Max > 1001 {
		t.Errorf("merged latencies: %d values, p50 %.3f ms, max %.3f ms; want 199, the 100th smallest (~100 ms), 1000 ms", h.TotalCount(), l.P50, l.Max)
	}
	// A latency below the histogram's floor (the clocks of a member on
	// another machine) counts as 1 µs rather than being lost.
	w3 := newWatcher(3, 1)
	lat2 := newLatencies()
	w3.received(stamp{seq: 0, sent: sent.Add(time.Second).UnixNano()}, sent, lat2)
	w3.flush(lat2)
	if h := lat2.merged(); h.TotalCount() != 1 || h.Max() != histMin {
		t.Errorf("a negative latency: got %d values, max %d µs; want 1 of %d µs", h.TotalCount(), h.Max(), histMin)
	}
}
