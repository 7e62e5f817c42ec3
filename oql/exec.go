package oql

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
)

// shape is how a SELECT's rows look (oql.md §6).
type shape int

const (
	shapePlain      shape = iota // one unaliased projection: the value itself
	shapeStarOne                 // SELECT * over one iterator: its value
	shapeStarStruct              // SELECT * over several: a struct named after the iterators
	shapeStruct                  // several or aliased projections
)

// compiledSelect is one SELECT ready to run.
type compiledSelect struct {
	stmt  *selectStmt
	sc    *scope
	iters []evalFn
	where evalFn
	// whereNE: the whole WHERE is one <> comparison, whose UNDEFINED
	// result keeps the row (oql.md §4).
	whereNE bool

	shape shape
	names []string // struct field names (shapeStruct, shapeStarStruct)
	proj  []evalFn // per projection; nil for an aggregate
	aggs  []*aggSpec

	aggregate bool     // any aggregate or GROUP BY
	groupBy   []evalFn // GROUP BY keys
	groupOf   []int    // per projection: its GROUP BY index, -1 for aggregates
	// countStarOnly: the projection is exactly COUNT(*), which answers [0]
	// over no rows where every other aggregate query answers [].
	countStarOnly bool
	// sizeShortcut: COUNT(*) without WHERE over one region is its size.
	sizeShortcut string

	order []orderSpec
	limit evalFn

	// prefilter decides rows of a plain numeric WHERE from their stored
	// text (prefilter.go); nil for any other WHERE.
	prefilter *prefilter

	// indexable are the WHERE conjuncts an index of the first iterator's
	// region could serve, best first (plan.go).
	indexable []indexCandidate
}

// orderSpec is one compiled ORDER BY key: a projected field (field >= 0;
// the row itself for a plain shape) or an expression over the iterators.
type orderSpec struct {
	field int
	fn    evalFn
	desc  bool
}

// aggSpec is one aggregate of the SELECT list.
type aggSpec struct {
	fn       string // COUNT SUM AVG MIN MAX
	distinct bool
	star     bool
	arg      evalFn
}

// compileSelect compiles s as a query nested in parent (nil at top level).
func compileSelect(c *compiler, parent *scope, s *selectStmt) (*compiledSelect, error) {
	sc := &scope{parent: parent}
	if parent != nil {
		sc.base = parent.base + len(parent.names)
	}
	cs := &compiledSelect{stmt: s, sc: sc}
	for _, it := range s.from {
		f, err := c.compileExpr(sc, it.x)
		if err != nil {
			return nil, err
		}
		cs.iters = append(cs.iters, f)
		sc.names = append(sc.names, it.name)
	}
	if n := sc.base + len(sc.names); n > c.slots {
		c.slots = n
	}
	if s.where != nil {
		w := s.where
		if u, ok := w.(*unaryExpr); ok && u.op == "NOT" {
			if n := negate(u.x); n != nil {
				w = n
			}
		}
		if b, ok := w.(*binaryExpr); ok && b.op == "<>" {
			cs.whereNE = true
		}
		f, err := c.compileExpr(sc, w)
		if err != nil {
			return nil, err
		}
		cs.where = f
		cs.planIndexes(c)
		if cs.prefilter, err = c.compilePrefilter(sc, s, w); err != nil {
			return nil, err
		}
	}
	if err := cs.compileProjection(c); err != nil {
		return nil, err
	}
	if err := cs.compileGrouping(c); err != nil {
		return nil, err
	}
	if err := cs.compileOrder(c); err != nil {
		return nil, err
	}
	if s.limit != nil {
		f, err := c.compileExpr(sc, s.limit)
		if err != nil {
			return nil, err
		}
		cs.limit = f
	}
	return cs, nil
}

func (cs *compiledSelect) compileProjection(c *compiler) error {
	s := cs.stmt
	if s.star {
		if len(s.from) == 1 {
			cs.shape = shapeStarOne
			return nil
		}
		cs.shape = shapeStarStruct
		for i, it := range s.from {
			name := it.name
			if name == "" {
				name = "field$" + strconv.Itoa(i+1)
			}
			cs.names = append(cs.names, name)
		}
		return nil
	}
	for i, p := range s.proj {
		cs.names = append(cs.names, fieldName(p, i))
		if a, ok := p.x.(*aggExpr); ok {
			spec := &aggSpec{fn: a.fn, distinct: a.distinct, star: a.x == nil}
			if a.x != nil {
				if containsAgg(a.x) {
					return errorf("aggregates cannot be nested: %s", exprString(a))
				}
				f, err := c.compileExpr(cs.sc, a.x)
				if err != nil {
					return err
				}
				spec.arg = f
			}
			cs.aggs = append(cs.aggs, spec)
			cs.proj = append(cs.proj, nil)
			cs.aggregate = true
			continue
		}
		if containsAgg(p.x) {
			return errorf("an aggregate must be a whole projection: %s", exprString(p.x))
		}
		f, err := c.compileExpr(cs.sc, p.x)
		if err != nil {
			return err
		}
		cs.aggs = append(cs.aggs, nil)
		cs.proj = append(cs.proj, f)
	}
	isCountStar := len(s.proj) == 1 && cs.aggs[0] != nil && cs.aggs[0].star
	switch {
	case isCountStar:
		cs.shape = shapePlain
		cs.countStarOnly = true
	case len(s.proj) == 1 && s.proj[0].alias == "":
		cs.shape = shapePlain
	default:
		cs.shape = shapeStruct
	}
	return nil
}

// containsAgg reports whether an aggregate occurs anywhere in x.
func containsAgg(x expr) bool {
	found := false
	walk(x, func(e expr) {
		if _, ok := e.(*aggExpr); ok {
			found = true
		}
	})
	return found
}

// walk calls fn on x and every expression under it (not into subqueries).
func walk(x expr, fn func(expr)) {
	if x == nil {
		return
	}
	fn(x)
	switch x := x.(type) {
	case *memberExpr:
		walk(x.x, fn)
	case *callExpr:
		walk(x.x, fn)
		for _, a := range x.args {
			walk(a, fn)
		}
	case *indexExpr:
		walk(x.x, fn)
		walk(x.idx, fn)
	case *unaryExpr:
		walk(x.x, fn)
	case *binaryExpr:
		walk(x.l, fn)
		walk(x.r, fn)
	case *funcExpr:
		for _, a := range x.args {
			walk(a, fn)
		}
	case *aggExpr:
		walk(x.x, fn)
	case *setExpr:
		for _, a := range x.elems {
			walk(a, fn)
		}
	case *castExpr:
		walk(x.x, fn)
	}
}

// fieldName names projection i when it has no alias (oql.md §6).
func fieldName(p projection, i int) string {
	if p.alias != "" {
		return p.alias
	}
	x := p.x
	if a, ok := x.(*aggExpr); ok {
		if a.x == nil {
			return "0"
		}
		x = a.x
	}
	switch x := x.(type) {
	case *identExpr:
		return x.name
	case *memberExpr:
		return x.name
	case *callExpr:
		return x.name
	case *litExpr:
		if s, ok := x.v.(string); ok {
			return s
		}
		return x.text
	}
	return "field$" + strconv.Itoa(i+1)
}

// compileGrouping checks GROUP BY against the projection (oql.md §8).
func (cs *compiledSelect) compileGrouping(c *compiler) error {
	s := cs.stmt
	if len(s.groupBy) == 0 {
		if cs.aggregate {
			for i, a := range cs.aggs {
				if a == nil {
					return errorf("%s is neither an aggregate nor in a GROUP BY clause", exprString(s.proj[i].x))
				}
			}
			if cs.countStarOnly && s.where == nil && len(s.from) == 1 {
				cs.sizeShortcut = regionOf(s.from[0].x)
			}
		}
		return nil
	}
	if s.star {
		return errorf("SELECT * cannot be used with GROUP BY")
	}
	cs.aggregate = true
	cs.groupOf = make([]int, len(s.proj))
	for i := range cs.groupOf {
		cs.groupOf[i] = -1
	}
	for gi, g := range s.groupBy {
		text := exprString(g)
		var matched expr
		for pi, p := range s.proj {
			if cs.aggs[pi] != nil {
				continue
			}
			if exprString(p.x) == text || isName(g, p.alias) {
				if cs.groupOf[pi] < 0 {
					cs.groupOf[pi] = gi
				}
				matched = p.x // an alias groups by what it names
			}
		}
		if matched == nil {
			return errorf("GROUP BY %s: the expression must also be in the SELECT list", text)
		}
		f, err := c.compileExpr(cs.sc, matched)
		if err != nil {
			return err
		}
		cs.groupBy = append(cs.groupBy, f)
	}
	for pi, p := range s.proj {
		if cs.aggs[pi] == nil && cs.groupOf[pi] < 0 {
			return errorf("%s is neither an aggregate nor in the GROUP BY clause", exprString(p.x))
		}
	}
	return nil
}

// isName reports whether x is the bare name n.
func isName(x expr, n string) bool {
	id, ok := x.(*identExpr)
	return ok && n != "" && id.name == n
}

// regionOf returns the region path an iterator expression scans directly
// (/r, /r.values, /r.keySet, /r.entrySet ...), "" for anything else.
func regionOf(x expr) string {
	switch x := x.(type) {
	case *regionExpr:
		return x.path
	case *memberExpr:
		if r, ok := x.x.(*regionExpr); ok {
			switch x.name {
			case "values", "keySet", "keys", "entrySet", "entries":
				return r.path
			}
		}
	case *callExpr:
		if r, ok := x.x.(*regionExpr); ok && len(x.args) == 0 {
			switch x.name {
			case "values", "keySet", "entrySet":
				return r.path
			}
		}
	}
	return ""
}

func (cs *compiledSelect) compileOrder(c *compiler) error {
	s := cs.stmt
	for _, o := range s.orderBy {
		spec := orderSpec{field: -1, desc: o.desc}
		text := exprString(o.x)
		for pi, p := range s.proj {
			if isName(o.x, p.alias) || exprString(p.x) == text {
				spec.field = pi
				break
			}
		}
		if spec.field < 0 {
			if cs.aggregate {
				return errorf("ORDER BY %s: after GROUP BY or aggregates, sort by a projected column or its alias", text)
			}
			if containsAgg(o.x) {
				return errorf("ORDER BY %s: an aggregate must be projected to sort by it", text)
			}
			f, err := c.compileExpr(cs.sc, o.x)
			if err != nil {
				return err
			}
			spec.fn = f
		}
		cs.order = append(cs.order, spec)
	}
	return nil
}

// orderDerivable reports whether every ORDER BY key can be computed from
// the projected rows, which Geode requires on a partitioned region
// (oql.md §7): a projected column or alias, or a path under a projected
// value or under SELECT *.
func (cs *compiledSelect) orderDerivable() error {
	s := cs.stmt
	for i, o := range s.orderBy {
		if cs.order[i].field >= 0 || s.star {
			continue
		}
		text := exprString(o.x)
		ok := false
		for _, p := range s.proj {
			if strings.HasPrefix(text, exprString(p.x)+".") {
				ok = true
			}
		}
		if !ok {
			return errorf("ORDER BY %s on a partitioned region: the sort key must be derivable from the SELECT list", text)
		}
	}
	return nil
}

// limitValue evaluates LIMIT: -1 without one.
func (cs *compiledSelect) limitValue(e *env) (int, error) {
	if cs.limit == nil {
		return -1, nil
	}
	v, err := cs.limit(e)
	if err != nil {
		return 0, err
	}
	n, ok := v.(int64)
	if !ok || n < 0 || n > math.MaxInt32 {
		return 0, fmt.Errorf("%w: LIMIT needs a non-negative int, got %s %v", ErrBind, typeName(v), v)
	}
	return int(n), nil
}

// keep evaluates WHERE for the current binding.
func (cs *compiledSelect) keep(e *env) (bool, error) {
	v, err := cs.where(e)
	if err != nil {
		return false, err
	}
	switch b := v.(type) {
	case bool:
		return b, nil
	case undefinedValue:
		return cs.whereNE, nil
	case nil:
		return false, nil
	}
	return false, errorf("WHERE must be a boolean condition, got %s", typeName(v))
}

// bindings calls fn for every binding of the iterators that WHERE keeps,
// until fn returns false. shard, when not nil, is the source the first
// iterator scans (one partition group's share of a partitioned region).
func (cs *compiledSelect) bindings(e *env, shard Source, fn func() (bool, error)) error {
	var rec func(i int) (bool, error)
	rec = func(i int) (bool, error) {
		if i == len(cs.iters) {
			if err := e.check(); err != nil {
				return false, err
			}
			if cs.where != nil {
				ok, err := cs.keep(e)
				if err != nil || !ok {
					return err == nil, err
				}
			}
			return fn()
		}
		coll, err := cs.iters[i](e)
		if err != nil {
			return false, err
		}
		it := e
		if i == 0 && shard != nil {
			cp := *e
			cp.src = shard
			it = &cp
		}
		more := true
		visit := func(v Value) (bool, error) {
			e.slots[cs.sc.base+i] = v
			m, err := rec(i + 1)
			more = m
			return m, err
		}
		if i == 0 && len(cs.indexable) > 0 {
			if used, err := cs.indexScan(e, it, visit); used || err != nil {
				return more, err
			}
		}
		if i == 0 && cs.prefilter != nil {
			if path, ok := regionValues(coll); ok {
				if _, ok := it.src.(ImmutableSource); ok {
					return cs.scanPrefiltered(e, it, path, func() (bool, error) { return rec(1) }, fn)
				}
			}
		}
		err = iterate(it, coll, visit)
		return more, err
	}
	_, err := rec(0)
	return err
}

// output computes the projected row of the current binding.
func (cs *compiledSelect) output(e *env) (Value, error) {
	switch cs.shape {
	case shapeStarOne:
		return e.slots[cs.sc.base], nil
	case shapeStarStruct:
		vals := slices.Clone(e.slots[cs.sc.base : cs.sc.base+len(cs.iters)])
		return &Struct{Names: cs.names, Values: vals}, nil
	case shapePlain:
		return cs.proj[0](e)
	}
	vals := make([]Value, len(cs.proj))
	for i, f := range cs.proj {
		v, err := f(e)
		if err != nil {
			return nil, err
		}
		vals[i] = v
	}
	return &Struct{Names: cs.names, Values: vals}, nil
}

// field returns projected column i of an output row.
func (cs *compiledSelect) field(row Value, i int) Value {
	if s, ok := row.(*Struct); ok && cs.shape == shapeStruct {
		return s.Values[i]
	}
	return row
}

// asValue makes the SELECT an expression (a subquery): its result as a
// List, computed once per execution when it does not read its enclosing
// query's variables.
func (cs *compiledSelect) asValue() evalFn {
	correlated := cs.sc.outerRefs
	return func(e *env) (Value, error) {
		if !correlated {
			if v, ok := e.cache[cs]; ok {
				return v.(List), nil
			}
		}
		p, err := cs.partial(e, nil, 0)
		if err != nil {
			return nil, err
		}
		rows, err := cs.merge(e, []*Partial{p}, 0)
		if err != nil {
			return nil, err
		}
		if !correlated {
			e.cache[cs] = List(rows)
		}
		return List(rows), nil
	}
}
