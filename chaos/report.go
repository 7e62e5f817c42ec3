package chaos

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"runtime"
	"slices"
	"sort"
	"strings"
	"time"
)

// Summary is a run's outcome in a few lines.
func (r Report) Summary() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s on %s, %v, %d faults, %d elections", r.Scenario, r.Backend, r.Duration, len(r.Faults), r.Elections)
	if r.Rebalance != nil {
		fmt.Fprintf(&b, "\n  rebalance: %s", r.Rebalance.Summary())
	}
	for _, rr := range r.Regions {
		fmt.Fprintf(&b, "\n  %-7s ops %6d  definite %6d  unknown %4d  refused %4d  availability %5.1f%%  failover first group p50 %v max %v, every group p50 %v p99 %v max %v (%d faults, %d without recovery, %d with a group never back)  ledger %d acked %d lost  diverged %d  verdict %s (checked in %v)",
			rr.Region, rr.Ops, rr.Definite, rr.Unknown, rr.Refused, 100*rr.Availability,
			rr.FailoverP50.Round(time.Millisecond), rr.FailoverMax.Round(time.Millisecond),
			rr.FailoverEveryP50.Round(time.Millisecond), rr.FailoverEveryP99.Round(time.Millisecond), rr.FailoverEveryMax.Round(time.Millisecond),
			rr.Failovers, rr.NoRecovery, rr.Unrecovered,
			rr.LedgerAcked, rr.LedgerLost, rr.Diverged, rr.Verdict, rr.CheckTime.Round(10*time.Millisecond))
		if rr.Watch != nil {
			fmt.Fprintf(&b, "\n    watch: %s", rr.Watch.Summary())
		}
		causes := make([]string, 0, len(rr.Causes))
		for c, n := range rr.Causes {
			causes = append(causes, fmt.Sprintf("%d× %s", n, c))
		}
		sort.Strings(causes)
		for _, c := range causes {
			fmt.Fprintf(&b, "\n    unknown: %s", c)
		}
	}
	return b.String()
}

// Problems lists why a run is not OK.
func (r Report) Problems() []string {
	out := append([]string(nil), r.Errors...)
	for _, rr := range r.Regions {
		if rr.Verdict != "ok" {
			out = append(out, fmt.Sprintf("%s: history %s (saved: %s)", rr.Region, rr.Verdict, strings.Join(rr.Saved, ", ")))
		}
		if rr.LedgerLost > 0 {
			out = append(out, fmt.Sprintf("%s: %d acknowledged writes lost", rr.Region, rr.LedgerLost))
		}
		if rr.Watch != nil && rr.Watch.Verdict != "ok" {
			msg := fmt.Sprintf("%s: watch %s", rr.Region, rr.Watch.Summary())
			if rr.Watch.Saved != "" {
				msg += fmt.Sprintf(" (saved: %s)", rr.Watch.Saved)
			}
			out = append(out, msg)
		}
	}
	return out
}

// LoadReports reads a runs.jsonl file.
func LoadReports(path string) ([]Report, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []Report
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 64<<20)
	for sc.Scan() {
		var r Report
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		out = append(out, r)
	}
	return out, sc.Err()
}

const (
	beginGenerated = "<!-- BEGIN GENERATED: make chaos rewrites what follows, up to END GENERATED -->"
	endGenerated   = "<!-- END GENERATED -->"
)

// WriteDoc rewrites the generated part of the Markdown file at path from
// reports, keeping the hand-written text around it.
func WriteDoc(path string, reports []Report) error {
	old, err := os.ReadFile(path)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	head, tail := "# Chaos and failover tests\n\n", "\n"
	if s := string(old); strings.Contains(s, beginGenerated) && strings.Contains(s, endGenerated) {
		head = s[:strings.Index(s, beginGenerated)]
		tail = s[strings.Index(s, endGenerated)+len(endGenerated):]
	}
	doc := head + beginGenerated + "\n\n" + Tables(reports) + "\n" + endGenerated + tail
	return os.WriteFile(path, []byte(doc), 0o644)
}

// Tables renders the runs as Markdown: one row per scenario and region.
func Tables(reports []Report) string {
	var b strings.Builder
	if len(reports) == 0 {
		return "No runs recorded yet.\n"
	}
	first, last := reports[0].Started, reports[0].Started
	for _, r := range reports {
		if r.Started.Before(first) {
			first = r.Started
		}
		if r.Started.After(last) {
			last = r.Started
		}
	}
	fmt.Fprintf(&b, "%d runs from %s to %s, on %s/%s with %d CPUs (the machine the runs were made on).\n\n",
		len(reports), first.UTC().Format("2006-01-02 15:04"), last.UTC().Format("2006-01-02 15:04"), runtime.GOOS, runtime.GOARCH, runtime.NumCPU())

	type key struct {
		scenario, backend, region string
		concurrent                int // > 1: runs that shared the host
	}
	type agg struct {
		runs, ok, ops, definite, unknown, attempts int
		durations                                  map[time.Duration]int
		p50s                                       []time.Duration
		max                                        time.Duration
		failovers, noRecovery                      int
		every                                      []time.Duration // per fault: until every group it led took writes
		unrecovered                                int
		checkMax                                   time.Duration
		acked, lost, diverged                      int
		elections                                  uint64
		faults                                     int
		watched                                    int // runs with a watcher
		events, reconnects, watchBad               int
	}
	aggs := map[key]*agg{}
	var order []key
	scenarioOrder := map[string]int{}
	for i, s := range Scenarios() {
		scenarioOrder[s.Name] = i
	}
	for _, r := range reports {
		for _, rr := range r.Regions {
			k := key{r.Scenario, r.Backend, rr.Region, max(r.Concurrent, 1)}
			a := aggs[k]
			if a == nil {
				a = &agg{durations: map[time.Duration]int{}}
				aggs[k] = a
				order = append(order, k)
			}
			a.runs++
			if r.OK() {
				a.ok++
			}
			a.durations[r.Duration]++
			a.ops += rr.Ops
			a.definite += rr.Definite
			a.unknown += rr.Unknown
			a.attempts += rr.Definite + rr.Unknown + rr.Refused
			if rr.Failovers > rr.NoRecovery {
				a.p50s = append(a.p50s, rr.FailoverP50)
			}
			a.max = max(a.max, rr.FailoverMax)
			a.failovers += rr.Failovers
			a.noRecovery += rr.NoRecovery
			a.every = append(a.every, rr.FailoverEvery...)
			a.unrecovered += rr.Unrecovered
			a.checkMax = max(a.checkMax, rr.CheckTime)
			a.acked += rr.LedgerAcked
			a.lost += rr.LedgerLost
			a.diverged += rr.Diverged
			a.elections += r.Elections
			a.faults += len(r.Faults)
			if w := rr.Watch; w != nil {
				a.watched++
				a.events += w.Events
				a.reconnects += w.Reconnects
				a.watchBad += w.Missing + w.Invented + w.OutOfOrder + w.Duplicates + w.WrongType + len(w.Gone)
			}
		}
	}
	sort.SliceStable(order, func(i, j int) bool {
		a, b := order[i], order[j]
		if a.backend != b.backend {
			return a.backend > b.backend
		}
		if a.concurrent != b.concurrent {
			return a.concurrent < b.concurrent
		}
		if a.scenario != b.scenario {
			return scenarioOrder[a.scenario] < scenarioOrder[b.scenario]
		}
		return a.region < b.region
	})
	b.WriteString("| scenario | backend | region | runs (length) | passed | operations | availability | failover, first group: p50 / max | failover, every group: p50 / p99 / max | leader faults (no recovery) | elections per run | ledger acked / lost | watch: events / reconnects / faults | check time (max) | verdict |\n")
	b.WriteString("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|\n")
	for _, k := range order {
		a := aggs[k]
		var lengths []string
		for d, n := range a.durations {
			lengths = append(lengths, fmt.Sprintf("%d×%v", n, d))
		}
		sort.Strings(lengths)
		avail := "-"
		if a.attempts > 0 {
			avail = fmt.Sprintf("%.1f%%", 100*float64(a.definite)/float64(a.attempts))
		}
		failover := "-"
		if len(a.p50s) > 0 {
			sort.Slice(a.p50s, func(i, j int) bool { return a.p50s[i] < a.p50s[j] })
			failover = fmt.Sprintf("%v / %v", a.p50s[len(a.p50s)/2].Round(10*time.Millisecond), a.max.Round(10*time.Millisecond))
		}
		every := "-"
		if len(a.every) > 0 {
			slices.Sort(a.every)
			r := func(d time.Duration) time.Duration { return d.Round(10 * time.Millisecond) }
			every = fmt.Sprintf("%v / %v / %v", r(quantile(a.every, 0.5)), r(quantile(a.every, 0.99)), r(a.every[len(a.every)-1]))
		}
		if a.unrecovered > 0 {
			every += fmt.Sprintf(" (%d with a group never back)", a.unrecovered)
		}
		checkTime := "-"
		if a.checkMax > 0 {
			checkTime = a.checkMax.Round(100 * time.Millisecond).String()
		}
		backend := k.backend
		if k.concurrent > 1 {
			backend = fmt.Sprintf("%s, %d at once", k.backend, k.concurrent)
		}
		watch := "-"
		if a.watched > 0 {
			watch = fmt.Sprintf("%d / %d / %d", a.events, a.reconnects, a.watchBad)
			if a.watched < a.runs {
				watch += fmt.Sprintf(" (%d runs)", a.watched)
			}
		}
		verdict := "linearizable"
		if a.ok < a.runs {
			verdict = fmt.Sprintf("**%d failed**", a.runs-a.ok)
		}
		fmt.Fprintf(&b, "| %s | %s | %s | %s | %d/%d | %d | %s | %s | %s | %d (%d) | %.1f | %d / %d | %s | %s | %s |\n",
			k.scenario, backend, k.region, strings.Join(lengths, ", "), a.ok, a.runs, a.ops, avail, failover, every,
			a.failovers, a.noRecovery, float64(a.elections)/float64(a.runs), a.acked, a.lost, watch, checkTime, verdict)
	}
	moveTable(&b, reports)
	return b.String()
}

// moveTable renders, when some runs moved buckets (the rebalance
// nemesis), what they asked for and what moved: one row per scenario
// and backend.
func moveTable(b *strings.Builder, reports []Report) {
	type key struct {
		scenario, backend string
		concurrent        int
	}
	type agg struct {
		runs, ok                                    int
		before, after, asked                        []int
		patches, patchesOK, posts, postsOK, refused int
		ops, errored, moved, inFaults               int
		faults, faultsInMoves, faultsWithMoves      int
		settled                                     time.Duration
	}
	aggs := map[key]*agg{}
	var order []key
	for _, r := range reports {
		rb := r.Rebalance
		if rb == nil {
			continue
		}
		k := key{r.Scenario, r.Backend, max(r.Concurrent, 1)}
		a := aggs[k]
		if a == nil {
			a = &agg{}
			aggs[k] = a
			order = append(order, k)
		}
		a.runs++
		if r.OK() {
			a.ok++
		}
		a.before, a.after, a.asked = append(a.before, rb.GroupsBefore), append(a.after, rb.GroupsAfter), append(a.asked, rb.GroupsAsked)
		a.patches += rb.Patches
		a.patchesOK += rb.PatchesAccepted
		a.posts += rb.Posts
		a.postsOK += rb.PostsAccepted
		a.refused += rb.Refusals
		a.ops += rb.Operations
		a.errored += len(rb.Errored)
		a.moved += rb.BucketsMoved
		a.inFaults += rb.MovedInFaults
		a.faults += rb.Faults
		a.faultsInMoves += rb.FaultsInMoves
		a.faultsWithMoves += rb.FaultsWithMoves
		a.settled = max(a.settled, rb.Settled)
	}
	if len(order) == 0 {
		return
	}
	span := func(v []int) string {
		lo, hi := slices.Min(v), slices.Max(v)
		if lo == hi {
			return fmt.Sprint(lo)
		}
		return fmt.Sprintf("%d-%d", lo, hi)
	}
	b.WriteString("\nBucket moves (the runs that grew the partition groups under faults):\n\n")
	b.WriteString("| scenario | backend | runs | passed | partition groups: before → after (asked) | PATCH / POST accepted | attempts refused | operations (ERROR) | buckets moved (per run) | moved during faults | faults: in all / while moving / moves completed | settled after heal (max) |\n")
	b.WriteString("|---|---|---|---|---|---|---|---|---|---|---|---|\n")
	for _, k := range order {
		a := aggs[k]
		backend := k.backend
		if k.concurrent > 1 {
			backend = fmt.Sprintf("%s, %d at once", k.backend, k.concurrent)
		}
		fmt.Fprintf(b, "| %s | %s | %d | %d/%d | %s → %s (%s) | %d/%d / %d/%d | %d | %d (%d) | %d (%.0f) | %d | %d / %d / %d | %v |\n",
			k.scenario, backend, a.runs, a.ok, a.runs, span(a.before), span(a.after), span(a.asked),
			a.patchesOK, a.patches, a.postsOK, a.posts, a.refused, a.ops, a.errored, a.moved, float64(a.moved)/float64(a.runs),
			a.inFaults, a.faults, a.faultsInMoves, a.faultsWithMoves, a.settled.Round(100*time.Millisecond))
	}
}
