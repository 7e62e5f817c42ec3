package oql

import (
	"context"
	"fmt"
	"math"
	"regexp"
	"strings"
	"time"
)

// evalFn is a compiled expression.
type evalFn func(e *env) (Value, error)

// env is the state of one execution as compiled expressions see it.
type env struct {
	ctx    context.Context
	src    Source
	params []Value
	// slots holds the current value of every iterator variable, outer
	// queries' first; a subquery's iterators follow its parent's.
	slots []Value
	// cache holds per-execution results: uncorrelated subqueries and LIKE
	// patterns that come from bind parameters.
	cache map[any]any
	// steps counts evaluations between context checks.
	steps int
}

// errorf returns an evaluation error.
func errorf(format string, args ...any) error {
	return &EvalError{Msg: fmt.Sprintf(format, args...)}
}

// check returns the context's error every few thousand calls, so a long scan
// stops soon after a timeout or a client that went away.
func (e *env) check() error {
	e.steps++
	if e.steps&1023 == 0 {
		return e.ctx.Err()
	}
	return nil
}

// scope is what names mean while compiling one SELECT: its iterator
// variables visible so far, and the enclosing query's scope.
type scope struct {
	parent *scope
	names  []string // iterator names in FROM order; "" for an anonymous one
	base   int      // slot index of names[0]
	// outerRefs is set when an expression compiled in this scope read a
	// slot of an enclosing scope: the subquery is correlated.
	outerRefs bool
}

// compileExpr compiles x in scope sc.
func (c *compiler) compileExpr(sc *scope, x expr) (evalFn, error) {
	switch x := x.(type) {
	case *litExpr:
		v := x.v
		return func(*env) (Value, error) { return v, nil }, nil
	case *paramExpr:
		n := x.n
		return func(e *env) (Value, error) {
			if n > len(e.params) {
				return nil, fmt.Errorf("%w: the query uses $%d but %d bind value(s) were given", ErrBind, n, len(e.params))
			}
			return e.params[n-1], nil
		}, nil
	case *regionExpr:
		v := regionValue{path: x.path}
		return func(*env) (Value, error) { return v, nil }, nil
	case *identExpr:
		return c.compileIdent(sc, x.name)
	case *memberExpr:
		return c.compileMember(sc, x)
	case *callExpr:
		recv, err := c.compileExpr(sc, x.x)
		if err != nil {
			return nil, err
		}
		args, err := c.compileList(sc, x.args)
		if err != nil {
			return nil, err
		}
		name := x.name
		return func(e *env) (Value, error) {
			r, err := recv(e)
			if err != nil {
				return nil, err
			}
			av := make([]Value, len(args))
			for i, a := range args {
				if av[i], err = a(e); err != nil {
					return nil, err
				}
			}
			return callMethod(e, r, name, av)
		}, nil
	case *indexExpr:
		base, err := c.compileExpr(sc, x.x)
		if err != nil {
			return nil, err
		}
		idx, err := c.compileExpr(sc, x.idx)
		if err != nil {
			return nil, err
		}
		return both(base, idx, indexValue), nil
	case *unaryExpr:
		return c.compileUnary(sc, x)
	case *binaryExpr:
		return c.compileBinary(sc, x)
	case *funcExpr:
		return c.compileFunc(sc, x)
	case *aggExpr:
		return nil, errorf("aggregate %s is only allowed in the SELECT list", exprString(x))
	case *setExpr:
		elems, err := c.compileList(sc, x.elems)
		if err != nil {
			return nil, err
		}
		return func(e *env) (Value, error) {
			out := make(List, len(elems))
			for i, el := range elems {
				v, err := el(e)
				if err != nil {
					return nil, err
				}
				out[i] = v
			}
			return out, nil
		}, nil
	case *subqueryExpr:
		sub, err := compileSelect(c, sc, x.q)
		if err != nil {
			return nil, err
		}
		return sub.asValue(), nil
	case *castExpr:
		return c.compileExpr(sc, x.x)
	}
	return nil, errorf("cannot compile %T", x)
}

func (c *compiler) compileList(sc *scope, xs []expr) ([]evalFn, error) {
	out := make([]evalFn, len(xs))
	for i, x := range xs {
		f, err := c.compileExpr(sc, x)
		if err != nil {
			return nil, err
		}
		out[i] = f
	}
	return out, nil
}

// slotFn reads iterator slot i.
func slotFn(i int) evalFn {
	return func(e *env) (Value, error) { return e.slots[i], nil }
}

// compileIdent resolves a bare name: an iterator variable of this or an
// enclosing query; otherwise an attribute of the one iterator in scope.
func (c *compiler) compileIdent(sc *scope, name string) (evalFn, error) {
	for s := sc; s != nil; s = s.parent {
		for i := len(s.names) - 1; i >= 0; i-- {
			if s.names[i] == name {
				if s != sc {
					markOuter(sc, s)
				}
				return slotFn(s.base + i), nil
			}
		}
	}
	// An implicit attribute of the single iterator in the nearest scope
	// that has any.
	for s := sc; s != nil; s = s.parent {
		switch len(s.names) {
		case 0:
			continue
		case 1:
			if s != sc {
				markOuter(sc, s)
			}
			slot := slotFn(s.base)
			return func(e *env) (Value, error) {
				v, _ := slot(e)
				return attribute(e, v, name)
			}, nil
		}
		return nil, errorf("the name %q cannot be resolved: it is not an iterator variable, and with %d iterators in scope it cannot be an attribute of one of them", name, len(s.names))
	}
	return nil, errorf("the name %q cannot be resolved (a region is written with a leading slash: /%s)", name, name)
}

// markOuter records that scopes from sc up to (not including) owner read
// a variable of owner: their subqueries are correlated.
func markOuter(sc, owner *scope) {
	for s := sc; s != nil && s != owner; s = s.parent {
		s.outerRefs = true
	}
}

func (c *compiler) compileMember(sc *scope, x *memberExpr) (evalFn, error) {
	base, err := c.compileExpr(sc, x.x)
	if err != nil {
		return nil, err
	}
	name := x.name
	return func(e *env) (Value, error) {
		b, err := base(e)
		if err != nil {
			return nil, err
		}
		return attribute(e, b, name)
	}, nil
}

func (c *compiler) compileUnary(sc *scope, x *unaryExpr) (evalFn, error) {
	if x.op == "NOT" {
		if pushed := negate(x.x); pushed != nil {
			return c.compileExpr(sc, pushed)
		}
	}
	arg, err := c.compileExpr(sc, x.x)
	if err != nil {
		return nil, err
	}
	if x.op == "NOT" {
		return func(e *env) (Value, error) {
			v, err := arg(e)
			if err != nil {
				return nil, err
			}
			switch b := v.(type) {
			case bool:
				return !b, nil
			case nil, undefinedValue:
				return Undefined, nil
			}
			return nil, errorf("NOT needs a boolean, got %s", typeName(v))
		}, nil
	}
	return func(e *env) (Value, error) {
		v, err := arg(e)
		if err != nil {
			return nil, err
		}
		switch n := v.(type) {
		case int64:
			return -n, nil
		case float64:
			return -n, nil
		case float32:
			return -n, nil
		}
		return nil, errorf("unary minus needs a number, got %s", typeName(v))
	}, nil
}

// negations maps an operator to the one NOT turns it into.
var negations = map[string]string{
	"=": "<>", "<>": "=", "<": ">=", ">=": "<", "<=": ">", ">": "<=", "LIKE": "NOT LIKE", "NOT LIKE": "LIKE",
}

// negate pushes NOT into x as Geode's compiler does (oql.md §4): comparisons
// and LIKE flip, AND/OR follow De Morgan, IS_DEFINED and IS_UNDEFINED swap.
// It returns nil where NOT stays a boolean negation.
func negate(x expr) expr {
	switch x := x.(type) {
	case *binaryExpr:
		if op, ok := negations[x.op]; ok {
			return &binaryExpr{op: op, l: x.l, r: x.r}
		}
		if x.op == "AND" || x.op == "OR" {
			op := "OR"
			if x.op == "OR" {
				op = "AND"
			}
			return &binaryExpr{op: op, l: negateOrWrap(x.l), r: negateOrWrap(x.r)}
		}
	case *funcExpr:
		switch x.name {
		case "IS_DEFINED":
			return &funcExpr{name: "IS_UNDEFINED", args: x.args}
		case "IS_UNDEFINED":
			return &funcExpr{name: "IS_DEFINED", args: x.args}
		}
	}
	return nil
}

func negateOrWrap(x expr) expr {
	if n := negate(x); n != nil {
		return n
	}
	return &unaryExpr{op: "NOT", x: x}
}

func (c *compiler) compileBinary(sc *scope, x *binaryExpr) (evalFn, error) {
	l, err := c.compileExpr(sc, x.l)
	if err != nil {
		return nil, err
	}
	r, err := c.compileExpr(sc, x.r)
	if err != nil {
		return nil, err
	}
	op := x.op
	switch op {
	case "AND", "OR":
		isAnd := op == "AND"
		return func(e *env) (Value, error) {
			a, err := l(e)
			if err != nil {
				return nil, err
			}
			ab, err := boolOperand(op, a)
			if err != nil {
				return nil, err
			}
			// Short-circuit: false AND x, true OR x.
			if isAnd && ab == triFalse {
				return false, nil
			}
			if !isAnd && ab == triTrue {
				return true, nil
			}
			b, err := r(e)
			if err != nil {
				return nil, err
			}
			bb, err := boolOperand(op, b)
			if err != nil {
				return nil, err
			}
			return combine3(isAnd, ab, bb), nil
		}, nil
	case "=", "<>", "<", "<=", ">", ">=":
		return both(l, r, func(_ *env, a, b Value) (Value, error) { return compareOp(op, a, b) }), nil
	case "LIKE", "NOT LIKE":
		negated := op == "NOT LIKE"
		var fixed *regexp.Regexp
		if lit, ok := x.r.(*litExpr); ok {
			if s, ok := lit.v.(string); ok {
				fixed = likeRegexp(s)
			}
		}
		return func(e *env) (Value, error) {
			a, err := l(e)
			if err != nil {
				return nil, err
			}
			re := fixed
			if re == nil {
				p, err := r(e)
				if err != nil {
					return nil, err
				}
				switch p := p.(type) {
				case string:
					re = e.likePattern(p)
				case nil, undefinedValue:
					return nil, nil
				default:
					return nil, errorf("LIKE needs a string pattern, got %s", typeName(p))
				}
			}
			v := like(a, re)
			if b, ok := v.(bool); ok && negated {
				return !b, nil
			}
			return v, nil
		}, nil
	case "IN":
		return both(l, r, in), nil
	case "+", "-", "*", "/", "%":
		return both(l, r, func(_ *env, a, b Value) (Value, error) { return arith(op, a, b) }), nil
	}
	return nil, errorf("unknown operator %s", op)
}

// both evaluates l, then r, and combines their values with f.
func both(l, r evalFn, f func(e *env, a, b Value) (Value, error)) evalFn {
	return func(e *env) (Value, error) {
		a, err := l(e)
		if err != nil {
			return nil, err
		}
		b, err := r(e)
		if err != nil {
			return nil, err
		}
		return f(e, a, b)
	}
}

// tri is a three-valued boolean: OQL's null and UNDEFINED are "unknown".
type tri int

const (
	triFalse tri = iota
	triTrue
	triUnknown
)

func boolOperand(op string, v Value) (tri, error) {
	switch b := v.(type) {
	case bool:
		if b {
			return triTrue, nil
		}
		return triFalse, nil
	case nil, undefinedValue:
		return triUnknown, nil
	}
	return 0, errorf("%s needs boolean operands, got %s", op, typeName(v))
}

// combine3 is three-valued AND (isAnd) or OR; unknown comes back as UNDEFINED.
func combine3(isAnd bool, a, b tri) Value {
	if isAnd {
		switch {
		case a == triFalse || b == triFalse:
			return false
		case a == triUnknown || b == triUnknown:
			return Undefined
		}
		return true
	}
	switch {
	case a == triTrue || b == triTrue:
		return true
	case a == triUnknown || b == triUnknown:
		return Undefined
	}
	return false
}

// compareOp applies a comparison operator with oql.md §4's rules, in order.
func compareOp(op string, a, b Value) (Value, error) {
	if a == nil || b == nil {
		switch op {
		case "=":
			return a == nil && b == nil, nil
		case "<>":
			return (a == nil) != (b == nil), nil
		}
		return Undefined, nil
	}
	_, au := a.(undefinedValue)
	_, bu := b.(undefinedValue)
	if au || bu {
		switch {
		case op == "=" && au && bu:
			return true, nil
		case op == "<>" && !(au && bu):
			return true, nil
		}
		return Undefined, nil
	}
	_, aBool := a.(bool)
	_, bBool := b.(bool)
	if aBool && bBool && op != "=" && op != "<>" {
		return nil, errorf("booleans compare only with = and <>, not %s", op)
	}
	c, ok := comparable3(a, b)
	if !ok {
		switch op {
		case "=":
			return equalValues(a, b), nil
		case "<>":
			return !equalValues(a, b), nil
		}
		return nil, errorf("cannot compare %s %s %s", typeName(a), op, typeName(b))
	}
	return holds(op, c), nil
}

// holds says whether the comparison op (= <> < <= > >=) holds between two
// values that compare as c (negative, zero, positive).
func holds(op string, c int) bool {
	switch op {
	case "=":
		return c == 0
	case "<>":
		return c != 0
	case "<":
		return c < 0
	case "<=":
		return c <= 0
	case ">":
		return c > 0
	}
	return c >= 0
}

// arith applies + - * / % with Java's binary numeric promotion: two
// integers stay integers (division truncates), a double makes a double, a
// float with an integer or float makes a float.
func arith(op string, a, b Value) (Value, error) {
	if !isNumber(a) || !isNumber(b) {
		return nil, errorf("arithmetic %s needs numbers, got %s and %s", op, typeName(a), typeName(b))
	}
	ai, aInt := a.(int64)
	bi, bInt := b.(int64)
	if aInt && bInt {
		switch op {
		case "+":
			return ai + bi, nil
		case "-":
			return ai - bi, nil
		case "*":
			return ai * bi, nil
		case "/", "%":
			if bi == 0 {
				return nil, errorf("division by zero")
			}
			if op == "/" {
				return ai / bi, nil
			}
			return ai % bi, nil
		}
	}
	_, a64 := a.(float64)
	_, b64 := b.(float64)
	af, bf := toFloat(a), toFloat(b)
	var r float64
	switch op {
	case "+":
		r = af + bf
	case "-":
		r = af - bf
	case "*":
		r = af * bf
	case "/":
		r = af / bf
	case "%":
		r = math.Mod(af, bf)
	}
	if !a64 && !b64 {
		return float32(r), nil
	}
	return r, nil
}

// likeRegexp compiles a LIKE pattern: % any run (newlines too), _ one
// character, a backslash escapes the next character; the match is whole.
func likeRegexp(p string) *regexp.Regexp {
	var b strings.Builder
	b.WriteString(`(?s)\A`)
	rs := []rune(p)
	for i := 0; i < len(rs); i++ {
		switch r := rs[i]; {
		case r == '\\' && i+1 < len(rs):
			i++
			b.WriteString(regexp.QuoteMeta(string(rs[i])))
		case r == '%':
			b.WriteString(`.*`)
		case r == '_':
			b.WriteString(`.`)
		default:
			b.WriteString(regexp.QuoteMeta(string(r)))
		}
	}
	b.WriteString(`\z`)
	return regexp.MustCompile(b.String())
}

// likePattern compiles a pattern that came from a bind value, once per
// execution.
func (e *env) likePattern(p string) *regexp.Regexp {
	key := likeKey(p)
	if re, ok := e.cache[key].(*regexp.Regexp); ok {
		return re
	}
	re := likeRegexp(p)
	e.cache[key] = re
	return re
}

type likeKey string

// like matches a value: null gives null, a non-string false, and UNDEFINED
// is matched as the text "UNDEFINED" (Geode does so; oql.md §5).
func like(v Value, re *regexp.Regexp) Value {
	switch s := v.(type) {
	case nil:
		return nil
	case undefinedValue:
		return re.MatchString("UNDEFINED")
	case string:
		return re.MatchString(s)
	}
	return false
}

// in is x IN collection.
func in(e *env, x, coll Value) (Value, error) {
	switch coll.(type) {
	case nil, undefinedValue:
		return Undefined, nil
	}
	if !isCollection(coll) {
		return nil, errorf("IN needs a collection on its right, got %s", typeName(coll))
	}
	if _, ok := x.(undefinedValue); ok {
		return false, nil
	}
	found := false
	err := iterate(e, coll, func(el Value) (bool, error) {
		if v, err := compareOp("=", x, el); err == nil && v == true {
			found = true
			return false, nil
		}
		return true, nil
	})
	return found, err
}

// isCollection reports whether v can be iterated as a collection.
func isCollection(v Value) bool {
	switch v.(type) {
	case Array, List, regionValue, regionCollection:
		return true
	}
	return false
}

// iterate calls fn with every element of a collection; a null or UNDEFINED
// value has none and any other single value is one element (oql.md §3).
func iterate(e *env, v Value, fn func(Value) (bool, error)) error {
	switch c := v.(type) {
	case nil, undefinedValue:
		return nil
	case List:
		for _, el := range c {
			if more, err := fn(el); err != nil || !more {
				return err
			}
		}
		return nil
	case Array:
		for _, el := range c.elements() {
			if more, err := fn(el); err != nil || !more {
				return err
			}
		}
		return nil
	case regionValue:
		return scanRegion(e, c.path, "values", fn)
	case regionCollection:
		return scanRegion(e, c.path, c.kind, fn)
	}
	_, err := fn(v)
	return err
}

// scanRegion iterates a region's values, keys or entries.
func scanRegion(e *env, path, kind string, fn func(Value) (bool, error)) error {
	var ferr error
	err := e.src.Scan(e.ctx, path, func(key string, raw []byte) bool {
		if ferr = e.check(); ferr != nil {
			return false
		}
		var v Value
		switch kind {
		case "keys":
			v = key
		case "entries":
			v = Entry{Key: key, Value: storedValue(e.src, raw)}
		default:
			v = storedValue(e.src, raw)
		}
		more, err := fn(v)
		if err != nil {
			ferr = err
			return false
		}
		return more
	})
	if ferr != nil {
		return ferr
	}
	return err
}

func (c *compiler) compileFunc(sc *scope, x *funcExpr) (evalFn, error) {
	args, err := c.compileList(sc, x.args)
	if err != nil {
		return nil, err
	}
	switch x.name {
	case "IS_DEFINED", "IS_UNDEFINED":
		want := x.name == "IS_UNDEFINED"
		return func(e *env) (Value, error) {
			v, err := args[0](e)
			if err != nil {
				return nil, err
			}
			_, u := v.(undefinedValue)
			return u == want, nil
		}, nil
	case "NVL":
		return func(e *env) (Value, error) {
			v, err := args[0](e)
			if err != nil || v != nil {
				return v, err
			}
			return args[1](e)
		}, nil
	case "ELEMENT":
		return func(e *env) (Value, error) {
			v, err := args[0](e)
			if err != nil {
				return nil, err
			}
			var els []Value
			if err := iterate(e, v, func(el Value) (bool, error) {
				els = append(els, el)
				return len(els) < 2, nil
			}); err != nil {
				return nil, err
			}
			if len(els) != 1 || !isCollection(v) {
				return nil, errorf("ELEMENT needs a collection of exactly one element")
			}
			return els[0], nil
		}, nil
	case "TO_DATE":
		layout := javaLayout(x.args[1].(*litExpr).v.(string))
		return func(e *env) (Value, error) {
			v, err := args[0](e)
			if err != nil {
				return nil, err
			}
			s, ok := v.(string)
			if !ok {
				return nil, errorf("TO_DATE needs a string, got %s", typeName(v))
			}
			t, err := time.ParseInLocation(layout, s, time.UTC)
			if err != nil {
				return nil, errorf("TO_DATE: %q does not match the format", s)
			}
			return Temporal{T: t, Kind: "date"}, nil
		}, nil
	}
	return nil, errorf("unknown function %s", x.name)
}

// javaLayout translates the common SimpleDateFormat letters to a Go layout.
func javaLayout(f string) string {
	r := strings.NewReplacer("yyyy", "2006", "yy", "06", "MMMM", "January", "MMM", "Jan", "MM", "01",
		"dd", "02", "HH", "15", "hh", "03", "mm", "04", "ss", "05", "SSS", "000", "a", "PM", "EEE", "Mon")
	return r.Replace(f)
}
