package watchbench

import (
	"cmp"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"sort"
	"strings"
	"time"

	"github.com/kvnode/kvnode/bench/kvbench"
)

// Result is one watch run. Its JSON form (--json) is for scripts: the
// field names are stable.
type Result struct {
	Label      string  `json:"label,omitempty"`
	Workload   string  `json:"workload"` // watch
	Target     string  `json:"target"`   // kvnode or etcd
	Region     string  `json:"region"`
	Watched    string  `json:"watched"` // the member the watchers watch
	Watchers   int     `json:"watchers"`
	Endpoints  int     `json:"endpoints"` // the writes go to each in turn
	Writers    int     `json:"writers"`
	TargetRate float64 `json:"target_rate"` // writes/s
	Keys       int     `json:"keys"`
	ValueBytes int     `json:"value_bytes"`

	// Seconds is the writes' time, from the first due to the last answer.
	Seconds float64 `json:"seconds"`
	// Writes counts the writes sent; WritesOK those acknowledged (200),
	// the rest by kind in WriteErrors. Unsent were due before the end but
	// no writer was free (the member did not keep up with the rate).
	Writes      int64            `json:"writes"`
	WritesOK    int64            `json:"writes_ok"`
	WriteErrors map[string]int64 `json:"write_errors"`
	Unsent      int64            `json:"unsent"`
	// WriteLatency is of acknowledged writes, from the time each was due.
	WriteLatency kvbench.Latency `json:"write_latency_ms"`

	// Expected = WritesOK × Watchers: every watcher must see every
	// acknowledged write. Delivered counts the events received of this
	// run's writes (first copies), Missing the acknowledged writes a
	// watcher never received (WatchersMissing watchers missed one or
	// more), Duplicates second copies, Unacknowledged events of writes
	// that failed or timed out (they may have been applied).
	Expected        int64 `json:"expected"`
	Delivered       int64 `json:"delivered"`
	Missing         int64 `json:"missing"`
	WatchersMissing int   `json:"watchers_missing"`
	Duplicates      int64 `json:"duplicates"`
	Unacknowledged  int64 `json:"unacknowledged"`
	// EventsPerSec is Delivered over the time from the first write to the
	// end of the drain (when every watcher had every write, or the wait's
	// bound).
	EventsPerSec float64 `json:"events_per_sec"`
	// Latency is the delivery latency: receive time − send time carried
	// in the value, over every event delivered, in milliseconds.
	Latency kvbench.Latency `json:"latency_ms"`
	// Ended counts the streams the member ended during the run, by cause.
	Ended map[string]int `json:"ended"`

	// Memory is the watched member's, from its /metrics.
	Memory struct {
		Before Memory `json:"before"` // before the watchers connected
		Live   Memory `json:"live"`   // every watcher live, no write yet
		Peak   Memory `json:"peak"`   // the largest of each while writes flowed
		After  Memory `json:"after"`  // a second after the watchers closed
	} `json:"memory"`
	// MemberCPU is the CPU seconds the watched member used per second
	// from the watchers' start to their close; ToolCPU the same of this
	// process (watchers and writers), which shares the machine when the
	// member is local.
	MemberCPU float64 `json:"member_cpu_per_sec"`
	ToolCPU   float64 `json:"tool_cpu_per_sec"`
	// MemoryError says why /metrics could not be read, if it could not.
	MemoryError string `json:"memory_error,omitempty"`
}

func describe(cfg *Config) Result {
	return Result{
		Label: cfg.Label, Workload: string(kvbench.Watch), Target: cmp.Or(cfg.Target, TargetKvnode), Region: cfg.Region, Watched: cfg.Endpoints[0],
		Watchers: cfg.Watchers, Endpoints: len(cfg.Endpoints), Writers: cfg.Concurrency[0], TargetRate: cfg.Rate,
		Keys: cfg.Keys, ValueBytes: len(encodeValue("0123456789abc", 0, time.Now(), cfg.ValueSize)),
		WriteErrors: map[string]int64{}, Ended: map[string]int{},
	}
}

// account fills the result's counts from the writes and the watchers
// (once every watcher's run has returned); drained is when the wait for
// the last events ended.
func (r *Result) account(w *writes, ws []*watcher, drained time.Time) {
	r.Seconds = math.Round(w.end.Sub(w.start).Seconds()*1000) / 1000
	r.WritesOK = w.count(writeOK)
	r.Writes = r.WritesOK + w.count(writeFailed)
	r.Unsent = int64(math.Ceil(r.TargetRate*w.end.Sub(w.start).Seconds())) - r.Writes
	r.Unsent = min(max(r.Unsent, 0), w.count(writeUnsent))
	r.WriteErrors = w.errors
	r.WriteLatency = kvbench.LatencyOf(w.hist)
	r.Expected = r.WritesOK * int64(len(ws))
	for _, wa := range ws {
		missing := int64(0)
		for seq, o := range w.outcome {
			got := wa.has(int64(seq))
			switch {
			case o == writeOK && !got:
				missing++
			case o != writeOK && got:
				r.Unacknowledged++
			}
		}
		r.Missing += missing
		if missing > 0 {
			r.WatchersMissing++
		}
		r.Delivered += wa.distinct.Load()
		r.Duplicates += wa.duplicates + wa.outOfRange
		if wa.cause != "" {
			r.Ended[wa.cause]++
		}
	}
	if d := drained.Sub(w.start); d > 0 {
		r.EventsPerSec = math.Round(float64(r.Delivered)/d.Seconds()*10) / 10
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
	label := ""
	if r.Label != "" {
		label = " [" + r.Label + "]"
	}
	fmt.Fprintf(&b, "watch (%s) on %s: %s watchers of %s, %s writes/s over %s keys (%d-byte values) by %d writers to %d endpoint(s)%s\n",
		r.Target, r.Region, kvbench.Thousands(float64(r.Watchers)), r.Watched, kvbench.Thousands(r.TargetRate), kvbench.Thousands(float64(r.Keys)), r.ValueBytes, r.Writers, r.Endpoints, label)
	fmt.Fprintf(&b, "  writes: %.2f s, %s ok, %s failed, %s unsent; ack ms: p50 %.3f  p99 %.3f  max %.3f\n",
		r.Seconds, kvbench.Thousands(float64(r.WritesOK)), kvbench.Thousands(float64(r.Writes-r.WritesOK)), kvbench.Thousands(float64(r.Unsent)),
		r.WriteLatency.P50, r.WriteLatency.P99, r.WriteLatency.Max)
	fmt.Fprintf(&b, "  events: %s delivered of %s expected (%s events/s); missing %s (%d watchers), duplicates %s, of unacknowledged writes %s\n",
		kvbench.Thousands(float64(r.Delivered)), kvbench.Thousands(float64(r.Expected)), kvbench.Thousands(r.EventsPerSec),
		kvbench.Thousands(float64(r.Missing)), r.WatchersMissing, kvbench.Thousands(float64(r.Duplicates)), kvbench.Thousands(float64(r.Unacknowledged)))
	l := r.Latency
	fmt.Fprintf(&b, "  delivery latency ms: p50 %.3f  p90 %.3f  p99 %.3f  p99.9 %.3f  max %.3f\n", l.P50, l.P90, l.P99, l.P999, l.Max)
	for _, cause := range sortedKeys(r.Ended) {
		fmt.Fprintf(&b, "  %d streams ended early: %s\n", r.Ended[cause], cause)
	}
	for _, k := range sortedKeys(r.WriteErrors) {
		fmt.Fprintf(&b, "  write errors %s: %d\n", k, r.WriteErrors[k])
	}
	if r.MemoryError != "" {
		fmt.Fprintf(&b, "  member memory not measured: %s\n", r.MemoryError)
	} else {
		fmt.Fprintf(&b, "  CPU while watching: member %.2f s/s, this tool %.2f s/s\n", r.MemberCPU, r.ToolCPU)
		b.WriteString("  member memory       heap in use      resident  goroutines  open fds\n")
		for _, row := range []struct {
			name string
			m    Memory
		}{{"before watchers", r.Memory.Before}, {"watchers live", r.Memory.Live}, {"peak under writes", r.Memory.Peak}, {"after close", r.Memory.After}} {
			fmt.Fprintf(&b, "    %-17s %10.1f MiB %9.1f MiB %11.0f %9.0f\n", row.name, row.m.HeapInuseBytes/(1<<20), row.m.ResidentBytes/(1<<20), row.m.Goroutines, row.m.OpenFDs)
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
