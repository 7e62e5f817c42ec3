package oql

import (
	"context"
	"strings"
	"unicode/utf8"

	"github.com/kvnode/kvnode/index"
)

// IndexedSource is a Source that has secondary indexes (package index) on
// some regions. The planner uses one for the first FROM iterator of a
// SELECT when a conjunct of WHERE compares an indexed member path with a
// literal or a bind value; WHERE is still evaluated on every row the index
// yields, so an index only ever saves work.
type IndexedSource interface {
	Source
	// Indexes lists the region's indexes.
	Indexes(region string) []index.Def
	// ScanIndex calls fn with every entry whose indexed value lies in one
	// of the ranges; ok false means the index cannot serve (the engine
	// scans the region instead).
	ScanIndex(ctx context.Context, region, name string, ranges []index.Range, fn func(key string, value []byte) bool) (ok bool, err error)
}

// indexCandidate is a WHERE conjunct an index on path could serve, or
// (op "RANGE") the conjuncts bounding path from below and above, merged.
type indexCandidate struct {
	path []string
	op   string   // = < <= > >= IN LIKE RANGE
	args []evalFn // the operand(s): constant over the query's rows
	// RANGE: the bounds; a nil fn is an open end.
	lo, hi         evalFn
	loIncl, hiIncl bool
}

// planIndexes finds the conjuncts of WHERE that an index of the first
// iterator's region could serve: path op operand, where path is a member
// path of the first iterator and the operand a literal or bind parameter
// (a SET of them for IN, a pattern with a plain prefix for LIKE).
// Equality and IN come first: they select the fewest rows.
func (cs *compiledSelect) planIndexes(c *compiler) {
	s := cs.stmt
	if s.where == nil || len(s.from) == 0 || !isValuesIterator(s.from[0].x) {
		return // keySet and entrySet iterate keys or entries, not values
	}
	var conjuncts []expr
	var split func(x expr)
	split = func(x expr) {
		if b, ok := x.(*binaryExpr); ok && b.op == "AND" {
			split(b.l)
			split(b.r)
			return
		}
		conjuncts = append(conjuncts, x)
	}
	split(s.where)
	var eq, rng []indexCandidate
	for _, x := range conjuncts {
		b, ok := x.(*binaryExpr)
		if !ok {
			continue
		}
		op, r := b.op, b.r
		path := cs.iterPath(b.l)
		if path == nil && (op == "<" || op == "<=" || op == ">" || op == ">=" || op == "=") {
			// operand op path: flip it.
			path, r = cs.iterPath(b.r), b.l
			op = map[string]string{"<": ">", "<=": ">=", ">": "<", ">=": "<=", "=": "="}[op]
		}
		if path == nil {
			continue
		}
		var args []expr
		switch op {
		case "=", "<", "<=", ">", ">=", "LIKE":
			if !isConstant(r) {
				continue
			}
			args = []expr{r}
		case "IN":
			set, ok := r.(*setExpr)
			if !ok {
				continue
			}
			allConst := true
			for _, e := range set.elems {
				allConst = allConst && isConstant(e)
			}
			if !allConst {
				continue
			}
			args = set.elems
		default:
			continue
		}
		fns, err := c.compileList(cs.sc, args)
		if err != nil {
			continue
		}
		cand := indexCandidate{path: path, op: op, args: fns}
		if op == "=" || op == "IN" {
			eq = append(eq, cand)
		} else {
			rng = append(rng, cand)
		}
	}
	cs.indexable = append(eq, mergeRanges(rng)...)
}

// mergeRanges combines the lower and upper bounds on one path (o.id >= $1
// AND o.id < $2) into one RANGE candidate, so the index reads just the
// rows between them. LIKE candidates stay as they are.
func mergeRanges(cands []indexCandidate) []indexCandidate {
	var out []indexCandidate
	byPath := map[string]int{}
	for _, c := range cands {
		if c.op == "LIKE" {
			out = append(out, c)
			continue
		}
		k := strings.Join(c.path, "\x00")
		i, ok := byPath[k]
		if !ok {
			byPath[k] = len(out)
			out = append(out, indexCandidate{path: c.path, op: "RANGE"})
			i = len(out) - 1
		}
		r := &out[i]
		switch c.op {
		case ">", ">=":
			if r.lo == nil {
				r.lo, r.loIncl = c.args[0], c.op == ">="
			}
		case "<", "<=":
			if r.hi == nil {
				r.hi, r.hiIncl = c.args[0], c.op == "<="
			}
		}
	}
	return out
}

// isConstant reports whether x is a literal or a bind parameter.
func isConstant(x expr) bool {
	switch x.(type) {
	case *litExpr, *paramExpr:
		return true
	}
	return false
}

// iterPath returns x as a member path of the first iterator (o.a.b, or
// a.b for the attribute of a lone iterator), nil otherwise. Names that
// read as a method (o.items.size) are not member paths.
func (cs *compiledSelect) iterPath(x expr) []string {
	var rev []string
	for {
		switch e := x.(type) {
		case *memberExpr:
			if isNoArgMethod(e.name) {
				return nil
			}
			rev = append(rev, e.name)
			x = e.x
			continue
		case *identExpr:
			first := cs.stmt.from[0].name
			switch {
			case first != "" && e.name == first:
			case len(cs.stmt.from) == 1 && !cs.isVisibleName(e.name) && !isNoArgMethod(e.name):
				rev = append(rev, e.name) // implicit attribute of the lone iterator
			default:
				return nil
			}
			if len(rev) == 0 {
				return nil
			}
			path := make([]string, len(rev))
			for i, n := range rev {
				path[len(rev)-1-i] = n
			}
			return path
		}
		return nil
	}
}

// isVisibleName reports whether name is an iterator variable here or in
// an enclosing query (then it is not an implicit attribute).
func (cs *compiledSelect) isVisibleName(name string) bool {
	for s := cs.sc; s != nil; s = s.parent {
		for _, n := range s.names {
			if n == name {
				return true
			}
		}
	}
	return false
}

// indexScan tries to iterate the first iterator through an index. It
// returns used false when no index serves (the caller scans).
func (cs *compiledSelect) indexScan(e, it *env, fn func(Value) (bool, error)) (used bool, err error) {
	src, ok := it.src.(IndexedSource)
	if !ok || len(cs.indexable) == 0 {
		return false, nil
	}
	path := regionOf(cs.stmt.from[0].x)
	defs := src.Indexes(path)
	if len(defs) == 0 {
		return false, nil
	}
	for _, cand := range cs.indexable {
		name := ""
		for _, d := range defs {
			if pathEqual(d.Path, cand.path) {
				name = d.Name
				break
			}
		}
		if name == "" {
			continue
		}
		ranges, ok, err := cand.ranges(e)
		if err != nil {
			return false, err
		}
		if !ok {
			continue
		}
		var ferr error
		served, err := src.ScanIndex(e.ctx, path, name, ranges, func(key string, raw []byte) bool {
			if ferr = it.check(); ferr != nil {
				return false
			}
			more, err := fn(storedValue(src, raw))
			if err != nil {
				ferr = err
				return false
			}
			return more
		})
		if ferr != nil {
			return true, ferr
		}
		if err != nil {
			return true, err
		}
		if served {
			return true, nil
		}
	}
	return false, nil
}

func pathEqual(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// ranges evaluates the candidate's operands into index ranges; ok is false
// when the index cannot answer exactly the rows the predicate could keep
// (a null or UNDEFINED operand matches null members, which are not
// indexed; a LIKE pattern without a plain prefix).
func (c indexCandidate) ranges(e *env) ([]index.Range, bool, error) {
	vals := make([]Value, len(c.args))
	for i, a := range c.args {
		v, err := a(e)
		if err != nil {
			return nil, false, err
		}
		if _, scalar := index.KeyOf(v); !scalar {
			return nil, false, nil
		}
		vals[i] = v
	}
	switch c.op {
	case "=":
		return []index.Range{index.Point(vals[0])}, true, nil
	case "RANGE":
		r := index.Range{LoIncl: c.loIncl, HiIncl: c.hiIncl}
		for _, b := range []struct {
			fn  evalFn
			dst *any
		}{{c.lo, &r.Lo}, {c.hi, &r.Hi}} {
			if b.fn == nil {
				continue
			}
			v, err := b.fn(e)
			if err != nil {
				return nil, false, err
			}
			if _, scalar := index.KeyOf(v); !scalar {
				return nil, false, nil
			}
			*b.dst = v
		}
		lo, _ := index.KeyOf(r.Lo)
		hi, _ := index.KeyOf(r.Hi)
		if r.Lo != nil && r.Hi != nil && !index.SameKind(lo, hi) {
			// o.x > 5 AND o.x < 'a' matches nothing, but a scan would
			// say so (or fail) row by row: let it.
			return nil, false, nil
		}
		return []index.Range{r}, true, nil
	case "IN":
		out := make([]index.Range, len(vals))
		for i, v := range vals {
			out[i] = index.Point(v)
		}
		return out, true, nil
	case "LIKE":
		p, ok := vals[0].(string)
		if !ok {
			return nil, false, nil
		}
		lo, hi, ok := prefixRange(p)
		if !ok {
			return nil, false, nil
		}
		return []index.Range{{Lo: lo, LoIncl: true, Hi: hi}}, true, nil
	}
	return nil, false, nil
}

// prefixRange turns a LIKE pattern "abc%..." into the string range
// [abc, abd): every string with that prefix, in Java's order.
func prefixRange(p string) (lo, hi string, ok bool) {
	i := strings.IndexAny(p, `%_\`)
	if i <= 0 || p[i] != '%' {
		return "", "", false
	}
	prefix := p[:i]
	if strings.HasPrefix("UNDEFINED", prefix) {
		// A missing member matches LIKE as the text UNDEFINED (oql.md §5),
		// and missing members are not in the index.
		return "", "", false
	}
	last, size := utf8.DecodeLastRuneInString(prefix)
	next := last + 1
	if last >= 0xD7FF || next > 0xFFFF {
		// Incrementing would cross the surrogate range or leave the BMP,
		// where UTF-16 order and rune order part ways.
		return "", "", false
	}
	return prefix, prefix[:len(prefix)-size] + string(next), true
}

// IndexPath checks an index definition as Geode writes one — an
// expression over a FROM clause, e.g. "o.customerId" over "/orders o" —
// and returns the region path and the member path it indexes. Only member
// paths of the one iterator can be indexed.
func IndexPath(expression, from string) (region string, path []string, err error) {
	q, err := Parse("SELECT " + expression + " FROM " + from)
	if err != nil {
		return "", nil, err
	}
	s := q.st.sel
	if s == nil || len(s.from) != 1 || len(s.proj) != 1 || s.where != nil || s.distinct || s.limit != nil ||
		len(s.orderBy) > 0 || len(s.groupBy) > 0 || s.proj[0].alias != "" {
		return "", nil, errorf("an index is one expression over one region: expression %q, from %q", expression, from)
	}
	region = regionOf(s.from[0].x)
	if region == "" || !isValuesIterator(s.from[0].x) {
		return "", nil, errorf("the FROM clause of an index must name one region, as in \"/orders o\"; got %q", from)
	}
	cs := &compiledSelect{stmt: s, sc: &scope{names: []string{s.from[0].name}}}
	path = cs.iterPath(s.proj[0].x)
	if path == nil {
		return "", nil, errorf("the indexed expression must be a member path of the iterator, such as o.customerId; got %q", expression)
	}
	return region, path, nil
}

// isValuesIterator reports whether an iterator over a region yields its
// values (/r or /r.values), not its keys or entries.
func isValuesIterator(x expr) bool {
	switch x := x.(type) {
	case *regionExpr:
		return true
	case *memberExpr:
		return x.name == "values"
	}
	return false
}
