package fsm

import (
	"fmt"
	"sync"

	"github.com/hashicorp/raft"
)

// FSM is the state machine of one Raft group. Raft calls Apply, ApplyBatch,
// Snapshot and Restore from its FSM goroutine; the read methods may be called
// from any goroutine at any time.
type FSM struct {
	// mu guards st: Apply, Snapshot (B-tree Clone writes to the tree),
	// Restore, SetIndexes and the short steps of background index builds
	// take it for writing, readers for reading. Restore replaces st as a
	// whole. Nothing holds it for longer than a bounded step: an index
	// build works on a clone without it (indexbuild.go).
	mu sync.RWMutex
	st *state

	ops       *handlers // dispatch table, built once by New
	applied   appliedIndex
	keyFilter func(string) bool
	// indexVersion labels the index definitions last set (SetIndexes).
	indexVersion uint64
	// buildHook, when set (by tests only), is called by every background
	// index build before each time it takes the lock to catch up or
	// install (round 0, 1, ...), with no lock held: tests apply writes
	// there to land them in each phase of a build.
	buildHook func(b *indexBuild, round int)
}

// Options configure a state machine. The zero value suits group 0.
type Options struct {
	// KeyFilter, when set, restricts the keys put-if-absent generates to
	// those it accepts: a partition group generates only keys that hash to
	// itself, which keeps generated keys unique across groups. It must be
	// deterministic (a pure function of the key and fixed cluster settings),
	// or replicas would diverge.
	KeyFilter func(key string) bool
}

// New returns an empty state machine: no regions, applied index 0.
func New(opts Options) *FSM {
	st := newState()
	st.keyFilter = opts.KeyFilter
	return &FSM{st: st, ops: newHandlers(), keyFilter: opts.KeyFilter}
}

// Interfaces hashicorp/raft looks for.
var (
	_ raft.FSM         = (*FSM)(nil)
	_ raft.BatchingFSM = (*FSM)(nil)
)

// Apply applies one committed log entry. It returns a *Result for a
// LogCommand and nil for anything else; a LogConfiguration entry only
// advances AppliedIndex. It panics if a committed command does not decode:
// that means corruption or a peer running a newer format, and applying
// anything else than what the other replicas apply would make them diverge.
func (f *FSM) Apply(l *raft.Log) interface{} {
	var c Command
	if l.Type == raft.LogCommand {
		c = mustDecode(l)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.applyLocked(l, &c)
}

// ApplyBatch applies committed entries in order, as Apply would one by one,
// but decodes them before taking the lock and takes it once for the batch.
func (f *FSM) ApplyBatch(logs []*raft.Log) []interface{} {
	cmds := make([]Command, len(logs))
	for i, l := range logs {
		if l.Type == raft.LogCommand {
			cmds[i] = mustDecode(l)
		}
	}
	out := make([]interface{}, len(logs))
	f.mu.Lock()
	defer f.mu.Unlock()
	for i, l := range logs {
		out[i] = f.applyLocked(l, &cmds[i])
	}
	return out
}

// applyLocked applies one entry whose command (for LogCommand) is c. The
// caller holds f.mu for writing, so readers see the new applied index only
// together with the state it describes.
func (f *FSM) applyLocked(l *raft.Log, c *Command) interface{} {
	switch l.Type {
	case raft.LogCommand:
		var res *Result
		if c.Op == OpBatch {
			res = f.applyBatchCommand(c, l)
		} else {
			res = f.ops[c.Op](f.st, c, l.Index)
		}
		f.applied.set(l.Index)
		return res
	case raft.LogConfiguration:
		f.applied.set(l.Index)
	}
	return nil
}

// mustDecode decodes a committed command or panics (see Apply).
func mustDecode(l *raft.Log) Command {
	c, err := DecodeCommand(l.Data)
	if err != nil {
		panic(fmt.Sprintf("fsm: committed log entry %d (term %d) is not a valid command: %v; "+
			"stopping, because applying it differently from the other replicas would make them diverge", l.Index, l.Term, err))
	}
	return c
}

// applyBatchCommand applies the sub-commands of an OpBatch in order, each
// with its own result, all at the entry's index.
func (f *FSM) applyBatchCommand(c *Command, l *raft.Log) *Result {
	res := &Result{Batch: make([]*Result, len(c.Batch))}
	for i, sub := range c.Batch {
		sc, err := DecodeCommand(sub)
		if err != nil {
			// DecodeCommand checked every sub-command when it decoded the
			// batch: this cannot happen without corruption.
			panic(fmt.Sprintf("fsm: committed batch %d: sub-command %d: %v", l.Index, i, err))
		}
		res.Batch[i] = f.ops[sc.Op](f.st, &sc, l.Index)
	}
	return res
}
