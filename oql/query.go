package oql

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
)

// Query is a parsed query. Parse checks the syntax only, as Geode does when
// a named query is stored; the first execution compiles it (names,
// GROUP BY rules, aggregates) and keeps the compiled form, so a Query is
// meant to be cached and is safe for concurrent use.
type Query struct {
	text string
	st   *statement

	once    sync.Once
	prog    *program
	progErr error
	params  int
	regions []string
	scatter string
	// scatterRefs counts the references to the scatter region, its FROM
	// iterator included.
	scatterRefs int
}

// program is a compiled query.
type program struct {
	sel   *compiledSelect // nil for a bare expression
	bare  evalFn
	slots int
}

// compiler turns the AST into closures and resolves names; it counts the
// iterator slots the query needs.
type compiler struct {
	slots int
}

// MaxQueryLength is the longest query text Parse accepts, in bytes.
const MaxQueryLength = 32 << 10

// Parse parses a query text. Errors are *SyntaxError with the position.
func Parse(text string) (*Query, error) {
	if len(text) > MaxQueryLength {
		return nil, &SyntaxError{Line: 1, Column: 1, Msg: fmt.Sprintf("the query is %d bytes long; at most %d are accepted", len(text), MaxQueryLength)}
	}
	st, err := parse(text)
	if err != nil {
		return nil, err
	}
	q := &Query{text: text, st: st}
	q.scan()
	return q, nil
}

// scan collects the parameters and regions a query names.
func (q *Query) scan() {
	seen := map[string]bool{}
	refs := map[string]int{}
	var visit func(x expr)
	var visitSelect func(s *selectStmt)
	visit = func(x expr) {
		walk(x, func(e expr) {
			switch e := e.(type) {
			case *paramExpr:
				q.params = max(q.params, e.n)
			case *regionExpr:
				refs[e.path]++
				if !seen[e.path] {
					seen[e.path] = true
					q.regions = append(q.regions, e.path)
				}
			case *subqueryExpr:
				visitSelect(e.q)
			}
		})
	}
	visitSelect = func(s *selectStmt) {
		for _, p := range s.proj {
			visit(p.x)
		}
		for _, it := range s.from {
			visit(it.x)
		}
		visit(s.where)
		for _, g := range s.groupBy {
			visit(g)
		}
		for _, o := range s.orderBy {
			visit(o.x)
		}
		if s.limit != nil {
			visit(s.limit)
		}
	}
	if q.st.sel != nil {
		visitSelect(q.st.sel)
		if len(q.st.sel.from) > 0 {
			q.scatter = regionOf(q.st.sel.from[0].x)
			q.scatterRefs = refs[q.scatter]
		}
	} else {
		visit(q.st.bare)
	}
	slices.Sort(q.regions)
}

// Text returns the query text as given.
func (q *Query) Text() string { return q.text }

// String prints the query in canonical form; parsing it gives the same query.
func (q *Query) String() string {
	var b strings.Builder
	q.st.print(&b)
	return b.String()
}

// Params returns the highest bind parameter number the query uses ($n),
// 0 when it uses none.
func (q *Query) Params() int { return q.params }

// CheckBinds says whether n bind values fit the query: exactly one per
// parameter up to the highest $k it uses. oql.md §9: Geode ignores extra
// values, but the spec says a wrong number is an error (500), and kvnode
// follows the spec on every path that binds values (REST's named queries,
// functions' queries). The error wraps ErrBind and names the query as
// what ("query \"byId\"").
func (q *Query) CheckBinds(what string, n int) error {
	if n == q.params {
		return nil
	}
	return fmt.Errorf("%w: %s has %d parameter(s) (up to $%d), %d bind value(s) were given", ErrBind, what, q.params, q.params, n)
}

// Regions returns the region paths the query names ("/orders"), sorted.
func (q *Query) Regions() []string { return slices.Clone(q.regions) }

// ScatterRegion returns the region the query's first FROM iterator scans,
// "" when the query is not a SELECT over a region. When that region is
// partitioned the query runs as one ExecutePartial per partition group,
// merged by Merge.
func (q *Query) ScatterRegion() string { return q.scatter }

// Splittable reports whether the query, over a region that is not
// partitioned, may still run as partials over disjoint shares of its
// scatter region merged by Merge, with the answer Execute gives: the
// region is named once (a second reference, such as a subquery over it,
// would see one share only); the answer's order does not follow the
// scan's (an ORDER BY of what the SELECT list keeps, or aggregates
// without GROUP BY: one row); and
// it is not COUNT(*) without WHERE, which reads the region's size, not
// its entries. The store uses it to spread a long scan over cores.
func (q *Query) Splittable() bool {
	prog, err := q.compile()
	if err != nil || prog.sel == nil || q.scatter == "" || q.scatterRefs != 1 {
		return false
	}
	cs := prog.sel
	if cs.sizeShortcut != "" {
		return false
	}
	if len(cs.order) > 0 {
		// Merge sorts the partials' rows by what the SELECT list keeps.
		return cs.orderDerivable() == nil
	}
	return cs.aggregate && len(cs.groupBy) == 0
}

// compile compiles the query once.
func (q *Query) compile() (*program, error) {
	q.once.Do(func() {
		c := &compiler{}
		p := &program{}
		if q.st.sel != nil {
			p.sel, q.progErr = compileSelect(c, nil, q.st.sel)
		} else {
			p.bare, q.progErr = c.compileExpr(&scope{}, q.st.bare)
		}
		p.slots = c.slots
		q.prog = p
	})
	return q.prog, q.progErr
}

// Partitioned tells the engine which regions are partitioned, for the rules
// Geode applies to them (at most one per query; ORDER BY derivable from the
// SELECT list).
type Partitioned func(region string) bool

// Check compiles the query and applies the partitioned-region rules; it
// reads no data.
func (q *Query) Check(partitioned Partitioned) error {
	prog, err := q.compile()
	if err != nil {
		return err
	}
	if partitioned == nil {
		return nil
	}
	var prs []string
	for _, r := range q.regions {
		if partitioned(r) {
			prs = append(prs, r)
		}
	}
	if len(prs) > 1 {
		return errorf("a query may reference at most one partitioned region; it names %s", strings.Join(prs, ", "))
	}
	if prog.sel != nil && q.scatter != "" && partitioned(q.scatter) && len(prog.sel.order) > 0 {
		return prog.sel.orderDerivable()
	}
	return nil
}

func (q *Query) newEnv(ctx context.Context, src Source, params []any) (*env, *program, error) {
	prog, err := q.compile()
	if err != nil {
		return nil, nil, err
	}
	vals := make([]Value, len(params))
	for i, p := range params {
		v, err := paramValue(p)
		if err != nil {
			return nil, nil, err
		}
		vals[i] = v
	}
	return &env{ctx: ctx, src: src, params: vals, slots: make([]Value, prog.slots), cache: map[any]any{}}, prog, nil
}

// paramValue accepts the Go types a caller may bind.
func paramValue(p any) (Value, error) {
	switch x := p.(type) {
	case nil, int64, float64, float32, string, bool, Temporal:
		return x, nil
	case int:
		return int64(x), nil
	case int32:
		return int64(x), nil
	case int16:
		return int64(x), nil
	case int8:
		return int64(x), nil
	}
	return nil, fmt.Errorf("%w: a bind value of Go type %T", ErrBind, p)
}

// Execute runs the query over src and returns its result.
func (q *Query) Execute(ctx context.Context, src Source, params []any, opt Options) (*Result, error) {
	e, prog, err := q.newEnv(ctx, src, params)
	if err != nil {
		return nil, err
	}
	if prog.sel == nil {
		return q.bareResult(e, prog, opt)
	}
	p, err := prog.sel.partial(e, nil, opt.MaxRows)
	if err != nil {
		return nil, wrapCtx(ctx, err)
	}
	rows, err := prog.sel.merge(e, []*Partial{p}, opt.MaxRows)
	if err != nil {
		return nil, wrapCtx(ctx, err)
	}
	return &Result{Rows: rows}, nil
}

// ExecutePartial runs the query over one share of the scatter region:
// shard serves the first iterator's scan, src everything else.
func (q *Query) ExecutePartial(ctx context.Context, src, shard Source, params []any, opt Options) (*Partial, error) {
	e, prog, err := q.newEnv(ctx, src, params)
	if err != nil {
		return nil, err
	}
	if prog.sel == nil {
		return nil, errors.New("oql: a bare expression has no partial execution")
	}
	p, err := prog.sel.partial(e, shard, opt.MaxRows)
	return p, wrapCtx(ctx, err)
}

// Merge combines the partials of every share into the result.
func (q *Query) Merge(ctx context.Context, parts []*Partial, params []any, opt Options) (*Result, error) {
	e, prog, err := q.newEnv(ctx, nil, params)
	if err != nil {
		return nil, err
	}
	if prog.sel == nil {
		return nil, errors.New("oql: a bare expression has no partials to merge")
	}
	rows, err := prog.sel.merge(e, parts, opt.MaxRows)
	if err != nil {
		return nil, err
	}
	return &Result{Rows: rows}, nil
}

// bareResult evaluates a bare-expression query: it must give a collection.
func (q *Query) bareResult(e *env, prog *program, opt Options) (*Result, error) {
	v, err := prog.bare(e)
	if err != nil {
		return nil, wrapCtx(e.ctx, err)
	}
	if !isCollection(v) {
		return nil, errorf("the query's result is a %s, not a collection; only collections can be returned", typeName(v))
	}
	var rows []Value
	err = iterate(e, v, func(el Value) (bool, error) {
		rows = append(rows, el)
		if opt.MaxRows > 0 && len(rows) > opt.MaxRows {
			return false, fmt.Errorf("%w: more than %d rows", ErrTooManyRows, opt.MaxRows)
		}
		return true, nil
	})
	if err != nil {
		return nil, wrapCtx(e.ctx, err)
	}
	return &Result{Rows: rows}, nil
}

// wrapCtx makes a cancelled or timed-out query say so.
func wrapCtx(ctx context.Context, err error) error {
	if err == nil {
		return nil
	}
	if ctx.Err() != nil && errors.Is(err, ctx.Err()) {
		return fmt.Errorf("query cancelled: %w", err)
	}
	return err
}
