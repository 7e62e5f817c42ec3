package kvbench

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"sort"
	"strings"
	"time"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"
)

// Result is one measured point. Its JSON form (one object per line with
// --json) is for scripts: the field names are stable, and every field is
// always present (label only when given).
type Result struct {
	Label        string  `json:"label,omitempty"`
	Target       string  `json:"target"` // kvnode, etcd (its JSON gateway), etcd-grpc
	Workload     string  `json:"workload"`
	Region       string  `json:"region"`      // for etcd, the keys' prefix
	RegionType   string  `json:"region_type"` // REPLICATE or PARTITION; "" for etcd
	Mode         string  `json:"mode"`        // closed or fixed-rate
	Concurrency  int     `json:"concurrency"`
	TargetRate   float64 `json:"target_rate"` // ops/s; 0 in a closed loop
	Consistency  string  `json:"consistency"` // of reads: linearizable or stale
	Distribution string  `json:"distribution"`
	Keys         int     `json:"keys"`
	ValueBytes   int     `json:"value_bytes"`
	Batch        int     `json:"batch"`        // keys per request (1 but for multi-put)
	ReadPercent  int     `json:"read_percent"` // of mixed; 100 for get, 0 for writes
	Endpoints    int     `json:"endpoints"`
	Route        string  `json:"route"`
	// LeaderRouted counts the requests sent to their key's leader.
	LeaderRouted int64 `json:"leader_routed"`

	// Seconds is the measured time, from the start to the last answer.
	Seconds float64 `json:"seconds"`
	// Ops = OK + Conflicts + Errors: every operation that ended.
	Ops       int64 `json:"ops"`
	OK        int64 `json:"ok"`
	Conflicts int64 `json:"conflicts"` // CAS answered 409
	Errors    int64 `json:"errors"`
	// Unsent counts, at a fixed rate, operations due before the end that
	// no client was free to send: the cluster did not keep up with the
	// rate (more clients, or a lower rate).
	Unsent int64 `json:"unsent"`
	// ErrorsByKind counts errors by status code, "timeout" or
	// "transport"; a CAS's failed read is "read <kind>".
	ErrorsByKind map[string]int64 `json:"errors_by_kind"`
	// OpsPerSec is OK operations per second; EntriesPerSec the entries
	// they wrote or read (OpsPerSec × batch for multi-put).
	OpsPerSec     float64 `json:"ops_per_sec"`
	EntriesPerSec float64 `json:"entries_per_sec"`
	// Latency is of OK operations and conflicts, in milliseconds.
	Latency Latency `json:"latency_ms"`
	// ByOp breaks the point down by operation (get and put of mixed).
	ByOp map[string]OpResult `json:"by_op"`
}

// Latency holds percentiles from the HDR histogram, in milliseconds.
type Latency struct {
	P50  float64 `json:"p50"`
	P90  float64 `json:"p90"`
	P99  float64 `json:"p99"`
	P999 float64 `json:"p99_9"`
	Max  float64 `json:"max"`
	Mean float64 `json:"mean"`
}

// OpResult is one kind of operation within a point.
type OpResult struct {
	OK           int64            `json:"ok"`
	Conflicts    int64            `json:"conflicts"`
	Errors       int64            `json:"errors"`
	ErrorsByKind map[string]int64 `json:"errors_by_kind"`
	OpsPerSec    float64          `json:"ops_per_sec"`
	Latency      Latency          `json:"latency_ms"`
}

func latencyOf(t *tally) Latency { return LatencyOf(t.hist) }

// LatencyOf summarizes a histogram of microseconds in milliseconds (the
// watch workload's histograms too).
func LatencyOf(h *hdrhistogram.Histogram) Latency {
	ms := func(us int64) float64 { return float64(us) / 1000 }
	if h.TotalCount() == 0 {
		return Latency{}
	}
	return Latency{
		P50: ms(h.ValueAtQuantile(50)), P90: ms(h.ValueAtQuantile(90)), P99: ms(h.ValueAtQuantile(99)),
		P999: ms(h.ValueAtQuantile(99.9)), Max: ms(h.Max()), Mean: math.Round(h.Mean()) / 1000,
	}
}

func perSecond(n int64, elapsed time.Duration) float64 {
	if elapsed <= 0 {
		return 0
	}
	return math.Round(float64(n)/elapsed.Seconds()*10) / 10
}

// describe fills the configuration's part of a result.
func describe(cfg *Config, regionType string, clients int) Result {
	r := Result{
		Label: cfg.Label, Target: cfg.Target, Workload: string(cfg.Workload), Region: cfg.Region, RegionType: regionType,
		Mode: "closed", Concurrency: clients, Consistency: "linearizable", Distribution: "uniform",
		Keys: cfg.Keys, ValueBytes: len(value(0, 0, cfg.ValueSize)), Batch: 1,
		Endpoints: len(cfg.Endpoints), Route: string(cfg.Route),
	}
	if cfg.Rate > 0 {
		r.Mode, r.TargetRate = "fixed-rate", cfg.Rate
	}
	if cfg.Stale {
		r.Consistency = "stale"
	}
	if cfg.Zipf {
		r.Distribution = fmt.Sprintf("zipf(s=%g,v=%g)", cfg.ZipfS, cfg.ZipfV)
	}
	switch cfg.Workload {
	case MultiPut, Load:
		r.Batch = cfg.Batch
	case Get, Query:
		r.ReadPercent = 100
	case Mixed:
		r.ReadPercent = cfg.ReadPercent
	}
	return r
}

// measured fills a result's measurements from a phase's tallies.
func (r *Result) measured(elapsed time.Duration, total *tally, byKind map[opKind]*tally) {
	r.Seconds = math.Round(elapsed.Seconds()*1000) / 1000
	r.OK, r.Conflicts, r.Errors = total.ok, total.conflicts, total.errors
	r.Ops = r.OK + r.Conflicts + r.Errors
	r.ErrorsByKind = total.errKinds
	r.OpsPerSec = perSecond(total.ok, elapsed)
	r.EntriesPerSec = perSecond(total.entries, elapsed)
	r.Latency = latencyOf(total)
	r.ByOp = map[string]OpResult{}
	for k, t := range byKind {
		r.ByOp[k.String()] = OpResult{
			OK: t.ok, Conflicts: t.conflicts, Errors: t.errors, ErrorsByKind: t.errKinds,
			OpsPerSec: perSecond(t.ok, elapsed), Latency: latencyOf(t),
		}
	}
}

// WriteJSON writes r as one line of JSON.
func (r *Result) WriteJSON(w io.Writer) error {
	b, err := json.Marshal(r)
	if err != nil {
		return err
	}
	_, err = w.Write(append(b, '\n'))
	return err
}

// WriteText writes r as the summary a person reads.
func (r *Result) WriteText(w io.Writer) error {
	var b strings.Builder
	mode := "closed loop"
	if r.Mode == "fixed-rate" {
		mode = fmt.Sprintf("fixed rate %s ops/s", Thousands(r.TargetRate))
	}
	label := ""
	if r.Label != "" {
		label = " [" + r.Label + "]"
	}
	clients := "clients"
	if r.Concurrency == 1 {
		clients = "client"
	}
	fmt.Fprintf(&b, "%s on %s, %d %s, %s%s\n", r.Workload, r.where(), r.Concurrency, clients, mode, label)
	fmt.Fprintf(&b, "  %s", r.dataDesc())
	if r.Batch > 1 {
		fmt.Fprintf(&b, ", %d keys per request", r.Batch)
	}
	if r.Workload == string(Mixed) {
		fmt.Fprintf(&b, ", %d%% reads", r.ReadPercent)
	}
	fmt.Fprintf(&b, "; %d endpoint(s), %s", r.Endpoints, r.Route)
	if r.Route == string(Leader) {
		fmt.Fprintf(&b, " (%s of %s requests to the leader)", Thousands(float64(r.LeaderRouted)), Thousands(float64(r.Ops)))
	}
	fmt.Fprintf(&b, "\n  %.2f s: %s ok, %s conflicts, %s errors: %s ops/s", r.Seconds,
		Thousands(float64(r.OK)), Thousands(float64(r.Conflicts)), Thousands(float64(r.Errors)), Thousands(r.OpsPerSec))
	if r.Batch > 1 {
		fmt.Fprintf(&b, " (%s entries/s)", Thousands(r.EntriesPerSec))
	}
	b.WriteString("\n")
	if r.Unsent > 0 {
		fmt.Fprintf(&b, "  behind the rate: %s operations due were never sent (too few clients for the latency)\n", Thousands(float64(r.Unsent)))
	}
	writeLatency(&b, "latency", r.Latency)
	if len(r.ByOp) > 1 {
		for _, k := range sortedKeys(r.ByOp) {
			o := r.ByOp[k]
			writeLatency(&b, fmt.Sprintf("%s (%s ok, %s ops/s)", k, Thousands(float64(o.OK)), Thousands(o.OpsPerSec)), o.Latency)
		}
	}
	if len(r.ErrorsByKind) > 0 {
		b.WriteString("  errors:")
		for _, k := range sortedKeys(r.ErrorsByKind) {
			fmt.Fprintf(&b, " %s=%d", k, r.ErrorsByKind[k])
		}
		b.WriteString("\n")
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// where names what a result loaded: kvnode's region and its type, or for
// another system (which has no regions) the target and the keys' prefix.
func (r *Result) where() string {
	if r.RegionType == "" {
		return fmt.Sprintf("%s %s/...", r.Target, r.Region)
	}
	return fmt.Sprintf("%s (%s)", r.Region, r.RegionType)
}

// dataDesc says what the operations touch: the keys, their values and,
// for a workload that reads, the reads' consistency.
func (r *Result) dataDesc() string {
	d := fmt.Sprintf("%s keys %s, %d-byte values", Thousands(float64(r.Keys)), r.Distribution, r.ValueBytes)
	if r.ReadPercent > 0 || r.Workload == string(CAS) {
		d += fmt.Sprintf(", %s reads", r.Consistency)
	}
	return d
}

func writeLatency(b *strings.Builder, what string, l Latency) {
	fmt.Fprintf(b, "  %s ms: p50 %.3f  p90 %.3f  p99 %.3f  p99.9 %.3f  max %.3f\n", what, l.P50, l.P90, l.P99, l.P999, l.Max)
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// Thousands prints a count or rate with thousands separators, a rate
// with one decimal below 100 (the watch workload's summaries too).
func Thousands(v float64) string {
	if v < 100 && v != math.Trunc(v) {
		return fmt.Sprintf("%.1f", v)
	}
	s := fmt.Sprintf("%.0f", v)
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	var out []byte
	for i := range len(s) {
		if i > 0 && (len(s)-i)%3 == 0 {
			out = append(out, ',')
		}
		out = append(out, s[i])
	}
	if neg {
		return "-" + string(out)
	}
	return string(out)
}
