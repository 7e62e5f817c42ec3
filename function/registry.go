package function

import (
	"context"
	"crypto/sha256"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/dop251/goja"
)

// Limits bound a deployed (JavaScript) function's run.
type Limits struct {
	// Timeout stops a run that takes longer (default 30s).
	Timeout time.Duration
	// MemoryBytes stops a run while the process heap has grown by more
	// than this since it started (default 256 MiB). The heap is shared
	// by the whole process, so this is a coarse guard against a runaway
	// script, not an accounting of its own allocations.
	MemoryBytes uint64
	// MaxCallStack bounds the script's call depth (default 1000).
	MaxCallStack int
}

// DefaultTimeout is how long a function call may run when no limit is set
// (--function-timeout's default).
const DefaultTimeout = 30 * time.Second

func (l *Limits) setDefaults() {
	if l.Timeout <= 0 {
		l.Timeout = DefaultTimeout
	}
	if l.MemoryBytes == 0 {
		l.MemoryBytes = 256 << 20
	}
	if l.MaxCallStack <= 0 {
		l.MaxCallStack = 1000
	}
}

// Deployments are the functions deployed at run time, kept by the
// cluster (the store keeps them in the control group).
type Deployments interface {
	Deployment(ctx context.Context, id string) (Deployment, bool, error)
	Deployments(ctx context.Context) ([]Deployment, error)
}

// Registry holds a node's functions: the ones registered in Go (the
// built-ins, and any an embedding program adds) and, through Deployments,
// the ones deployed as JavaScript. It holds no package-level state: every
// node has its own.
type Registry struct {
	limits   Limits
	deployed Deployments

	mu       sync.RWMutex
	fns      map[string]Function
	compiled map[string]compiledScript // deployed id → its compiled source
}

type compiledScript struct {
	sum  [32]byte
	prog *goja.Program
}

// NewRegistry returns a registry holding fns; deployed may be nil.
func NewRegistry(limits Limits, deployed Deployments, fns ...Function) (*Registry, error) {
	limits.setDefaults()
	r := &Registry{limits: limits, deployed: deployed, fns: map[string]Function{}, compiled: map[string]compiledScript{}}
	for _, f := range fns {
		if err := r.Register(f); err != nil {
			return nil, err
		}
	}
	return r, nil
}

// Register adds a Go function. Its id must be new.
func (r *Registry) Register(f Function) error {
	if f.ID == "" || f.Run == nil {
		return fmt.Errorf("function: a function needs an id and Run")
	}
	if f.Permission == "" {
		f.Permission = DefaultPermission
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, ok := r.fns[f.ID]; ok {
		return fmt.Errorf("function: %q is registered twice", f.ID)
	}
	r.fns[f.ID] = f
	return nil
}

// IsRegistered reports whether id is a Go function (deployments cannot
// take its id).
func (r *Registry) IsRegistered(id string) bool {
	r.mu.RLock()
	defer r.mu.RUnlock()
	_, ok := r.fns[id]
	return ok
}

// Limits returns the limits deployed functions run with.
func (r *Registry) Limits() Limits { return r.limits }

// Lookup returns the function of an id: a registered one, else a
// deployed one (compiled once per source); ErrUnknownFunction if none.
func (r *Registry) Lookup(ctx context.Context, id string) (Function, error) {
	r.mu.RLock()
	f, ok := r.fns[id]
	r.mu.RUnlock()
	if ok {
		return f, nil
	}
	if r.deployed != nil {
		d, ok, err := r.deployed.Deployment(ctx, id)
		if err != nil {
			return Function{}, err
		}
		if ok {
			prog, err := r.program(d)
			if err != nil {
				return Function{}, fmt.Errorf("deployed function %s: %w", id, err)
			}
			return d.function(prog, r.limits), nil
		}
	}
	return Function{}, fmt.Errorf("function %q: %w", id, ErrUnknownFunction)
}

// program compiles a deployment's source, or returns it from the cache.
func (r *Registry) program(d Deployment) (*goja.Program, error) {
	sum := sha256.Sum256([]byte(d.Source))
	r.mu.RLock()
	c, ok := r.compiled[d.ID]
	r.mu.RUnlock()
	if ok && c.sum == sum {
		return c.prog, nil
	}
	prog, err := compile(d)
	if err != nil {
		return nil, err
	}
	r.mu.Lock()
	r.compiled[d.ID] = compiledScript{sum: sum, prog: prog}
	r.mu.Unlock()
	return prog, nil
}

// IDs lists every function id, sorted.
func (r *Registry) IDs(ctx context.Context) ([]string, error) {
	r.mu.RLock()
	ids := make([]string, 0, len(r.fns))
	for id := range r.fns {
		ids = append(ids, id)
	}
	r.mu.RUnlock()
	if r.deployed != nil {
		ds, err := r.deployed.Deployments(ctx)
		if err != nil {
			return nil, err
		}
		for _, d := range ds {
			if !slices.Contains(ids, d.ID) {
				ids = append(ids, d.ID)
			}
		}
	}
	slices.Sort(ids)
	return ids, nil
}
