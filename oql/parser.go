package oql

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
)

// parser is a recursive-descent parser over the token slice. Operator
// precedence, loosest first, is Geode's grammar: OR; AND; = <> != LIKE;
// < <= > >=; + -; * / % MOD; IN; unary NOT and -; postfix . -> [ ] ( ).
type parser struct {
	toks []token
	pos  int
	// depth bounds nesting, so a hostile query cannot exhaust the stack.
	depth int
}

// maxDepth is the deepest nesting of expressions a query may have.
const maxDepth = 200

// statement is a parsed query text.
type statement struct {
	trace   bool
	hints   []string
	imports []string
	sel     *selectStmt // nil for a bare-expression query
	bare    expr
}

func (st *statement) print(b *strings.Builder) {
	if st.trace {
		b.WriteString("<TRACE> ")
	}
	if len(st.hints) > 0 {
		b.WriteString("<HINT ")
		for i, h := range st.hints {
			if i > 0 {
				b.WriteString(", ")
			}
			b.WriteString(quoteString(h))
		}
		b.WriteString("> ")
	}
	for _, imp := range st.imports {
		b.WriteString("IMPORT " + imp + "; ")
	}
	if st.sel != nil {
		st.sel.print(b)
	} else {
		st.bare.print(b)
	}
}

// parse parses a whole query text.
func parse(text string) (*statement, error) {
	toks, err := lex(text)
	if err != nil {
		return nil, err
	}
	p := &parser{toks: toks}
	st := &statement{}
	if p.isOp("<") && p.peekAt(1).kind == tKeyword && p.peekAt(1).text == "TRACE" {
		p.pos += 2
		if err := p.expectOp(">"); err != nil {
			return nil, err
		}
		st.trace = true
	}
	if p.isOp("<") && p.peekAt(1).kind == tKeyword && p.peekAt(1).text == "HINT" {
		p.pos += 2
		for {
			t := p.peek()
			if t.kind != tString {
				return nil, p.errAt(t, "expected an index name in quotes after HINT, found %v", t)
			}
			p.pos++
			st.hints = append(st.hints, t.text)
			if !p.acceptOp(",") {
				break
			}
		}
		if err := p.expectOp(">"); err != nil {
			return nil, err
		}
	}
	for p.isKeyword("IMPORT") {
		p.pos++
		name, err := p.qualifiedName()
		if err != nil {
			return nil, err
		}
		if p.acceptKeyword("AS") {
			alias, err := p.name()
			if err != nil {
				return nil, err
			}
			name += " AS " + alias
		}
		if err := p.expectOp(";"); err != nil {
			return nil, err
		}
		st.imports = append(st.imports, name)
	}
	if p.isKeyword("SELECT") {
		st.sel, err = p.selectStmt()
	} else {
		st.bare, err = p.expr()
	}
	if err != nil {
		return nil, err
	}
	p.acceptOp(";")
	if t := p.peek(); t.kind != tEOF {
		return nil, p.errAt(t, "unexpected %v", t)
	}
	return st, nil
}

func (p *parser) peek() token { return p.toks[p.pos] }
func (p *parser) peekAt(n int) token {
	if p.pos+n < len(p.toks) {
		return p.toks[p.pos+n]
	}
	return p.toks[len(p.toks)-1]
}
func (p *parser) isOp(op string) bool {
	t := p.peek()
	return t.kind == tOp && t.text == op
}
func (p *parser) isKeyword(kw string) bool {
	t := p.peek()
	return t.kind == tKeyword && t.text == kw
}
func (p *parser) acceptOp(op string) bool {
	if p.isOp(op) {
		p.pos++
		return true
	}
	return false
}
func (p *parser) acceptKeyword(kw string) bool {
	if p.isKeyword(kw) {
		p.pos++
		return true
	}
	return false
}
func (p *parser) expectOp(op string) error {
	if !p.acceptOp(op) {
		t := p.peek()
		return p.errAt(t, "expected %q, found %v", op, t)
	}
	return nil
}
func (p *parser) expectKeyword(kw string) error {
	if !p.acceptKeyword(kw) {
		t := p.peek()
		return p.errAt(t, "expected %s, found %v", kw, t)
	}
	return nil
}
func (p *parser) errAt(t token, format string, args ...any) error {
	return &SyntaxError{Line: t.line, Column: t.col, Msg: fmt.Sprintf(format, args...)}
}

// name reads an identifier (quoted or not); a reserved word is an error.
func (p *parser) name() (string, error) {
	t := p.peek()
	switch t.kind {
	case tIdent:
		p.pos++
		return t.text, nil
	case tKeyword:
		return "", p.errAt(t, "%s is a reserved word; quote it (\"%s\") to use it as a name", t.text, strings.ToLower(t.text))
	}
	return "", p.errAt(t, "expected a name, found %v", t)
}

// qualifiedName reads a.b.C (IMPORT and TYPE).
func (p *parser) qualifiedName() (string, error) {
	n, err := p.name()
	if err != nil {
		return "", err
	}
	for p.isOp(".") {
		p.pos++
		// After a dot a class or package name may be a reserved word
		// (com.example.Order): it cannot be read as anything else.
		if t := p.peek(); t.kind == tKeyword {
			p.pos++
			n += "." + t.raw
			continue
		}
		m, err := p.name()
		if err != nil {
			return "", err
		}
		n += "." + m
	}
	return n, nil
}

// unsupported are words of Geode's grammar that its compiler rejects.
var unsupported = map[string]bool{
	"LIST": true, "BAG": true, "ARRAY": true, "STRUCT": true, "ABS": true, "UNION": true,
	"INTERSECT": true, "EXCEPT": true, "FOR": true, "EXISTS": true, "FIRST": true, "LAST": true,
	"UNIQUE": true, "FLATTEN": true, "LISTTOSET": true, "ANY": true, "SOME": true, "DEFINE": true,
	"UNDEFINE": true, "DECLARE": true, "HAVING": true, "QUERY": true, "DICTIONARY": true,
	"INTERVAL": true, "ANDTHEN": true, "ORELSE": true,
}

func (p *parser) selectStmt() (*selectStmt, error) {
	if err := p.expectKeyword("SELECT"); err != nil {
		return nil, err
	}
	s := &selectStmt{}
	if p.acceptKeyword("DISTINCT") {
		s.distinct = true
	} else {
		p.acceptKeyword("ALL")
	}
	if p.acceptOp("*") {
		s.star = true
	} else {
		for {
			pr, err := p.projection()
			if err != nil {
				return nil, err
			}
			s.proj = append(s.proj, pr)
			if !p.acceptOp(",") {
				break
			}
		}
	}
	if err := p.expectKeyword("FROM"); err != nil {
		return nil, err
	}
	for {
		it, err := p.iterator()
		if err != nil {
			return nil, err
		}
		s.from = append(s.from, it)
		if !p.acceptOp(",") {
			break
		}
	}
	if p.acceptKeyword("WHERE") {
		w, err := p.expr()
		if err != nil {
			return nil, err
		}
		s.where = w
	}
	if p.acceptKeyword("GROUP") {
		if err := p.expectKeyword("BY"); err != nil {
			return nil, err
		}
		for {
			g, err := p.expr()
			if err != nil {
				return nil, err
			}
			s.groupBy = append(s.groupBy, g)
			if !p.acceptOp(",") {
				break
			}
		}
	}
	if p.isKeyword("HAVING") {
		return nil, p.errAt(p.peek(), "HAVING is not supported")
	}
	if p.acceptKeyword("ORDER") {
		if err := p.expectKeyword("BY"); err != nil {
			return nil, err
		}
		for {
			x, err := p.expr()
			if err != nil {
				return nil, err
			}
			item := orderItem{x: x}
			if p.acceptKeyword("DESC") {
				item.desc = true
			} else {
				p.acceptKeyword("ASC")
			}
			s.orderBy = append(s.orderBy, item)
			if !p.acceptOp(",") {
				break
			}
		}
	}
	if p.acceptKeyword("LIMIT") {
		t := p.peek()
		switch t.kind {
		case tInt:
			n, err := p.intLit(t)
			if err != nil {
				return nil, err
			}
			p.pos++
			s.limit = &litExpr{v: n, text: t.text}
		case tParam:
			n, err := strconv.Atoi(t.text)
			if err != nil || n < 1 {
				return nil, p.errAt(t, "bad parameter $%s", t.text)
			}
			p.pos++
			s.limit = &paramExpr{n: n}
		default:
			return nil, p.errAt(t, "LIMIT needs an integer or a bind parameter, found %v", t)
		}
	}
	return s, nil
}

// projection parses expr, expr AS name, or name: expr.
func (p *parser) projection() (projection, error) {
	if p.peek().kind == tIdent && p.peekAt(1).kind == tOp && p.peekAt(1).text == ":" {
		alias := p.peek().text
		p.pos += 2
		x, err := p.expr()
		return projection{x: x, alias: alias}, err
	}
	x, err := p.expr()
	if err != nil {
		return projection{}, err
	}
	if p.acceptKeyword("AS") {
		alias, err := p.name()
		if err != nil {
			return projection{}, err
		}
		return projection{x: x, alias: alias}, nil
	}
	return projection{x: x}, nil
}

// iterator parses expr [[AS] name] [TYPE t], or name IN expr [TYPE t].
func (p *parser) iterator() (iterDef, error) {
	var it iterDef
	if p.peek().kind == tIdent && p.peekAt(1).kind == tKeyword && p.peekAt(1).text == "IN" {
		it.name = p.peek().text
		p.pos += 2
		x, err := p.expr()
		if err != nil {
			return it, err
		}
		it.x = x
	} else {
		// The iterator expression stops before IN, which would otherwise be
		// read as the IN operator of "o IN /orders" already handled above.
		x, err := p.expr()
		if err != nil {
			return it, err
		}
		it.x = x
		if p.acceptKeyword("AS") {
			n, err := p.name()
			if err != nil {
				return it, err
			}
			it.name = n
		} else if p.peek().kind == tIdent {
			it.name = p.peek().text
			p.pos++
		}
	}
	if p.acceptKeyword("TYPE") {
		t, err := p.qualifiedName()
		if err != nil {
			return it, err
		}
		it.typ = t
	}
	return it, nil
}

func (p *parser) expr() (expr, error) {
	p.depth++
	defer func() { p.depth-- }()
	if p.depth > maxDepth {
		return nil, p.errAt(p.peek(), "query nests deeper than %d levels", maxDepth)
	}
	return p.or()
}

// binaryLevel parses next (op next)* for the operators of one level.
func (p *parser) binaryLevel(next func() (expr, error), match func(token) (string, bool)) (expr, error) {
	l, err := next()
	if err != nil {
		return nil, err
	}
	for {
		op, ok := match(p.peek())
		if !ok {
			return l, nil
		}
		p.pos++
		r, err := next()
		if err != nil {
			return nil, err
		}
		l = &binaryExpr{op: op, l: l, r: r}
	}
}

func keywordOp(words ...string) func(token) (string, bool) {
	return func(t token) (string, bool) {
		if t.kind != tKeyword {
			return "", false
		}
		for _, w := range words {
			if t.text == w {
				if w == "MOD" {
					return "%", true
				}
				return w, true
			}
		}
		return "", false
	}
}

func punctOp(ops ...string) func(token) (string, bool) {
	return func(t token) (string, bool) {
		if t.kind != tOp {
			return "", false
		}
		for _, o := range ops {
			if t.text == o {
				if o == "!=" {
					return "<>", true
				}
				return o, true
			}
		}
		return "", false
	}
}

func (p *parser) or() (expr, error)  { return p.binaryLevel(p.and, keywordOp("OR")) }
func (p *parser) and() (expr, error) { return p.binaryLevel(p.equality, keywordOp("AND")) }
func (p *parser) equality() (expr, error) {
	eq := punctOp("=", "<>", "!=")
	like := keywordOp("LIKE")
	return p.binaryLevel(p.relational, func(t token) (string, bool) {
		if op, ok := eq(t); ok {
			return op, true
		}
		return like(t)
	})
}
func (p *parser) relational() (expr, error) {
	return p.binaryLevel(p.additive, punctOp("<", "<=", ">", ">="))
}
func (p *parser) additive() (expr, error) { return p.binaryLevel(p.multiplicative, punctOp("+", "-")) }
func (p *parser) multiplicative() (expr, error) {
	punct := punctOp("*", "/", "%")
	mod := keywordOp("MOD")
	return p.binaryLevel(p.in, func(t token) (string, bool) {
		if op, ok := punct(t); ok {
			return op, true
		}
		return mod(t)
	})
}
func (p *parser) in() (expr, error) { return p.binaryLevel(p.unary, keywordOp("IN")) }

func (p *parser) unary() (expr, error) {
	p.depth++
	defer func() { p.depth-- }()
	if p.depth > maxDepth {
		return nil, p.errAt(p.peek(), "query nests deeper than %d levels", maxDepth)
	}
	switch {
	case p.acceptKeyword("NOT"):
		x, err := p.unary()
		if err != nil {
			return nil, err
		}
		return &unaryExpr{op: "NOT", x: x}, nil
	case p.acceptOp("-"):
		x, err := p.unary()
		if err != nil {
			return nil, err
		}
		return &unaryExpr{op: "-", x: x}, nil
	case p.acceptOp("+"):
		return p.unary()
	}
	return p.postfix()
}

// castTypes are the type names a cast may name.
var castTypes = map[string]bool{
	"INT": true, "LONG": true, "SHORT": true, "BYTE": true, "FLOAT": true, "DOUBLE": true,
	"CHAR": true, "BOOLEAN": true, "STRING": true,
}

func (p *parser) postfix() (expr, error) {
	x, err := p.primary()
	if err != nil {
		return nil, err
	}
	for {
		switch {
		case p.isOp(".") || p.isOp("->"):
			p.pos++
			n, err := p.name()
			if err != nil {
				return nil, err
			}
			if p.acceptOp("(") {
				args, err := p.args(")")
				if err != nil {
					return nil, err
				}
				x = &callExpr{x: x, name: n, args: args}
			} else {
				x = &memberExpr{x: x, name: n}
			}
		case p.acceptOp("["):
			idx, err := p.expr()
			if err != nil {
				return nil, err
			}
			if p.isOp(",") {
				return nil, p.errAt(p.peek(), "map index with several keys is not supported")
			}
			if err := p.expectOp("]"); err != nil {
				return nil, err
			}
			x = &indexExpr{x: x, idx: idx}
		default:
			return x, nil
		}
	}
}

// args parses a comma-separated expression list up to the closing token,
// the opening one already consumed.
func (p *parser) args(closing string) ([]expr, error) {
	var args []expr
	if p.acceptOp(closing) {
		return args, nil
	}
	for {
		var a expr
		var err error
		if p.isKeyword("SELECT") {
			// ELEMENT(SELECT ...): a query as the argument itself.
			var s *selectStmt
			s, err = p.selectStmt()
			a = &subqueryExpr{q: s}
		} else {
			a, err = p.expr()
		}
		if err != nil {
			return nil, err
		}
		args = append(args, a)
		if p.acceptOp(closing) {
			return args, nil
		}
		if err := p.expectOp(","); err != nil {
			return nil, err
		}
	}
}

func (p *parser) intLit(t token) (int64, error) {
	text := t.text
	base := 10
	switch {
	case strings.HasPrefix(text, "0x") || strings.HasPrefix(text, "0X"):
		text, base = text[2:], 16
	case len(text) > 1 && text[0] == '0':
		base = 8
	}
	n, err := strconv.ParseInt(text, base, 64)
	if err != nil {
		return 0, p.errAt(t, "bad integer literal %s", t.text)
	}
	return n, nil
}

func (p *parser) primary() (expr, error) {
	t := p.peek()
	switch t.kind {
	case tString:
		p.pos++
		return &litExpr{v: t.text, text: quoteString(t.text)}, nil
	case tInt, tLong:
		n, err := p.intLit(t)
		if err != nil {
			return nil, err
		}
		p.pos++
		if t.kind == tInt && (n > math.MaxInt32 || n < math.MinInt32) {
			return nil, p.errAt(t, "integer literal %s is too large for an int; add L for a long", t.text)
		}
		text := t.text
		if t.kind == tLong {
			text += "L"
		}
		return &litExpr{v: n, text: text}, nil
	case tDouble:
		f, err := strconv.ParseFloat(t.text, 64)
		if err != nil {
			return nil, p.errAt(t, "bad number %s", t.text)
		}
		p.pos++
		return &litExpr{v: f, text: t.text + "d"}, nil
	case tFloat:
		f, err := strconv.ParseFloat(t.text, 32)
		if err != nil {
			return nil, p.errAt(t, "bad number %s", t.text)
		}
		p.pos++
		return &litExpr{v: float32(f), text: t.text + "f"}, nil
	case tParam:
		n, err := strconv.Atoi(t.text)
		if err != nil || n < 1 {
			return nil, p.errAt(t, "bad parameter $%s: parameters are numbered from 1", t.text)
		}
		p.pos++
		return &paramExpr{n: n}, nil
	case tRegion:
		p.pos++
		return &regionExpr{path: t.text}, nil
	case tIdent:
		p.pos++
		if p.isOp("(") {
			return nil, p.errAt(t, "unknown function %s", t.text)
		}
		return &identExpr{name: t.text}, nil
	case tOp:
		if t.text == "(" {
			return p.parenthesized()
		}
	case tKeyword:
		return p.keywordPrimary(t)
	}
	return nil, p.errAt(t, "unexpected %v", t)
}

// parenthesized parses ( expr ), (SELECT ...) and the cast (type) x.
func (p *parser) parenthesized() (expr, error) {
	p.pos++ // (
	if t := p.peek(); t.kind == tKeyword && castTypes[t.text] && p.peekAt(1).kind == tOp && p.peekAt(1).text == ")" {
		p.pos += 2
		x, err := p.unary()
		if err != nil {
			return nil, err
		}
		return &castExpr{typ: strings.ToLower(t.text), x: x}, nil
	}
	if p.isKeyword("SELECT") {
		s, err := p.selectStmt()
		if err != nil {
			return nil, err
		}
		if err := p.expectOp(")"); err != nil {
			return nil, err
		}
		return &subqueryExpr{q: s}, nil
	}
	x, err := p.expr()
	if err != nil {
		return nil, err
	}
	if p.isOp(",") {
		return nil, p.errAt(p.peek(), "a list of values must be written SET(a, b, ...)")
	}
	if err := p.expectOp(")"); err != nil {
		return nil, err
	}
	return x, nil
}

func (p *parser) keywordPrimary(t token) (expr, error) {
	switch t.text {
	case "TRUE", "FALSE":
		p.pos++
		return &litExpr{v: t.text == "TRUE", text: t.text}, nil
	case "NULL", "NIL":
		p.pos++
		return &litExpr{v: nil, text: "NULL"}, nil
	case "UNDEFINED":
		p.pos++
		return &litExpr{v: Undefined, text: "UNDEFINED"}, nil
	case "DATE", "TIME", "TIMESTAMP", "CHAR":
		p.pos++
		s := p.peek()
		if s.kind != tString {
			return nil, p.errAt(s, "%s needs a quoted literal, found %v", t.text, s)
		}
		p.pos++
		if t.text == "CHAR" {
			if len([]rune(s.text)) != 1 {
				return nil, p.errAt(s, "CHAR literal must be one character")
			}
			return &litExpr{v: s.text, text: "CHAR " + quoteString(s.text)}, nil
		}
		v, err := temporalLiteral(t.text, s.text)
		if err != nil {
			return nil, p.errAt(s, "%v", err)
		}
		return &litExpr{v: v, text: t.text + " " + quoteString(s.text)}, nil
	case "SET":
		p.pos++
		if err := p.expectOp("("); err != nil {
			return nil, err
		}
		elems, err := p.args(")")
		if err != nil {
			return nil, err
		}
		return &setExpr{elems: elems}, nil
	case "IS_DEFINED", "IS_UNDEFINED", "ELEMENT", "NVL", "TO_DATE":
		p.pos++
		if err := p.expectOp("("); err != nil {
			return nil, err
		}
		args, err := p.args(")")
		if err != nil {
			return nil, err
		}
		want := map[string]int{"IS_DEFINED": 1, "IS_UNDEFINED": 1, "ELEMENT": 1, "NVL": 2, "TO_DATE": 2}[t.text]
		if len(args) != want {
			return nil, p.errAt(t, "%s takes %d argument(s), got %d", t.text, want, len(args))
		}
		if t.text == "TO_DATE" {
			if _, ok := args[0].(*paramExpr); !ok {
				if l, ok := args[0].(*litExpr); !ok || !isString(l.v) {
					return nil, p.errAt(t, "TO_DATE's first argument must be a string literal or a bind parameter")
				}
			}
			if l, ok := args[1].(*litExpr); !ok || !isString(l.v) {
				return nil, p.errAt(t, "TO_DATE's format must be a string literal")
			}
		}
		return &funcExpr{name: t.text, args: args}, nil
	case "COUNT", "SUM", "AVG", "MIN", "MAX":
		p.pos++
		if err := p.expectOp("("); err != nil {
			return nil, err
		}
		a := &aggExpr{fn: t.text}
		if t.text == "COUNT" && p.acceptOp("*") {
			return a, p.expectOp(")")
		}
		if p.acceptKeyword("DISTINCT") {
			a.distinct = true
			if t.text == "MIN" || t.text == "MAX" {
				return nil, p.errAt(t, "%s(DISTINCT ...) is not supported", t.text)
			}
		} else {
			p.acceptKeyword("ALL")
		}
		x, err := p.expr()
		if err != nil {
			return nil, err
		}
		a.x = x
		return a, p.expectOp(")")
	}
	if unsupported[t.text] {
		return nil, p.errAt(t, "%s is not supported", t.text)
	}
	return nil, p.errAt(t, "%s is a reserved word; quote it (\"%s\") to use it as a name", t.text, strings.ToLower(t.text))
}

func isString(v Value) bool { _, ok := v.(string); return ok }

// temporalLiteral parses the text of DATE, TIME and TIMESTAMP literals as
// java.sql does: yyyy-mm-dd, hh:mm:ss, yyyy-mm-dd hh:mm:ss[.f...].
func temporalLiteral(kind, text string) (Temporal, error) {
	var layout string
	switch kind {
	case "DATE":
		layout = "2006-01-02"
	case "TIME":
		layout = "15:04:05"
	default:
		layout = "2006-01-02 15:04:05.999999999"
	}
	t, err := time.ParseInLocation(layout, text, time.UTC)
	if err != nil {
		return Temporal{}, fmt.Errorf("bad %s literal %q", kind, text)
	}
	return Temporal{T: t, Kind: strings.ToLower(kind)}, nil
}
