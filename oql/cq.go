package oql

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"unsafe"

	"github.com/tidwall/gjson"
)

// ErrNotContinuous marks a query that a continuous query cannot evaluate
// entry by entry: a watch answers it with a 400 naming the reason.
var ErrNotContinuous = errors.New("not a continuous query")

// CQ is a query compiled to be evaluated against one entry at a time, as
// Geode's continuous queries are: a watch tests every change of its region
// with Matches instead of rerunning the query. An entry matches iff the
// query, run over a region holding only that entry, returns a row.
//
// A CQ is safe for concurrent use. Each Matches call takes an evaluation
// state from a pool, so a watch that tests many entries allocates next to
// nothing per entry; what a state caches (LIKE patterns from bind values,
// subqueries that read no region) depends only on the query and its binds,
// so it stays valid from one entry to the next.
type CQ struct {
	sel    *compiledSelect
	region string // without the leading slash
	kind   string // what the FROM iterator yields: values, keys or entries
	params []Value
	slots  int
	envs   sync.Pool
}

// maxCachedPatterns bounds what one pooled state caches: LIKE patterns read
// from the entries themselves ('x' LIKE o.pattern) would otherwise pile up
// over a watch's life.
const maxCachedPatterns = 64

// NewCQ checks that q can be evaluated per entry, binds params ($1, $2...,
// values as Bind produces them) and compiles it. A CQ is a SELECT * (or
// SELECT of its one iterator variable) over one region, its values, keySet
// or entrySet, with an optional WHERE that reads nothing but the entry:
// anything else is refused with an error wrapping ErrNotContinuous that
// says why. A query that does not compile (an unresolvable name, an
// aggregate in WHERE) fails with the compiler's *EvalError; a wrong number
// of bind values, or a value of a Go type a query cannot bind, with an
// error wrapping ErrBind.
func NewCQ(q *Query, params []any) (*CQ, error) {
	region, kind, err := continuous(q)
	if err != nil {
		return nil, err
	}
	prog, err := q.compile()
	if err != nil {
		return nil, err
	}
	if err := q.CheckBinds("the continuous query", len(params)); err != nil {
		return nil, err
	}
	vals := make([]Value, len(params))
	for i, p := range params {
		if vals[i], err = paramValue(p); err != nil {
			return nil, err
		}
	}
	c := &CQ{
		sel:    prog.sel,
		region: strings.TrimPrefix(region, "/"),
		kind:   kind,
		params: vals,
		slots:  prog.slots,
	}
	c.envs.New = func() any {
		return &env{ctx: context.Background(), src: noRegions{}, params: c.params, slots: make([]Value, c.slots), cache: map[any]any{}}
	}
	return c, nil
}

// continuous applies the rules of NewCQ to the parsed query and returns
// the FROM region's path and what its iterator yields.
func continuous(q *Query) (region, kind string, err error) {
	refuse := func(format string, args ...any) (string, string, error) {
		return "", "", fmt.Errorf("%w: %s", ErrNotContinuous, fmt.Sprintf(format, args...))
	}
	s := q.st.sel
	if s == nil {
		return refuse("a bare expression is not a SELECT over a region")
	}
	if len(s.from) != 1 {
		return refuse("joins: FROM has %d iterators; a continuous query iterates one region", len(s.from))
	}
	it := s.from[0]
	region = regionOf(it.x)
	if region == "" {
		return refuse("FROM %s is not a region path (/r, /r.values, /r.keySet or /r.entrySet)", exprString(it.x))
	}
	kind = iterKind(it.x)
	switch {
	case s.distinct:
		return refuse("DISTINCT compares rows with each other; a continuous query sees one entry at a time")
	case slices.ContainsFunc(s.proj, func(p projection) bool { return containsAgg(p.x) }):
		return refuse("aggregates need every row; a continuous query sees one entry at a time")
	case len(s.groupBy) > 0:
		return refuse("GROUP BY needs every row; a continuous query sees one entry at a time")
	case len(s.orderBy) > 0:
		return refuse("ORDER BY sorts rows; a continuous query sees one entry at a time")
	case s.limit != nil:
		return refuse("LIMIT counts rows; a continuous query sees one entry at a time")
	}
	if !s.star {
		if len(s.proj) != 1 || s.proj[0].alias != "" || it.name == "" || !isName(s.proj[0].x, it.name) {
			return refuse("the projection must be * or the iterator variable alone (SELECT * FROM /r r): a continuous query sends whole entries")
		}
	}
	if r := regionRead(s.where); r != "" {
		return refuse("WHERE reads region %s (directly or in a subquery); a continuous query reads nothing but the entry", r)
	}
	return region, kind, nil
}

// iterKind says what a FROM expression that regionOf accepts iterates.
func iterKind(x expr) string {
	name := ""
	switch x := x.(type) {
	case *memberExpr:
		name = x.name
	case *callExpr:
		name = x.name
	}
	switch name {
	case "keySet", "keys":
		return "keys"
	case "entrySet", "entries":
		return "entries"
	}
	return "values"
}

// regionRead returns the first region path x reads, subqueries included,
// "" when it reads none.
func regionRead(x expr) string {
	found := ""
	var visit func(x expr)
	visitSelect := func(s *selectStmt) {
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
		visit(s.limit)
	}
	visit = func(x expr) {
		walk(x, func(e expr) {
			switch e := e.(type) {
			case *regionExpr:
				if found == "" {
					found = e.path
				}
			case *subqueryExpr:
				visitSelect(e.q)
			}
		})
	}
	visit(x)
	return found
}

// Region is the FROM region's name without the leading slash: what a watch
// subscribes to and authorizes.
func (c *CQ) Region() string { return c.region }

// Matches reports whether the entry (its key and stored JSON value)
// satisfies the WHERE clause: true without one. UNDEFINED and null drop the
// entry as they drop a row, including the exception of a WHERE that is one
// <> comparison (oql.md §4). An error is what running the query over the
// entry would fail with (a relational operator between a string and a
// number, arithmetic over a missing member).
func (c *CQ) Matches(key string, value json.RawMessage) (bool, error) {
	if c.sel.where == nil {
		return true, nil
	}
	e := c.envs.Get().(*env)
	defer c.envs.Put(e)
	if len(e.cache) > maxCachedPatterns {
		clear(e.cache)
	}
	var v Value
	switch c.kind {
	case "keys":
		v = key
	case "entries":
		v = Entry{Key: key, Value: entryValue(value)}
	default:
		v = entryValue(value)
	}
	e.slots[c.sel.sc.base] = v
	ok, err := c.sel.keep(e)
	clear(e.slots) // the pool must not keep the entry alive
	if err != nil {
		return false, fmt.Errorf("continuous query on key %q: %w", key, err)
	}
	return ok, nil
}

// entryValue is FromJSON read in place: Matches keeps nothing of the value
// past the call (an error message copies what it quotes).
func entryValue(raw json.RawMessage) Value {
	if len(raw) == 0 {
		return FromJSON(raw)
	}
	return fromResult(gjson.Parse(unsafe.String(&raw[0], len(raw))))
}

// noRegions is the Source of a CQ's evaluation: NewCQ refused every query
// that reads a region, so reaching it is a bug, reported as an error
// rather than a panic.
type noRegions struct{}

var errNoRegions = errors.New("oql: a continuous query reads no region")

func (noRegions) Scan(context.Context, string, func(string, []byte) bool) error {
	return errNoRegions
}
func (noRegions) Get(context.Context, string, string) ([]byte, bool, error) {
	return nil, false, errNoRegions
}
func (noRegions) Size(context.Context, string) (int, error) { return 0, errNoRegions }
