package fsm

import (
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/raft"

	"github.com/kvnode/kvnode/fsm/applied"
	"github.com/kvnode/kvnode/fsm/codec"
	"github.com/kvnode/kvnode/fsm/history"
	"github.com/kvnode/kvnode/fsm/indexset"
	"github.com/kvnode/kvnode/region"
)

// FSM is the state machine of one Raft group. Raft calls Apply, ApplyBatch,
// Snapshot and Restore from its FSM goroutine; the read methods may be called
// from any goroutine at any time.
type FSM struct {
	// mu guards st: Apply, Snapshot (B-tree Clone writes to the tree),
	// Restore, SetIndexes and the short steps of background index builds
	// take it for writing, readers for reading. Restore replaces st as a
	// whole. Nothing holds it for longer than a bounded step: an index
	// build works on a clone without it (package indexset).
	mu sync.RWMutex
	st *state

	ops       *handlers // dispatch table, built once by New
	applied   applied.Index
	keyFilter func(string) bool
	// indexVersion labels the index definitions last set (SetIndexes).
	indexVersion uint64

	group  uint64
	onHalt func(error)
	// halted holds the error that stopped the state machine (see Halted);
	// stopped is closed at the same moment, waking WaitApplied.
	halted  atomic.Pointer[HaltError]
	stopped chan struct{}
	// events is the group's change history (events.go).
	events *history.Log
	// formats is Options.Formats (nil: every member reads Formats).
	formats func() int
	// buildHook, when set (by tests only), is called by every background
	// index build before each time it takes the lock to catch up or
	// install (round 0, 1, ...), with no lock held: tests apply writes
	// there to land them in each phase of a build (indexset.Region.Hook).
	buildHook func(b *indexset.Build, round int)
}

// Formats is the replicated format level this build reads: command format
// 4 and snapshot format 4 (FormatBuckets). Members gossip it
// (cluster.Meta.Formats); what only a level expresses is written once
// every member reads it (Options.Formats, expiry.Stamp, bucket moves).
const Formats = FormatBuckets

// The format levels and what each first expressed. A member gossips the
// level it reads; what a level expresses is written only once every member
// reads it.
const (
	// FormatTime: command and snapshot version 3, time (the clock,
	// entry time-to-live, expiry) and the change history.
	FormatTime = 3
	// FormatBuckets: command version 4 and snapshot version 4, bucket
	// ownership and its moves.
	FormatBuckets = 4
)

// Options configure a state machine. The zero value suits group 0.
type Options struct {
	// KeyFilter, when set, restricts the keys put-if-absent generates to
	// those it accepts: a partition group generates only keys that hash to
	// itself, which keeps generated keys unique across groups. It must be
	// deterministic (a pure function of the key and fixed cluster settings),
	// or replicas would diverge.
	KeyFilter func(key string) bool
	// Group is the Raft group's ID, for messages.
	Group uint64
	// History is how many change events the group keeps for watches to
	// resume from (0: history.Default). Members may differ; snapshots carry
	// the history, and a member keeps the newest History of it.
	History int
	// Formats, when set, is the newest format level every member of the
	// cluster reads (cluster.MinFormats): below Formats, Snapshot writes
	// the previous snapshot format while the state holds nothing only
	// the newer one can carry (the change history is then left out).
	Formats func() int
	// Clock is the member's clock (nil: time.Now). Reads hide entries
	// whose deadline it has passed; Apply never reads it.
	Clock func() time.Time
	// OnHalt, when set, is called once, from Raft's FSM goroutine, when the
	// state machine halts (see Halted). It must not block, and must not
	// wait for Raft (shutting Raft down from it would deadlock: do it on
	// another goroutine).
	OnHalt func(error)
}

// New returns an empty state machine: no regions, applied index 0.
func New(opts Options) *FSM {
	clock := opts.Clock
	if clock == nil {
		clock = time.Now
	}
	st := newState()
	st.keyFilter, st.clock, st.events = opts.KeyFilter, clock, history.New(opts.History)
	return &FSM{st: st, ops: newHandlers(), keyFilter: opts.KeyFilter, group: opts.Group, onHalt: opts.OnHalt, stopped: make(chan struct{}),
		events: st.events, formats: opts.Formats}
}

// HaltError says why a state machine stopped applying entries: which group,
// which log entry, and what was wrong with it. It wraps ErrHalted.
type HaltError struct {
	Group uint64
	Index uint64
	Term  uint64
	Err   error
}

func (e *HaltError) Error() string {
	return fmt.Sprintf("raft group %d stopped at log entry %d (term %d): %v; "+
		"entries from there on are not applied on this member", e.Group, e.Index, e.Term, e.Err)
}

func (e *HaltError) Unwrap() []error { return []error{ErrHalted, e.Err} }

// ErrHalted marks operations refused because the state machine halted. It
// wraps region.ErrNotLeader: this replica cannot serve, another one may.
var ErrHalted = fmt.Errorf("%w: state machine halted", region.ErrNotLeader)

// Halted returns the error that stopped the state machine, nil while it
// runs. A state machine halts, instead of panicking, on a committed entry
// it cannot decode or apply: applying anything other than what the other
// replicas apply would make them diverge, and panicking would take the whole
// node down, with every other group it hosts, and again at every restart
// when the entry is replayed. Once halted it applies nothing more (Apply
// only answers with the HaltError), refuses to snapshot (a snapshot would
// claim entries it never applied) and WaitApplied returns the HaltError.
// Only a new process clears it; the entry is met again when the log is
// replayed, unless the replica is rebuilt from another member.
func (f *FSM) Halted() error {
	if h := f.halted.Load(); h != nil {
		return h
	}
	return nil
}

// halt stops the state machine at entry l, once.
func (f *FSM) halt(l *raft.Log, err error) *HaltError {
	h := &HaltError{Group: f.group, Index: l.Index, Term: l.Term, Err: err}
	if !f.halted.CompareAndSwap(nil, h) {
		return f.halted.Load()
	}
	close(f.stopped)
	f.events.Stop(h)
	if f.onHalt != nil {
		f.onHalt(h)
	}
	return h
}

// Interfaces hashicorp/raft looks for.
var (
	_ raft.FSM         = (*FSM)(nil)
	_ raft.BatchingFSM = (*FSM)(nil)
)

// Apply applies one committed log entry. It returns a *Result for a
// LogCommand and nil for anything else; a LogConfiguration entry only
// advances AppliedIndex. A command that does not decode, or whose handler
// panics, halts the state machine (see Halted) and is answered with a
// Result carrying the HaltError.
func (f *FSM) Apply(l *raft.Log) interface{} {
	return f.ApplyBatch([]*raft.Log{l})[0]
}

// ApplyBatch applies committed entries in order, as Apply would one by one,
// but decodes them before taking the lock and takes it once for the batch.
// Values are kept in place, as slices of the entry's Data: DESIGN.md
// ("Commands") says why that is safe for raft's entries and what it costs.
func (f *FSM) ApplyBatch(logs []*raft.Log) []interface{} {
	out := make([]interface{}, len(logs))
	if h := f.halted.Load(); h != nil {
		return haltedResults(logs, out, h)
	}
	cmds := make([]codec.Command, len(logs))
	for i, l := range logs {
		if l.Type != raft.LogCommand {
			continue
		}
		c, err := codec.DecodeCommandNoCopy(l.Data)
		if err != nil {
			// Apply the entries before it, then stop there.
			f.mu.Lock()
			done := f.applyAll(logs[:i], cmds[:i], out)
			f.mu.Unlock()
			f.events.Applied(f.applied.Load())
			if done < i {
				return haltedResults(logs[done:], out[done:], f.halted.Load())
			}
			h := f.halt(l, fmt.Errorf("the entry is not a command this build can decode (corruption, or a newer peer's format): %w", err))
			haltedResults(logs[i:], out[i:], h)
			return out
		}
		cmds[i] = c
	}
	f.mu.Lock()
	done := f.applyAll(logs, cmds, out)
	f.mu.Unlock()
	f.events.Applied(f.applied.Load())
	if done < len(logs) {
		haltedResults(logs[done:], out[done:], f.halted.Load())
	}
	return out
}

// haltedResults answers entries that were not applied because the state
// machine halted: every command gets a Result with the HaltError, which
// wraps region.ErrIndeterminate for the client waiting on it (the entry is
// committed; other replicas may apply it).
func haltedResults(logs []*raft.Log, out []interface{}, h *HaltError) []interface{} {
	err := fmt.Errorf("%w: %w", region.ErrIndeterminate, h)
	for i, l := range logs {
		if l.Type == raft.LogCommand {
			out[i] = &codec.Result{Err: err}
		}
	}
	return out
}

// applyAll applies logs (with their decoded commands) in order under f.mu,
// storing each result in out, and returns how many it applied: fewer than
// len(logs) when one of them halted the state machine.
func (f *FSM) applyAll(logs []*raft.Log, cmds []codec.Command, out []interface{}) int {
	for i, l := range logs {
		res, err := f.applyLocked(l, &cmds[i])
		if err != nil {
			f.halt(l, err)
			return i
		}
		out[i] = res
	}
	return len(logs)
}

// applyLocked applies one entry whose command (for LogCommand) is c. The
// caller holds f.mu for writing, so readers see the new applied index only
// together with the state it describes. A panic in a handler is a bug that
// may have left the state half-changed: it becomes an error, and the caller
// halts the state machine before anything else is applied or read through
// the store (reads check Halted).
func (f *FSM) applyLocked(l *raft.Log, c *codec.Command) (res interface{}, err error) {
	defer func() {
		if p := recover(); p != nil {
			res, err = nil, fmt.Errorf("applying the %v command panicked: %v", c.Op, p)
		}
	}()
	switch l.Type {
	case raft.LogCommand:
		f.st.expireStage(l.Index)
		f.st.events.Begin(l.Index)
		f.st.advance(c.Now)
		var r *codec.Result
		switch c.Op {
		case codec.OpBatch:
			r, err = f.st.applyBatch(f.ops, c, l)
			if err != nil {
				return nil, err
			}
		case codec.OpCommitStaged:
			r = f.st.commitStaged(f.ops, c, l.Index)
		default:
			r = f.ops[c.Op](f.st, c, l.Index)
		}
		f.applied.Set(l.Index)
		return r, nil
	case raft.LogConfiguration:
		f.applied.Set(l.Index)
	}
	return nil, nil
}

// applyBatch applies the sub-commands of an OpBatch in order, each
// with its own result, all at the entry's index.
func (s *state) applyBatch(ops *handlers, c *codec.Command, l *raft.Log) (*codec.Result, error) {
	res := &codec.Result{Batch: make([]*codec.Result, len(c.Batch))}
	for i, sub := range c.Batch {
		sc, err := codec.DecodeCommandNoCopy(sub) // in place, as ApplyBatch
		if err != nil {
			// DecodeCommand checked every sub-command when it decoded the
			// batch: only corruption gets here.
			return nil, fmt.Errorf("sub-command %d of batch entry %d does not decode: %w", i, l.Index, err)
		}
		s.advance(sc.Now)
		res.Batch[i] = ops[sc.Op](s, &sc, l.Index)
	}
	return res, nil
}
