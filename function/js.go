package function

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"runtime/metrics"
	"strings"
	"time"

	"github.com/dop251/goja"

	"github.com/kvnode/kvnode/region"
)

// Deployed functions are JavaScript, run by goja: a pure-Go ECMAScript 5.1+
// engine, so the binary stays static and needs no cgo (V8 bindings would
// not), with an Interrupt that stops a running script from another
// goroutine, which the time and memory limits use. A script has no file,
// network or process access: goja provides only the language and its
// standard objects, and kvnode adds nothing but the ctx object below.
//
// A deployment's source defines function execute(ctx). ctx has:
//
//	ctx.args      the arguments: scalars as values, objects as objects
//	ctx.filter    the filter keys this member runs for
//	ctx.member    this member's name
//	ctx.groups    the partition groups this member runs for
//	ctx.region    the onRegion region (null without one), see below
//	ctx.regions(name)          any region
//	ctx.query(oql, ...binds)   an OQL query's result array
//
// A region has get(key), put(key, value), putIfAbsent(key, value) (null
// when stored, else the current value), replace(key, old, value) (a
// compare-and-set: true when it stored), remove(key) (the old value) and
// size(). Writes go through Raft like any other write. execute's return
// value is the member's result: undefined or null for none, an array for
// several.

// Deployment is a function deployed at run time.
type Deployment struct {
	ID          string `json:"id"`
	Source      string `json:"source"`
	Permission  string `json:"permission"`
	DataAware   bool   `json:"dataAware"`
	HasResult   bool   `json:"hasResult"`
	Description string `json:"description,omitempty"`
	// Timeout, a Go duration ("2s"), stops this function sooner than the
	// node's --function-timeout; empty means that limit.
	Timeout string `json:"timeout,omitempty"`
}

// Check validates a deployment before it is stored: the source must
// compile and define execute. Errors wrap region.ErrInvalid (400).
func Check(d *Deployment) error {
	if err := region.ValidateKey(d.ID); err != nil || strings.ContainsAny(d.ID, "/") {
		return fmt.Errorf("%w: function id %q: it must be a non-empty name without '/' or ','", region.ErrInvalid, d.ID)
	}
	if strings.TrimSpace(d.Source) == "" {
		return fmt.Errorf("%w: the function's \"source\" is empty", region.ErrInvalid)
	}
	if d.Permission == "" {
		d.Permission = DefaultPermission
	}
	if d.Timeout != "" {
		if t, err := time.ParseDuration(d.Timeout); err != nil || t <= 0 {
			return fmt.Errorf("%w: timeout %q is not a positive duration such as \"2s\"", region.ErrInvalid, d.Timeout)
		}
	}
	if !validPermission(d.Permission) {
		return fmt.Errorf("%w: permission %q is not RESOURCE:OPERATION[:REGION[:KEY]] with RESOURCE DATA or CLUSTER and OPERATION READ, WRITE or MANAGE", region.ErrInvalid, d.Permission)
	}
	prog, err := compile(*d)
	if err != nil {
		return fmt.Errorf("%w: %v", region.ErrInvalid, err)
	}
	// Run the top level once, briefly, to see that it defines execute.
	vm := goja.New()
	vm.SetMaxCallStackSize(100)
	t := time.AfterFunc(time.Second, func() { vm.Interrupt("the top level of the script ran longer than 1s") })
	defer t.Stop()
	if _, err := vm.RunProgram(prog); err != nil {
		return fmt.Errorf("%w: running the script's top level: %v", region.ErrInvalid, err)
	}
	if _, ok := goja.AssertFunction(vm.Get("execute")); !ok {
		return fmt.Errorf("%w: the script must define function execute(ctx)", region.ErrInvalid)
	}
	return nil
}

// validPermission checks Geode's RESOURCE:OPERATION[:REGION[:KEY]].
func validPermission(p string) bool {
	parts := strings.Split(p, ":")
	if len(parts) < 2 || len(parts) > 4 {
		return false
	}
	switch parts[0] {
	case "DATA", "CLUSTER":
	default:
		return false
	}
	switch parts[1] {
	case "READ", "WRITE", "MANAGE":
	default:
		return false
	}
	for _, s := range parts[2:] {
		if s == "" {
			return false
		}
	}
	return true
}

// compile parses a deployment's source.
func compile(d Deployment) (*goja.Program, error) {
	prog, err := goja.Compile(d.ID+".js", d.Source, true)
	if err != nil {
		return nil, fmt.Errorf("the script does not compile: %v", err)
	}
	return prog, nil
}

// function makes a deployment runnable.
func (d Deployment) function(prog *goja.Program, limits Limits) Function {
	return Function{
		ID:          d.ID,
		Description: d.Description,
		Permission:  d.Permission,
		HasResult:   d.HasResult,
		DataAware:   d.DataAware,
		Run: func(ctx context.Context, c *Call) ([]any, error) {
			if t, err := time.ParseDuration(d.Timeout); err == nil && t > 0 && t < limits.Timeout {
				limits.Timeout = t
			}
			return runScript(ctx, prog, c, limits)
		},
	}
}

// runScript runs execute(ctx) in a fresh runtime under the limits.
func runScript(ctx context.Context, prog *goja.Program, c *Call, limits Limits) ([]any, error) {
	vm := goja.New()
	vm.SetMaxCallStackSize(limits.MaxCallStack)
	ctx, cancel := context.WithTimeout(ctx, limits.Timeout)
	defer cancel()
	stop := context.AfterFunc(ctx, func() {
		if errors.Is(ctx.Err(), context.DeadlineExceeded) {
			vm.Interrupt(fmt.Sprintf("stopped: the function ran longer than %v", limits.Timeout))
		} else {
			vm.Interrupt("stopped: the caller went away")
		}
	})
	defer stop()
	done := make(chan struct{})
	defer close(done)
	go watchMemory(vm, limits.MemoryBytes, done)

	if _, err := vm.RunProgram(prog); err != nil {
		return nil, scriptError(err)
	}
	execute, ok := goja.AssertFunction(vm.Get("execute"))
	if !ok {
		return nil, errors.New("the script does not define function execute(ctx)")
	}
	api := &scriptAPI{ctx: ctx, vm: vm, data: c.Data}
	v, err := execute(goja.Undefined(), api.context(c))
	if err != nil {
		return nil, scriptError(err)
	}
	if goja.IsUndefined(v) || goja.IsNull(v) {
		return nil, nil
	}
	out := v.Export()
	if list, ok := out.([]any); ok {
		return list, nil
	}
	return []any{out}, nil
}

// scriptError says what stopped a script.
func scriptError(err error) error {
	var ie *goja.InterruptedError
	if errors.As(err, &ie) {
		return fmt.Errorf("%v", ie.Value())
	}
	var ex *goja.Exception
	if errors.As(err, &ex) {
		return fmt.Errorf("the script threw: %s", ex.Value().String())
	}
	return err
}

// watchMemory interrupts vm when the heap grows past limit above what it
// was at the start, until done closes.
func watchMemory(vm *goja.Runtime, limit uint64, done <-chan struct{}) {
	sample := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	read := func() uint64 {
		metrics.Read(sample)
		if sample[0].Value.Kind() != metrics.KindUint64 {
			return 0
		}
		return sample[0].Value.Uint64()
	}
	base := read()
	t := time.NewTicker(5 * time.Millisecond)
	defer t.Stop()
	for {
		select {
		case <-done:
			return
		case <-t.C:
			if now := read(); now > base && now-base > limit {
				vm.Interrupt(fmt.Sprintf("stopped: the heap grew by more than %d MiB while the function ran", limit>>20))
				return
			}
		}
	}
}

// scriptAPI is what a script reaches of the cluster.
type scriptAPI struct {
	ctx  context.Context
	vm   *goja.Runtime
	data Data
}

// throw turns a Go error into a JavaScript exception.
func (a *scriptAPI) throw(err error) {
	panic(a.vm.NewGoError(err))
}

// toJS converts stored JSON to a script value.
func (a *scriptAPI) toJS(raw json.RawMessage) goja.Value {
	if raw == nil {
		return goja.Null()
	}
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		a.throw(err)
	}
	return a.vm.ToValue(v)
}

// fromJS converts a script value to JSON for storing.
func (a *scriptAPI) fromJS(v goja.Value) json.RawMessage {
	b, err := json.Marshal(v.Export())
	if err != nil {
		a.throw(fmt.Errorf("the value cannot be stored as JSON: %v", err))
	}
	return b
}

func (a *scriptAPI) context(c *Call) *goja.Object {
	o := a.vm.NewObject()
	args := make([]any, len(c.Args))
	for i, arg := range c.Args {
		if !arg.IsObject() {
			args[i] = arg.Value
			continue
		}
		m := map[string]any{"@type": arg.Type}
		for _, f := range arg.Fields {
			m[f.Name] = f.Value
		}
		args[i] = m
	}
	must := func(err error) {
		if err != nil {
			panic(err) // setting fresh properties on a fresh object cannot fail
		}
	}
	must(o.Set("args", args))
	filter := c.Filter
	if filter == nil {
		filter = []string{}
	}
	must(o.Set("filter", filter))
	must(o.Set("member", c.Member))
	groups := make([]any, len(c.Groups))
	for i, g := range c.Groups {
		groups[i] = int64(g)
	}
	must(o.Set("groups", groups))
	if c.Region != "" {
		must(o.Set("region", a.region(c.Region)))
	} else {
		must(o.Set("region", goja.Null()))
	}
	must(o.Set("regions", func(name string) *goja.Object { return a.region(name) }))
	must(o.Set("query", func(call goja.FunctionCall) goja.Value {
		text := call.Argument(0).String()
		var params []any
		for _, b := range call.Arguments[1:] {
			params = append(params, b.Export())
		}
		raw, err := a.data.Query(a.ctx, text, params)
		if err != nil {
			a.throw(err)
		}
		return a.toJS(raw)
	}))
	return o
}

// region is the script's API for one region.
func (a *scriptAPI) region(name string) *goja.Object {
	r := a.vm.NewObject()
	set := func(k string, v any) {
		if err := r.Set(k, v); err != nil {
			panic(err)
		}
	}
	set("name", name)
	set("get", func(key string) goja.Value {
		v, err := a.data.Get(a.ctx, name, key)
		if err != nil {
			a.throw(err)
		}
		return a.toJS(v)
	})
	set("put", func(key string, value goja.Value) {
		if err := a.data.Put(a.ctx, name, key, a.fromJS(value)); err != nil {
			a.throw(err)
		}
	})
	set("putIfAbsent", func(key string, value goja.Value) goja.Value {
		cur, err := a.data.PutIfAbsent(a.ctx, name, key, a.fromJS(value))
		if err != nil {
			a.throw(err)
		}
		return a.toJS(cur)
	})
	set("replace", func(key string, old, value goja.Value) bool {
		ok, err := a.data.Replace(a.ctx, name, key, a.fromJS(old), a.fromJS(value))
		if err != nil {
			a.throw(err)
		}
		return ok
	})
	set("remove", func(key string) goja.Value {
		old, err := a.data.Remove(a.ctx, name, key)
		if err != nil {
			a.throw(err)
		}
		return a.toJS(old)
	})
	set("size", func() int {
		n, err := a.data.Count(a.ctx, name)
		if err != nil {
			a.throw(err)
		}
		return n
	})
	return r
}
