package chaos

import (
	"fmt"
	"strings"
	"time"

	"github.com/kvnode/kvnode/chaos/backend"
	"github.com/kvnode/kvnode/chaos/model"
	"github.com/kvnode/kvnode/chaos/workload"
)

// WatchReport is what the watcher of a region's workload keys saw, and
// what model.CheckWatch made of it.
type WatchReport struct {
	Events int `json:"events"`
	// Reconnects counts the streams after the first: every one resumed
	// from the last id received.
	Reconnects int `json:"reconnects"`
	// Ends counts why streams ended or could not be opened.
	Ends       map[string]int `json:"ends,omitempty"`
	Missing    int            `json:"missing"`
	Invented   int            `json:"invented"`
	OutOfOrder int            `json:"outOfOrder"`
	Duplicates int            `json:"duplicates"`
	WrongType  int            `json:"wrongType,omitempty"`
	// Gone lists resumes refused with 410: the run's history setting was
	// too small for an outage, or kvnode lost its place.
	Gone []workload.Gone `json:"gone,omitempty"`
	// Problems are the watcher's (answers the contract does not allow) and
	// the check's first findings.
	Problems []string `json:"problems,omitempty"`
	// Verdict: ok; failed (a count above is not zero, or the watcher met
	// a problem); gone (a resume was refused with 410: events were lost to
	// the watcher, which is its own failure); not live (no stream ever
	// started).
	Verdict string `json:"verdict"`
	// Saved is where a failed stream was saved (model.SaveWatch).
	Saved string `json:"saved,omitempty"`
}

// watchPrefix is what every workload key starts with ("f<family>-..."),
// and no ledger ("L<n>") or probe ("p<member>...") key does.
const watchPrefix = "f"

// newWatcher watches spec's workload keys, first through member first
// (the regions' watchers start on different members, so a fault on one
// member moves one of them and leaves the other).
func newWatcher(cfg RunConfig, spec backend.RegionSpec, first int, urls, names []string, h *model.History, logf func(string, ...any)) *workload.Watcher {
	idle := cfg.WatchIdle
	if idle == 0 {
		idle = 4 * time.Second
	}
	return &workload.Watcher{Region: spec.Name, Prefix: watchPrefix, URLs: urls, Names: names, First: first, Clock: h.Now, IdleTimeout: idle, Logf: logf}
}

// waitWatchReady waits up to 30 s until w's first stream is live; the
// load must not begin before, or its first writes could be missed.
func (r *Run) waitWatchReady(w *workload.Watcher) {
	select {
	case <-w.Ready():
		r.Logf("watch %s: live", w.Region)
	case <-time.After(30 * time.Second):
		res := w.Result()
		r.fail("watch %s: no stream live after 30s (%v; %s)", w.Region, res.Ends, strings.Join(res.Problems, "; "))
	}
}

// checkWatch waits (up to 30 s) until w has received the event of every
// acknowledged write, or the check finds none missing, and returns its
// verdict on the stream against the history.
//
// A stream that fails is saved under saveDir as name.watch.json
// (model.SaveWatch: the history and the events), which model.LoadWatch
// reads back to check again.
func (r *Run) checkWatch(w *workload.Watcher, h *model.History, saveDir, name string) *WatchReport {
	ops := h.Ops()
	deadline := time.Now().Add(30 * time.Second)
	var res workload.WatchResult
	var v model.WatchVerdict
	for {
		res = w.Result()
		v = model.CheckWatch(ops, res.Events, len(res.Gone) > 0)
		if v.Missing == 0 || time.Now().After(deadline) {
			break
		}
		time.Sleep(250 * time.Millisecond)
	}
	wr := &WatchReport{
		Events: v.Events, Reconnects: max(res.Connections-1, 0), Ends: res.Ends,
		Missing: v.Missing, Invented: v.Invented, OutOfOrder: v.OutOfOrder, Duplicates: v.Duplicates, WrongType: v.WrongType,
		Gone:     res.Gone,
		Problems: append(res.Problems, v.Problems...),
	}
	select {
	case <-w.Ready():
		wr.Verdict = "ok"
	default:
		wr.Verdict = "not live"
	}
	switch {
	case wr.Verdict != "ok":
	case len(res.Gone) > 0:
		wr.Verdict = "gone"
	case !v.OK() || len(res.Problems) > 0:
		wr.Verdict = "failed"
	}
	if wr.Verdict != "ok" && saveDir != "" {
		path, err := model.SaveWatch(saveDir, name, model.WatchRecord{Ops: ops, Events: res.Events, Gone: len(res.Gone) > 0})
		if err != nil {
			r.fail("save %s: %v", name, err)
		}
		wr.Saved = path
	}
	r.Logf("watch %s: %s", w.Region, wr.Summary())
	for _, p := range wr.Problems {
		r.Logf("watch %s: %s", w.Region, p)
	}
	return wr
}

// Summary is the report in one line.
func (wr *WatchReport) Summary() string {
	s := fmt.Sprintf("%s: %d events, %d reconnects, missing %d, invented %d, out of order %d, duplicates %d",
		wr.Verdict, wr.Events, wr.Reconnects, wr.Missing, wr.Invented, wr.OutOfOrder, wr.Duplicates)
	if wr.WrongType > 0 {
		s += fmt.Sprintf(", wrong type %d", wr.WrongType)
	}
	for _, g := range wr.Gone {
		s += fmt.Sprintf("; 410 Gone from %s resuming after %q (oldest kept %q) after %v without a stream", g.Member, g.Token, g.Oldest, g.Outage.Round(time.Millisecond))
	}
	return s
}
