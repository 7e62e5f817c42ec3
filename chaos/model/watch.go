package model

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
)

// WatchEvent is one event a watcher of the workload's keys received
// (GET /kv/v1/watch), on the history's clock.
type WatchEvent struct {
	// Type is the stream's event: create, update, destroy, expire, clear
	// or initial.
	Type string `json:"type"`
	Key  string `json:"key,omitempty"`
	// Value is N of a {"v":N} value; Absent when the event carries none.
	// Raw is a value that is not {"v":N}, as it came.
	Value int64  `json:"value,omitempty"`
	Raw   string `json:"raw,omitempty"`
	Token string `json:"token"`
	// Member served the connection it came on; Conn numbers the
	// watcher's connections from 0.
	Member string `json:"member"`
	Conn   int    `json:"conn"`
	Time   int64  `json:"time"` // when it was received
}

// WatchVerdict is what CheckWatch found. Every count is of events or
// writes that break the promise; all zero is a pass.
type WatchVerdict struct {
	Events int `json:"events"`
	// Missing: acknowledged writes whose event never came (for a delete:
	// no destroy where it must be).
	Missing int `json:"missing"`
	// Invented: events no write explains: a value never written to that
	// key, written by a write refused as one command, received before its
	// write was asked, or a destroy, expire or clear no delete can account
	// for.
	Invented int `json:"invented"`
	// OutOfOrder: events of one key in an order its writes' real times
	// rule out (a write acknowledged before another was invoked came
	// after it), and acknowledged deletes whose destroy is only found
	// outside the window those times leave it.
	OutOfOrder int `json:"outOfOrder"`
	// Duplicates: an event token received twice, or a write's value
	// delivered twice.
	Duplicates int `json:"duplicates"`
	// WrongType: a create of a key that holds a value, an update or a
	// destroy of one that holds none.
	WrongType int `json:"wrongType"`
	// Problems describes the first few of each kind, for the run's log.
	Problems []string `json:"problems,omitempty"`
}

// OK reports whether the events keep every promise checked.
func (v WatchVerdict) OK() bool {
	return v.Missing == 0 && v.Invented == 0 && v.OutOfOrder == 0 && v.Duplicates == 0 && v.WrongType == 0
}

// maxProblems bounds Problems per kind.
const maxProblems = 5

// watchWrite is one write of one key: what it put (Absent for a
// delete), its real-time window, and what its answer says about its
// event.
type watchWrite struct {
	op        int // index in the history, for messages
	kind      Kind
	value     int64
	call, ret int64 // ret is Infinity when the outcome is unknown
	// must: acknowledged, its event must come. may: it may have taken
	// effect (unknown outcome, or a refusal of a request spanning groups,
	// whose other parts may have been applied). Neither: refused as one
	// command, it changed nothing.
	must, may bool
	pos       int // position of its event in the stream; -1 when none came
}

// CheckWatch checks what a watcher of the workload's keys received
// against the workload's history (the operations; reads are ignored).
// The watch must have been live before the first write, so every key
// starts absent. events are in the order received, across reconnects.
//
// The order a write's event must keep is its real-time order, the part
// of the linearizable order every linearization shares: a write
// acknowledged before another was invoked committed first. Values are
// unique per write, so a value event names its write; a destroy names no
// write, so acknowledged deletes are matched to destroys by the window
// the other writes' events leave them (see matchDeletes).
//
// Each fault is counted once, under the first kind that explains it: a
// value received before its write was invoked is invented, not also
// missing; a destroy outside its delete's window is out of order, not
// also invented.
//
// gone: the watch lost its place (410 Gone) and went on from the
// present, so some events were never to come: Missing and WrongType are
// not judged (the stream's history is not whole), the rest is.
func CheckWatch(ops []Op, events []WatchEvent, gone bool) WatchVerdict {
	v := WatchVerdict{Events: len(events)}
	counts := map[*int]int{}
	problem := func(n *int, format string, args ...any) {
		*n++
		if counts[n]++; counts[n] <= maxProblems {
			v.Problems = append(v.Problems, fmt.Sprintf(format, args...))
		}
	}

	writes := watchWrites(ops)
	byValue := map[int64]*watchWrite{}
	keyOf := map[int64]string{}
	for key, ws := range writes {
		for _, w := range ws {
			if w.value != Absent {
				byValue[w.value], keyOf[w.value] = w, key
			}
		}
	}

	// One pass in stream order: duplicates, invented events, types.
	tokens := map[string]int{}
	destroys := map[string][]int{} // key → positions of destroys
	present := map[string]bool{}
	for p, e := range events {
		if q, ok := tokens[e.Token]; ok && e.Token != "" {
			problem(&v.Duplicates, "duplicate: token %q at events %d and %d (%s %s, connections %d and %d)", e.Token, q, p, e.Type, e.Key, events[q].Conn, e.Conn)
			continue
		}
		tokens[e.Token] = p
		switch e.Type {
		case "create", "update", "initial":
			w := byValue[e.Value]
			switch {
			case e.Raw != "" || w == nil || keyOf[e.Value] != e.Key:
				problem(&v.Invented, "invented: %s of %s with %s, which no write put there", e.Type, e.Key, eventValue(e))
				continue
			case w.pos >= 0:
				problem(&v.Duplicates, "duplicate: %s of %s with %d at events %d and %d", e.Type, e.Key, e.Value, w.pos, p)
				continue
			case !w.must && !w.may:
				problem(&v.Invented, "invented: %s of %s with %d, written by op %d (%s) that was refused as one command", e.Type, e.Key, e.Value, w.op, w.kind)
				continue
			case e.Time <= w.call:
				// Counted once: as invented, not also as missing its event.
				problem(&v.Invented, "invented: %s of %s with %d received at %v, before op %d was invoked at %v", e.Type, e.Key, e.Value, ns(e.Time), w.op, ns(w.call))
			}
			w.pos = p
			if !gone && (e.Type == "create") == present[e.Key] {
				problem(&v.WrongType, "wrong type: %s of %s with %d (event %d) while the key %s", e.Type, e.Key, e.Value, p, holds(present[e.Key]))
			}
			present[e.Key] = true
		case "destroy":
			if !gone && !present[e.Key] {
				problem(&v.WrongType, "wrong type: destroy of %s (event %d) while the key held nothing", e.Key, p)
			}
			present[e.Key] = false
			destroys[e.Key] = append(destroys[e.Key], p)
		default: // expire, clear: no TTL and no clear in a chaos run
			problem(&v.Invented, "invented: %s event %q of %q (event %d): the run neither expires nor clears", e.Type, e.Token, e.Key, p)
		}
	}

	keys := make([]string, 0, len(writes))
	for k := range writes {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, key := range keys {
		ws := writes[key]
		if !gone {
			for _, w := range ws {
				if w.must && w.value != Absent && w.pos < 0 {
					problem(&v.Missing, "missing: op %d (%s of %s with %d, acknowledged at %v) has no event", w.op, w.kind, key, w.value, ns(w.ret))
				}
			}
		}
		for _, pair := range outOfOrder(ws) {
			a, b := pair[0], pair[1]
			problem(&v.OutOfOrder, "out of order: %s: op %d's %d (acknowledged at %v) came at event %d, after op %d's %d (invoked at %v) at event %d",
				key, a.op, a.value, ns(a.ret), a.pos, b.op, b.value, ns(b.call), b.pos)
		}
		unmatched, invented := matchDeletes(ws, destroys[key], events)
		if !gone && len(unmatched) > 0 {
			// More acknowledged deletes than destroys: some are missing;
			// the rest found a destroy only out of their window.
			short := 0
			for _, w := range ws {
				if w.must && w.value == Absent {
					short++
				}
			}
			short -= len(destroys[key])
			for i, w := range unmatched {
				if i < short {
					problem(&v.Missing, "missing: op %d (%s of %s, acknowledged at %v) has no destroy", w.op, w.kind, key, ns(w.ret))
				} else {
					problem(&v.OutOfOrder, "out of order: op %d (%s of %s, invoked at %v, acknowledged at %v) has no destroy between the events of the writes before and after it", w.op, w.kind, key, ns(w.call), ns(w.ret))
				}
			}
		}
		for _, p := range invented {
			problem(&v.Invented, "invented: destroy of %s (event %d, received at %v): no delete left to account for it", key, p, ns(events[p].Time))
		}
	}
	return v
}

// watchWrites is the history's writes, key by key, in history order.
func watchWrites(ops []Op) map[string][]*watchWrite {
	out := map[string][]*watchWrite{}
	for i, op := range ops {
		in := op.Input
		k := in.Kind.single()
		if k == Get {
			continue
		}
		w := watchWrite{op: i, kind: in.Kind, call: op.Call, ret: op.Return, pos: -1}
		switch {
		case op.Output.Unknown:
			w.may, w.ret = true, Infinity
		case op.Output.Status >= 200 && op.Output.Status < 300:
			w.must = true
		case op.Output.Status < 0 || (in.Kind.Multi() && !in.OneGroup):
			// A refusal spanning groups leaves each part applied or not,
			// between call and return; an answer the model could not read
			// is left to porcupine, which reports it.
			w.may = true
		}
		for j, key := range in.keys() {
			kw := w
			switch {
			case k == Delete:
			case in.Kind.Multi():
				kw.value = in.Values[j]
			default:
				kw.value = in.Value
			}
			out[key] = append(out[key], &kw)
		}
	}
	return out
}

// outOfOrder lists the pairs (a, b) of writes of one key whose events
// both came, b's first, though a was acknowledged before b was invoked;
// for each b, the a whose event came last.
func outOfOrder(ws []*watchWrite) [][2]*watchWrite {
	var done, seen []*watchWrite // seen: with an event; done: those with a known end
	for _, w := range ws {
		if w.pos < 0 {
			continue
		}
		seen = append(seen, w)
		if w.ret != Infinity {
			done = append(done, w)
		}
	}
	slices.SortFunc(done, func(a, b *watchWrite) int { return cmpInt(a.ret, b.ret) })
	// last[i]: of done[:i+1], the one whose event came last.
	last := make([]*watchWrite, len(done))
	for i, w := range done {
		last[i] = w
		if i > 0 && last[i-1].pos > w.pos {
			last[i] = last[i-1]
		}
	}
	var out [][2]*watchWrite
	for _, b := range seen {
		n := sort.Search(len(done), func(i int) bool { return done[i].ret >= b.call })
		if n > 0 && last[n-1].pos > b.pos {
			out = append(out, [2]*watchWrite{last[n-1], b})
		}
	}
	return out
}

// matchDeletes pairs one key's deletes with its destroy events. A
// delete's destroy must come after the event of every write acknowledged
// before the delete was invoked, and after the delete was invoked (by
// the time received), and before the event of every write invoked after
// the delete was acknowledged: a window of stream positions. Each
// destroy accounts for one delete (two deletes acknowledged with 200 each
// removed a value). It returns the acknowledged deletes no destroy in
// their window is left for, and the destroys no delete that may have
// taken effect (acknowledged, of unknown outcome, or a spanning refusal)
// invoked before they were received accounts for. Both are
// maximum matchings of points to intervals: intervals by their right
// end, each taking the first free point in it.
func matchDeletes(ws []*watchWrite, destroys []int, events []WatchEvent) (unmatched []*watchWrite, invented []int) {
	type window struct {
		w      *watchWrite
		lo, hi int // positions strictly between
	}
	var must, all []window
	for _, d := range ws {
		if d.value != Absent || (!d.must && !d.may) {
			continue
		}
		win := window{w: d, lo: -1, hi: len(events)}
		for _, w := range ws {
			if w.pos < 0 {
				continue
			}
			if w.ret != Infinity && w.ret < d.call {
				win.lo = max(win.lo, w.pos)
			}
			if d.ret != Infinity && w.call > d.ret {
				win.hi = min(win.hi, w.pos)
			}
		}
		// Received no later than the delete was invoked: not its destroy.
		early := -1
		for _, p := range destroys {
			if events[p].Time <= d.call {
				early = max(early, p)
			}
		}
		win.lo = max(win.lo, early)
		if d.must {
			must = append(must, win)
		}
		// Whether a destroy is invented is judged by count and time
		// alone: one in the wrong place is out of order (above), once.
		all = append(all, window{w: d, lo: early, hi: len(events)})
	}
	match := func(wins []window) (left []*watchWrite, used map[int]bool) {
		used = map[int]bool{}
		slices.SortStableFunc(wins, func(a, b window) int { return cmpInt(int64(a.hi), int64(b.hi)) })
		for _, win := range wins {
			found := false
			for _, p := range destroys {
				if p > win.lo && p < win.hi && !used[p] {
					used[p], found = true, true
					break
				}
			}
			if !found {
				left = append(left, win.w)
			}
		}
		return left, used
	}
	unmatched, _ = match(must)
	_, used := match(all)
	for _, p := range destroys {
		if !used[p] {
			invented = append(invented, p)
		}
	}
	slices.SortFunc(unmatched, func(a, b *watchWrite) int { return cmpInt(int64(a.op), int64(b.op)) })
	return unmatched, invented
}

func cmpInt(a, b int64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

func eventValue(e WatchEvent) string {
	if e.Raw != "" {
		return e.Raw
	}
	return fmt.Sprint(e.Value)
}

func holds(present bool) string {
	if present {
		return "held a value"
	}
	return "held nothing"
}

// ns prints a time of the history's clock.
func ns(t int64) string {
	if t == Infinity {
		return "never"
	}
	return fmt.Sprintf("%.3fs", float64(t)/1e9)
}

// WatchRecord is what SaveWatch writes: a run's history and what its
// watcher received, enough to run CheckWatch again.
type WatchRecord struct {
	Ops    []Op         `json:"ops"`
	Events []WatchEvent `json:"events"`
	Gone   bool         `json:"gone,omitempty"`
}

// SaveWatch writes rec under dir as <name>.watch.json and returns the path.
func SaveWatch(dir, name string, rec WatchRecord) (string, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", fmt.Errorf("results dir: %w", err)
	}
	path := filepath.Join(dir, name+".watch.json")
	data, err := json.Marshal(rec)
	if err != nil {
		return "", err
	}
	if err := os.WriteFile(path, data, 0o644); err != nil {
		return "", fmt.Errorf("write watch record: %w", err)
	}
	return path, nil
}

// LoadWatch reads a record SaveWatch wrote.
func LoadWatch(path string) (WatchRecord, error) {
	var rec WatchRecord
	data, err := os.ReadFile(path)
	if err != nil {
		return rec, err
	}
	if err := json.Unmarshal(data, &rec); err != nil {
		return rec, fmt.Errorf("%s: %w", path, err)
	}
	return rec, nil
}
