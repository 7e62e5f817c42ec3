package oql

import (
	"strconv"
	"unsafe"

	"github.com/kvnode/kvnode/oql/internal/member"
)

// A prefilter decides a row from its stored text, before the row becomes
// a value: an unindexed predicate over a million entries otherwise makes a
// million Objects and a million boxed numbers, which (with the member
// lookups) were most of an unindexed COUNT's time (docs/performance.md,
// "COUNT with a predicate"). It takes one form, the common one: the whole
// WHERE is one comparison of a member of the only iterator with a number
// (a literal or a bind value), as in `o.totalPrice > $1`. It decides only
// where the member is a JSON number, which is where the comparison's
// answer is a plain numeric one; anything else (absent, null, a string, a
// key with escapes) it leaves to WHERE itself, so a query answers exactly
// as without it.
type prefilter struct {
	name    member.Name
	op      string // as written with the member on the left
	operand evalFn // the number: a literal or a bind value
}

// compilePrefilter returns the prefilter of a SELECT over one iterator
// whose WHERE is w, or nil when w has another form.
func (c *compiler) compilePrefilter(sc *scope, s *selectStmt, w expr) (*prefilter, error) {
	b, ok := w.(*binaryExpr)
	if !ok || len(s.from) != 1 {
		return nil, nil
	}
	flip := map[string]string{"=": "=", "<>": "<>", "<": ">", "<=": ">=", ">": "<", ">=": "<="}
	if _, ok := flip[b.op]; !ok {
		return nil, nil
	}
	name, other, op := iteratorMember(sc, s.from[0].name, b.l), b.r, b.op
	if name == "" {
		name, other, op = iteratorMember(sc, s.from[0].name, b.r), b.l, flip[b.op]
	}
	if name == "" {
		return nil, nil
	}
	switch o := other.(type) {
	case *litExpr:
		if !isNumber(o.v) {
			return nil, nil
		}
	case *paramExpr:
	default:
		return nil, nil
	}
	f, err := c.compileExpr(sc, other)
	if err != nil {
		return nil, err
	}
	return &prefilter{name: member.NewName(name), op: op, operand: f}, nil
}

// iteratorMember is the member name x reads of the iterator named iter
// (o.name, or a bare name that is the single iterator's attribute), "" if
// x is something else.
func iteratorMember(sc *scope, iter string, x expr) string {
	switch x := x.(type) {
	case *memberExpr:
		if id, ok := x.x.(*identExpr); ok && iter != "" && id.name == iter {
			return x.name
		}
	case *identExpr:
		// compileIdent makes a bare name the attribute of the single
		// iterator when no variable in scope has that name.
		if x.name == iter {
			return ""
		}
		for s := sc.parent; s != nil; s = s.parent {
			for _, n := range s.names {
				if n == x.name {
					return ""
				}
			}
		}
		return x.name
	}
	return ""
}

// decide says whether WHERE keeps the row whose stored value is raw, and
// whether it could tell without building the row.
func (p *prefilter) decide(e *env, raw string) (keep, decided bool) {
	operand, err := p.operand(e)
	if err != nil || !isNumber(operand) {
		return false, false
	}
	text, found, sure := p.name.Find(raw)
	if !sure || !found || text == "" || (text[0] != '-' && (text[0] < '0' || text[0] > '9')) {
		return false, false
	}
	var c int
	if n, ok := parseInteger(text); ok {
		c = compareNumbers(n, operand)
	} else {
		f, _ := strconv.ParseFloat(text, 64) // as fromText
		c = compareNumbers(f, operand)
	}
	return holds(p.op, c), true
}

// scanPrefiltered is the first iterator's scan of the values of the region
// at path when the SELECT has a prefilter and e's source keeps stored
// text (ImmutableSource): rows the prefilter rejects are skipped unbuilt,
// rows it keeps go to fn without WHERE, and the rest take rest (WHERE,
// then fn).
func (cs *compiledSelect) scanPrefiltered(e, it *env, path string, rest, fn func() (bool, error)) (bool, error) {
	more := true
	var ferr error
	err := it.src.Scan(it.ctx, path, func(_ string, raw []byte) bool {
		if ferr = it.check(); ferr != nil {
			return false
		}
		var keep, decided bool
		if len(raw) > 0 {
			keep, decided = cs.prefilter.decide(e, unsafe.String(&raw[0], len(raw)))
		}
		if decided && !keep {
			return true
		}
		e.slots[cs.sc.base] = storedValue(it.src, raw)
		if decided {
			more, ferr = fn()
		} else {
			more, ferr = rest()
		}
		return ferr == nil && more
	})
	if ferr != nil {
		return false, ferr
	}
	return more, err
}

// parseInteger is the int64 a JSON number's text holds, and false when it
// has a fraction or an exponent or does not fit (without building
// strconv's error for a fraction, the common case).
func parseInteger(text string) (int64, bool) {
	if !isInteger(text) {
		return 0, false
	}
	n, err := strconv.ParseInt(text, 10, 64)
	return n, err == nil
}

// regionValues is the path of the region whose values coll iterates, if
// it is one.
func regionValues(coll Value) (string, bool) {
	switch c := coll.(type) {
	case regionValue:
		return c.path, true
	case regionCollection:
		return c.path, c.kind == "values"
	}
	return "", false
}
