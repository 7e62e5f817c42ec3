package oql

import (
	"strconv"
	"strings"
)

// expr is a node of the parsed query. Every node prints itself back as OQL
// that parses to the same tree (the fuzz test holds it to that); the printed
// form is also the "canonical text" GROUP BY validation compares.
type expr interface {
	print(b *strings.Builder)
}

// exprString prints e.
func exprString(e expr) string {
	var b strings.Builder
	e.print(&b)
	return b.String()
}

type (
	// litExpr is a literal; text is how it prints.
	litExpr struct {
		v    Value
		text string
	}
	// paramExpr is a bind parameter $n (1-based).
	paramExpr struct{ n int }
	// identExpr is a bare name: an iterator variable, or an attribute of
	// the one iterator in scope.
	identExpr struct{ name string }
	// regionExpr is a region path such as /orders.
	regionExpr struct{ path string }
	// memberExpr is x.name (also written x->name).
	memberExpr struct {
		x    expr
		name string
	}
	// callExpr is the method call x.name(args).
	callExpr struct {
		x    expr
		name string
		args []expr
	}
	// indexExpr is x[idx].
	indexExpr struct{ x, idx expr }
	// unaryExpr is NOT x or -x.
	unaryExpr struct {
		op string
		x  expr
	}
	// binaryExpr is every infix operator: OR AND = <> < <= > >= LIKE + - * / % IN.
	// "!=" is kept as "<>" and MOD as "%" once parsed.
	binaryExpr struct {
		op   string
		l, r expr
	}
	// funcExpr is a built-in function: IS_DEFINED, IS_UNDEFINED, NVL,
	// ELEMENT, TO_DATE.
	funcExpr struct {
		name string
		args []expr
	}
	// aggExpr is an aggregate; x is nil for COUNT(*).
	aggExpr struct {
		fn       string
		distinct bool
		x        expr
	}
	// setExpr is SET(a, b, ...).
	setExpr struct{ elems []expr }
	// subqueryExpr is (SELECT ...) used as a value.
	subqueryExpr struct{ q *selectStmt }
	// castExpr is (type) x: a type hint that converts nothing.
	castExpr struct {
		typ string
		x   expr
	}
)

func (e *litExpr) print(b *strings.Builder)   { b.WriteString(e.text) }
func (e *paramExpr) print(b *strings.Builder) { b.WriteString("$" + strconv.Itoa(e.n)) }
func (e *identExpr) print(b *strings.Builder) { printName(b, e.name) }
func (e *regionExpr) print(b *strings.Builder) {
	b.WriteString(e.path)
}
func (e *memberExpr) print(b *strings.Builder) {
	e.x.print(b)
	b.WriteByte('.')
	printName(b, e.name)
}
func (e *callExpr) print(b *strings.Builder) {
	e.x.print(b)
	b.WriteByte('.')
	printName(b, e.name)
	printArgs(b, e.args)
}
func (e *indexExpr) print(b *strings.Builder) {
	e.x.print(b)
	b.WriteByte('[')
	e.idx.print(b)
	b.WriteByte(']')
}
func (e *unaryExpr) print(b *strings.Builder) {
	if e.op == "NOT" {
		b.WriteString("NOT ")
	} else {
		b.WriteString(e.op)
	}
	b.WriteByte('(')
	e.x.print(b)
	b.WriteByte(')')
}
func (e *binaryExpr) print(b *strings.Builder) {
	b.WriteByte('(')
	e.l.print(b)
	b.WriteString(" " + e.op + " ")
	e.r.print(b)
	b.WriteByte(')')
}
func (e *funcExpr) print(b *strings.Builder) {
	b.WriteString(e.name)
	printArgs(b, e.args)
}
func (e *aggExpr) print(b *strings.Builder) {
	b.WriteString(e.fn + "(")
	if e.distinct {
		b.WriteString("DISTINCT ")
	}
	if e.x == nil {
		b.WriteByte('*')
	} else {
		e.x.print(b)
	}
	b.WriteByte(')')
}
func (e *setExpr) print(b *strings.Builder) {
	b.WriteString("SET")
	printArgs(b, e.elems)
}
func (e *subqueryExpr) print(b *strings.Builder) {
	b.WriteByte('(')
	e.q.print(b)
	b.WriteByte(')')
}
func (e *castExpr) print(b *strings.Builder) {
	b.WriteString("(" + e.typ + ") (")
	e.x.print(b)
	b.WriteByte(')')
}

func printArgs(b *strings.Builder, args []expr) {
	b.WriteByte('(')
	for i, a := range args {
		if i > 0 {
			b.WriteString(", ")
		}
		a.print(b)
	}
	b.WriteByte(')')
}

// printName writes an identifier, quoted when it is a reserved word or not
// a plain identifier.
func printName(b *strings.Builder, name string) {
	plain := name != "" && !reserved[strings.ToLower(name)]
	for i, r := range name {
		if !(isIdentPart(r) && (i > 0 || isIdentStart(r))) {
			plain = false
		}
	}
	if plain {
		b.WriteString(name)
		return
	}
	b.WriteString(`"` + name + `"`)
}

// quoteString writes s as an OQL string literal.
func quoteString(s string) string {
	return "'" + strings.ReplaceAll(s, "'", "''") + "'"
}

// selectStmt is one SELECT, top-level or nested.
type selectStmt struct {
	distinct bool
	star     bool
	proj     []projection
	from     []iterDef
	where    expr
	groupBy  []expr
	orderBy  []orderItem
	limit    expr // *litExpr holding an int64, or *paramExpr; nil without LIMIT
}

// projection is one item of the SELECT list.
type projection struct {
	x     expr
	alias string // "" without AS or "name:"
}

// iterDef is one item of the FROM list.
type iterDef struct {
	name string // "" when the iterator is anonymous
	x    expr
	typ  string // the TYPE hint, "" if none
}

// orderItem is one ORDER BY key.
type orderItem struct {
	x    expr
	desc bool
}

func (s *selectStmt) print(b *strings.Builder) {
	b.WriteString("SELECT ")
	if s.distinct {
		b.WriteString("DISTINCT ")
	}
	if s.star {
		b.WriteByte('*')
	}
	for i, p := range s.proj {
		if i > 0 {
			b.WriteString(", ")
		}
		p.x.print(b)
		if p.alias != "" {
			b.WriteString(" AS ")
			printName(b, p.alias)
		}
	}
	b.WriteString(" FROM ")
	for i, it := range s.from {
		if i > 0 {
			b.WriteString(", ")
		}
		it.x.print(b)
		if it.name != "" {
			b.WriteByte(' ')
			printName(b, it.name)
		}
		if it.typ != "" {
			b.WriteString(" TYPE " + it.typ)
		}
	}
	if s.where != nil {
		b.WriteString(" WHERE ")
		s.where.print(b)
	}
	for i, g := range s.groupBy {
		if i == 0 {
			b.WriteString(" GROUP BY ")
		} else {
			b.WriteString(", ")
		}
		g.print(b)
	}
	for i, o := range s.orderBy {
		if i == 0 {
			b.WriteString(" ORDER BY ")
		} else {
			b.WriteString(", ")
		}
		o.x.print(b)
		if o.desc {
			b.WriteString(" DESC")
		}
	}
	if s.limit != nil {
		b.WriteString(" LIMIT ")
		s.limit.print(b)
	}
}
