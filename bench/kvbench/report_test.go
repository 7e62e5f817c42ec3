package kvbench

import (
	"bytes"
	"encoding/json"
	"math"
	"slices"
	"strings"
	"testing"
	"time"
)

// sample is a phase of 1,000 gets taking 1..1000 ms, 10 puts of 2 s, a
// conflict, three 503s and a timeout.
func sample() *recorder {
	rec := newRecorder(4)
	for i := 1; i <= 1000; i++ {
		rec.record(i, outcome{kind: opGet, class: done, entries: 1}, time.Duration(i)*time.Millisecond)
	}
	for i := range 10 {
		rec.record(i, outcome{kind: opPut, class: done, entries: 1}, 2*time.Second)
	}
	rec.record(0, outcome{kind: opPut, class: conflict}, 5*time.Millisecond)
	for range 3 {
		rec.record(1, outcome{kind: opPut, class: failed, errKind: "503"}, time.Hour) // not a latency
	}
	rec.record(2, outcome{kind: opGet, class: failed, errKind: "timeout"}, 10*time.Second)
	rec.record(3, outcome{kind: opGet, class: aborted}, time.Millisecond) // an interrupt: not counted
	return rec
}

func near(got, want float64) bool { return math.Abs(got-want) <= want*0.002+0.001 }

// TestPercentiles: the summary's percentiles are the HDR histogram's,
// to its three significant digits, of done operations and conflicts.
func TestPercentiles(t *testing.T) {
	rec := sample()
	if rec.finished.Load() != 1015 || rec.errs.Load() != 4 {
		t.Errorf("progress counters: %d finished, %d errors; want 1015, 4", rec.finished.Load(), rec.errs.Load())
	}
	total, byKind := rec.tallies()
	cfg := Default()
	cfg.Workload = Mixed
	r := describe(&cfg, "REPLICATE", 4)
	r.measured(2*time.Second, total, byKind)

	if r.OK != 1010 || r.Conflicts != 1 || r.Errors != 4 || r.Ops != 1015 {
		t.Errorf("counts: ok %d conflicts %d errors %d ops %d", r.OK, r.Conflicts, r.Errors, r.Ops)
	}
	if want := map[string]int64{"503": 3, "timeout": 1}; !equalMaps(r.ErrorsByKind, want) {
		t.Errorf("errors by kind %v, want %v", r.ErrorsByKind, want)
	}
	if r.OpsPerSec != 505 || r.EntriesPerSec != 505 {
		t.Errorf("%v ops/s, %v entries/s over 2 s; want 505", r.OpsPerSec, r.EntriesPerSec)
	}
	// 1,011 latencies: 1..1000 ms, 5 ms, ten of 2 s.
	all := make([]float64, 0, 1011)
	for i := 1; i <= 1000; i++ {
		all = append(all, float64(i))
	}
	all = append(all, 5)
	for range 10 {
		all = append(all, 2000)
	}
	slices.Sort(all)
	exact := func(p float64) float64 { return all[int(math.Ceil(p/100*float64(len(all))))-1] }
	for _, c := range []struct {
		name string
		got  float64
		p    float64
	}{{"p50", r.Latency.P50, 50}, {"p90", r.Latency.P90, 90}, {"p99", r.Latency.P99, 99}, {"p99.9", r.Latency.P999, 99.9}, {"max", r.Latency.Max, 100}} {
		if !near(c.got, exact(c.p)) {
			t.Errorf("%s = %v ms, want %v ms (±0.2%%)", c.name, c.got, exact(c.p))
		}
	}
	get, put := r.ByOp["get"], r.ByOp["put"]
	if get.OK != 1000 || get.Errors != 1 || !near(get.Latency.P99, 990) || !near(get.Latency.Max, 1000) {
		t.Errorf("get: %+v", get)
	}
	if put.OK != 10 || put.Conflicts != 1 || put.Errors != 3 || !near(put.Latency.Max, 2000) || put.ErrorsByKind["503"] != 3 {
		t.Errorf("put: %+v", put)
	}
}

func equalMaps(a, b map[string]int64) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

// TestJSONOutput: one line per point, with the field names scripts rely
// on, every one present.
func TestJSONOutput(t *testing.T) {
	total, byKind := sample().tallies()
	cfg := Default()
	cfg.Workload, cfg.Rate, cfg.Zipf, cfg.Stale, cfg.ReadPercent = Mixed, 500, true, true, 90
	r := describe(&cfg, "PARTITION", 8)
	r.Unsent = 12
	r.measured(2*time.Second, total, byKind)
	var buf bytes.Buffer
	if err := r.WriteJSON(&buf); err != nil {
		t.Fatal(err)
	}
	line := buf.String()
	if strings.Count(line, "\n") != 1 || !strings.HasSuffix(line, "\n") {
		t.Fatalf("not one line: %q", line)
	}
	var doc map[string]any
	if err := json.Unmarshal(buf.Bytes(), &doc); err != nil {
		t.Fatal(err)
	}
	fields := []string{"target", "workload", "region", "region_type", "mode", "concurrency", "target_rate", "consistency",
		"distribution", "keys", "value_bytes", "batch", "read_percent", "endpoints", "route", "leader_routed", "seconds",
		"ops", "ok", "conflicts", "errors", "unsent", "errors_by_kind", "ops_per_sec", "entries_per_sec", "latency_ms", "by_op"}
	for _, f := range fields {
		if _, ok := doc[f]; !ok {
			t.Errorf("field %q missing from %s", f, line)
		}
	}
	if len(doc) != len(fields) {
		t.Errorf("%d fields, want %d (a new field needs its place in this list and the README): %s", len(doc), len(fields), line)
	}
	want := map[string]any{
		"target": "kvnode", "workload": "mixed", "region": "orders", "region_type": "PARTITION", "mode": "fixed-rate", "concurrency": 8.0,
		"target_rate": 500.0, "consistency": "stale", "distribution": "zipf(s=1.1,v=1)", "keys": 1000.0, "value_bytes": 256.0,
		"batch": 1.0, "read_percent": 90.0, "ops": 1015.0, "ok": 1010.0, "conflicts": 1.0, "errors": 4.0, "unsent": 12.0,
		"ops_per_sec": 505.0, "seconds": 2.0,
	}
	for k, v := range want {
		if doc[k] != v {
			t.Errorf("%s = %v, want %v", k, doc[k], v)
		}
	}
	lat := doc["latency_ms"].(map[string]any)
	for _, k := range []string{"p50", "p90", "p99", "p99_9", "max", "mean"} {
		if _, ok := lat[k].(float64); !ok {
			t.Errorf("latency_ms.%s missing: %v", k, lat)
		}
	}
	if _, ok := doc["by_op"].(map[string]any)["get"].(map[string]any)["latency_ms"]; !ok {
		t.Errorf("by_op.get.latency_ms missing: %s", line)
	}

	// A run with nothing to report still has every field, and no NaN.
	empty := describe(&cfg, "REPLICATE", 1)
	empty.measured(0, newTally(), nil)
	buf.Reset()
	if err := empty.WriteJSON(&buf); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(buf.String(), `"errors_by_kind":{}`) || !strings.Contains(buf.String(), `"by_op":{}`) {
		t.Errorf("empty result: %s", buf.String())
	}
}

func TestTextSummary(t *testing.T) {
	total, byKind := sample().tallies()
	cfg := Default()
	cfg.Workload, cfg.Label = Mixed, "run 1"
	r := describe(&cfg, "REPLICATE", 4)
	r.measured(2*time.Second, total, byKind)
	var buf bytes.Buffer
	if err := r.WriteText(&buf); err != nil {
		t.Fatal(err)
	}
	text := buf.String()
	for _, want := range []string{
		"mixed on orders (REPLICATE), 4 clients, closed loop [run 1]",
		"1,000 keys uniform, 256-byte values, linearizable reads, 50% reads",
		"2.00 s: 1,010 ok, 1 conflicts, 4 errors: 505 ops/s",
		"latency ms: p50 ",
		"get (1,000 ok, 500 ops/s) ms:",
		"put (10 ok, 5 ops/s) ms:",
		"errors: 503=3 timeout=1",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("summary lacks %q:\n%s", want, text)
		}
	}

	// A system without regions is named with the keys' prefix.
	cfg.Target = "etcd-grpc"
	r = describe(&cfg, "", 4)
	buf.Reset()
	if err := r.WriteText(&buf); err != nil || !strings.HasPrefix(buf.String(), "mixed on etcd-grpc orders/..., 4 clients") {
		t.Errorf("etcd's summary: %v\n%s", err, buf.String())
	}
}

func TestThousands(t *testing.T) {
	for v, want := range map[float64]string{0: "0", 5: "5", 5.25: "5.2", 999: "999", 1000: "1,000", 1234567.8: "1,234,568", 12.5: "12.5"} {
		if got := Thousands(v); got != want {
			t.Errorf("Thousands(%v) = %q, want %q", v, got, want)
		}
	}
}
