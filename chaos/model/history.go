package model

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/anishathalye/porcupine"
)

// Op is one recorded operation. Times are nanoseconds since the history
// began (a monotonic clock); Return is Infinity when the outcome is unknown.
type Op struct {
	Client int    `json:"client"`
	Input  Input  `json:"input"`
	Output Output `json:"output"`
	Call   int64  `json:"call"`
	Return int64  `json:"return"`
	Member string `json:"member,omitempty"` // which member the client asked
	// Error says why the outcome is unknown: the status and body of a 5xx,
	// or the client's error.
	Error string `json:"error,omitempty"`
}

// History records operations from concurrent clients.
type History struct {
	start time.Time
	mu    sync.Mutex
	ops   []Op
}

// NewHistory starts an empty history; its clock starts now.
func NewHistory() *History { return &History{start: time.Now()} }

// NewHistoryAt starts an empty history whose clock started at start, so
// histories of one run share a clock with its fault events.
func NewHistoryAt(start time.Time) *History { return &History{start: start} }

// Now is the history's clock.
func (h *History) Now() int64 { return int64(time.Since(h.start)) }

// Add records a finished operation. An unknown outcome is stored with its
// return at Infinity, whatever the caller passed.
func (h *History) Add(op Op) {
	if op.Output.Unknown {
		op.Return = Infinity
		op.Output = Output{Unknown: true}
	}
	h.mu.Lock()
	h.ops = append(h.ops, op)
	h.mu.Unlock()
}

// Ops returns a copy of the recorded operations.
func (h *History) Ops() []Op {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]Op(nil), h.ops...)
}

// Verdict is the checker's answer on a history.
type Verdict struct {
	Result porcupine.CheckResult
	Ops    int
	// Unknown is how many operations had an indeterminate outcome.
	Unknown int
	info    porcupine.LinearizationInfo
}

// Check runs porcupine over ops with the model, for at most timeout
// (porcupine.Unknown when it runs out). Each operation is checked as one
// part per family it touches (partsOf).
func Check(ops []Op, timeout time.Duration) Verdict {
	slots := familySlots(ops)
	hist := make([]porcupine.Operation, 0, len(ops))
	unknown := 0
	for _, op := range ops {
		if op.Output.Unknown {
			unknown++
			if op.Input.Kind.single() == Get {
				// A read with no answer constrains nothing; left in, it
				// only widens the checker's search.
				continue
			}
		}
		hist = append(hist, partsOf(op, slots)...)
	}
	boundUnknown(hist)
	res, info := porcupine.CheckOperationsVerbose(Porcupine(), hist, timeout)
	return Verdict{Result: res, Ops: len(ops), Unknown: unknown, info: info}
}

// boundUnknown gives each write part of unknown outcome whose value a
// definite answer shows (a read, a query, a 409's current value, the @old of
// a CAS that succeeded) a return time: the earliest return of such an
// answer in its family. Values are unique in a run, so the write took
// effect, and did so before that answer was given; with its return at
// infinity porcupine would also try every later place for it, which made a
// compose crash-all history with 18 unknown writes in one family take
// 3 min 12 s to check (the run's 3 minutes ran out: "unknown"); bounded,
// it takes well under a second. Writes nobody saw keep their infinite
// return: whether they took effect is still for the checker to find.
func boundUnknown(hist []porcupine.Operation) {
	type famVal struct {
		family string
		value  int64
	}
	seen := map[famVal]int64{} // earliest return of an answer showing the value
	note := func(f string, v, ret int64) {
		if v == Absent {
			return
		}
		k := famVal{f, v}
		if t, ok := seen[k]; !ok || ret < t {
			seen[k] = ret
		}
	}
	for _, op := range hist {
		out := op.Output.(partOut)
		if out.Mode != definite {
			continue
		}
		in := op.Input.(part)
		note(in.Family, out.Value, op.Return)
		for _, v := range out.Read {
			note(in.Family, v, op.Return)
		}
		if in.Kind.single() == CAS && out.Status == 200 {
			for _, v := range in.Olds {
				note(in.Family, v, op.Return)
			}
		}
	}
	for i, op := range hist {
		if op.Output.(partOut).Mode != unknown {
			continue
		}
		in := op.Input.(part)
		for _, v := range in.Values {
			if t, ok := seen[famVal{in.Family, v}]; ok && t < hist[i].Return && t >= op.Call {
				hist[i].Return = t
			}
		}
	}
}

// Save writes the history (JSON) and porcupine's visualization (HTML)
// under dir, named after name, and returns the two paths.
func (v Verdict) Save(dir, name string, ops []Op) (historyPath, htmlPath string, err error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", "", fmt.Errorf("results dir: %w", err)
	}
	historyPath = filepath.Join(dir, name+".history.json")
	data, err := json.MarshalIndent(ops, "", " ")
	if err != nil {
		return "", "", err
	}
	if err := os.WriteFile(historyPath, data, 0o644); err != nil {
		return "", "", fmt.Errorf("write history: %w", err)
	}
	htmlPath = filepath.Join(dir, name+".html")
	if err := porcupine.VisualizePath(Porcupine(), v.info, htmlPath); err != nil {
		return historyPath, "", fmt.Errorf("write visualization: %w", err)
	}
	return historyPath, htmlPath, nil
}

// LoadHistory reads a history written by Save, to check it again.
func LoadHistory(path string) ([]Op, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var ops []Op
	if err := json.Unmarshal(data, &ops); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return ops, nil
}
