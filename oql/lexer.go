package oql

import (
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"
)

// tokKind is the kind of a lexical token.
type tokKind int

const (
	tEOF     tokKind = iota
	tIdent           // an identifier; quoted identifiers ("type") too
	tKeyword         // a reserved word; text is upper case
	tString          // 'text' with '' unescaped
	tInt             // 42 (text is the digits, hex and octal forms kept)
	tLong            // 42L
	tDouble          // 1.5, 1e3, 1.5d
	tFloat           // 1.5f
	tParam           // $1: text is the number
	tRegion          // /orders or /root/child: text is the whole path
	tOp              // punctuation and operators: text is the operator
)

// token is one lexical token with its position (1-based line and column).
type token struct {
	kind      tokKind
	text      string
	raw       string // a keyword as written (text is upper case)
	line, col int
}

func (t token) String() string {
	switch t.kind {
	case tEOF:
		return "end of query"
	case tString:
		return "'" + t.text + "'"
	case tParam:
		return "$" + t.text
	}
	return fmt.Sprintf("%q", t.text)
}

// reserved are OQL's reserved words (Geode's grammar). Unquoted, they are
// keywords; as names they must be quoted ("type").
var reserved = func() map[string]bool {
	m := map[string]bool{}
	for _, w := range strings.Fields(`abs all and andthen any array as asc avg bag boolean by byte
		char collection count date declare define desc dictionary distinct double element enum
		except exists false first flatten float for from group having hint import in int intersect
		interval is_defined is_undefined last like limit list listtoset long map max min mod nil not
		null octet or order orelse query select set short some string struct sum time timestamp
		to_date trace true type undefine undefined union unique where nvl`) {
		m[w] = true
	}
	return m
}()

// lexer turns query text into tokens, all at once: queries are short.
type lexer struct {
	src       string
	pos       int
	line, col int
	toks      []token
}

// lex returns the tokens of src, ending with tEOF.
func lex(src string) ([]token, error) {
	lx := &lexer{src: src, line: 1, col: 1}
	for {
		t, err := lx.next()
		if err != nil {
			return nil, err
		}
		lx.toks = append(lx.toks, t)
		if t.kind == tEOF {
			return lx.toks, nil
		}
	}
}

func (lx *lexer) errorf(line, col int, format string, args ...any) error {
	return &SyntaxError{Line: line, Column: col, Msg: fmt.Sprintf(format, args...)}
}

// peekByte returns the byte at offset off from the current position, 0 past the end.
func (lx *lexer) peekByte(off int) byte {
	if lx.pos+off < len(lx.src) {
		return lx.src[lx.pos+off]
	}
	return 0
}

// advance moves past n bytes, keeping line and column (in characters).
func (lx *lexer) advance(n int) {
	for i := 0; i < n && lx.pos < len(lx.src); {
		r, size := utf8.DecodeRuneInString(lx.src[lx.pos:])
		lx.pos += size
		i += size
		if r == '\n' {
			lx.line++
			lx.col = 1
		} else {
			lx.col++
		}
	}
}

// skipSpace skips white space and comments.
func (lx *lexer) skipSpace() error {
	for lx.pos < len(lx.src) {
		c := lx.src[lx.pos]
		switch {
		case c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f':
			lx.advance(1)
		case c == '-' && lx.peekByte(1) == '-':
			for lx.pos < len(lx.src) && lx.src[lx.pos] != '\n' {
				lx.advance(1)
			}
		case c == '/' && lx.peekByte(1) == '*':
			line, col := lx.line, lx.col
			end := strings.Index(lx.src[lx.pos+2:], "*/")
			if end < 0 {
				return lx.errorf(line, col, "unterminated comment")
			}
			lx.advance(end + 4)
		default:
			return nil
		}
	}
	return nil
}

// operandEnd reports whether the previous token ends an operand, so that a
// following '/' is a division rather than the start of a region path.
func (lx *lexer) operandEnd() bool {
	if len(lx.toks) == 0 {
		return false
	}
	t := lx.toks[len(lx.toks)-1]
	switch t.kind {
	case tIdent, tString, tInt, tLong, tDouble, tFloat, tParam, tRegion:
		return true
	case tKeyword:
		switch t.text {
		case "TRUE", "FALSE", "NULL", "NIL", "UNDEFINED":
			return true
		}
	case tOp:
		return t.text == ")" || t.text == "]"
	}
	return false
}

func isIdentStart(r rune) bool { return r == '_' || unicode.IsLetter(r) }
func isIdentPart(r rune) bool  { return r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r) }
func isRegionChar(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-'
}

func (lx *lexer) next() (token, error) {
	if err := lx.skipSpace(); err != nil {
		return token{}, err
	}
	line, col := lx.line, lx.col
	tok := func(k tokKind, text string) token { return token{kind: k, text: text, line: line, col: col} }
	if lx.pos >= len(lx.src) {
		return tok(tEOF, ""), nil
	}
	c := lx.src[lx.pos]
	r, _ := utf8.DecodeRuneInString(lx.src[lx.pos:])
	switch {
	case c == '\'':
		return lx.stringLit(line, col)
	case c == '"':
		end := strings.IndexByte(lx.src[lx.pos+1:], '"')
		if end < 0 {
			return token{}, lx.errorf(line, col, "unterminated quoted identifier")
		}
		name := lx.src[lx.pos+1 : lx.pos+1+end]
		if name == "" {
			return token{}, lx.errorf(line, col, "empty quoted identifier")
		}
		lx.advance(end + 2)
		return tok(tIdent, name), nil
	case c >= '0' && c <= '9' || c == '.' && lx.peekByte(1) >= '0' && lx.peekByte(1) <= '9':
		return lx.number(line, col)
	case c == '$':
		start := lx.pos + 1
		end := start
		for end < len(lx.src) && lx.src[end] >= '0' && lx.src[end] <= '9' {
			end++
		}
		if end == start {
			return token{}, lx.errorf(line, col, "'$' must be followed by a parameter number")
		}
		lx.advance(end - lx.pos)
		return tok(tParam, lx.src[start:end]), nil
	case c == '/' && !lx.operandEnd() && isRegionChar(lx.peekByte(1)):
		start := lx.pos
		for lx.pos < len(lx.src) && lx.src[lx.pos] == '/' && isRegionChar(lx.peekByte(1)) {
			lx.advance(1)
			for lx.pos < len(lx.src) && isRegionChar(lx.src[lx.pos]) {
				lx.advance(1)
			}
		}
		return tok(tRegion, lx.src[start:lx.pos]), nil
	case isIdentStart(r):
		start := lx.pos
		for lx.pos < len(lx.src) {
			r, size := utf8.DecodeRuneInString(lx.src[lx.pos:])
			if !isIdentPart(r) {
				break
			}
			lx.advance(size)
		}
		word := lx.src[start:lx.pos]
		if lower := strings.ToLower(word); reserved[lower] {
			t := tok(tKeyword, strings.ToUpper(word))
			t.raw = word
			return t, nil
		}
		return tok(tIdent, word), nil
	}
	for _, op := range []string{"<>", "!=", "<=", ">=", "->", "(", ")", "[", "]", ",", ".", ":", ";", "*", "+", "-", "/", "%", "=", "<", ">"} {
		if strings.HasPrefix(lx.src[lx.pos:], op) {
			lx.advance(len(op))
			return tok(tOp, op), nil
		}
	}
	return token{}, lx.errorf(line, col, "unexpected character %q", r)
}

// stringLit lexes 'text' where ” stands for one quote; newlines are allowed.
func (lx *lexer) stringLit(line, col int) (token, error) {
	var b strings.Builder
	lx.advance(1)
	for {
		if lx.pos >= len(lx.src) {
			return token{}, lx.errorf(line, col, "unterminated string literal")
		}
		c := lx.src[lx.pos]
		if c == '\'' {
			if lx.peekByte(1) == '\'' {
				b.WriteByte('\'')
				lx.advance(2)
				continue
			}
			lx.advance(1)
			return token{kind: tString, text: b.String(), line: line, col: col}, nil
		}
		_, size := utf8.DecodeRuneInString(lx.src[lx.pos:])
		b.WriteString(lx.src[lx.pos : lx.pos+size])
		lx.advance(size)
	}
}

// number lexes integer and floating-point literals with Java's suffixes:
// L for long, F for float, D for double; 0x for hex, a leading 0 for octal.
func (lx *lexer) number(line, col int) (token, error) {
	s := lx.src[lx.pos:]
	i := 0
	if strings.HasPrefix(s, "0x") || strings.HasPrefix(s, "0X") {
		i = 2
		for i < len(s) && strings.IndexByte("0123456789abcdefABCDEF", s[i]) >= 0 {
			i++
		}
		if i == 2 {
			return token{}, lx.errorf(line, col, "malformed hex literal")
		}
	} else {
		for i < len(s) && s[i] >= '0' && s[i] <= '9' {
			i++
		}
		isFloat := false
		if i < len(s) && s[i] == '.' && i+1 < len(s) && s[i+1] >= '0' && s[i+1] <= '9' {
			isFloat = true
			i++
			for i < len(s) && s[i] >= '0' && s[i] <= '9' {
				i++
			}
		}
		if i < len(s) && (s[i] == 'e' || s[i] == 'E') {
			j := i + 1
			if j < len(s) && (s[j] == '+' || s[j] == '-') {
				j++
			}
			if j < len(s) && s[j] >= '0' && s[j] <= '9' {
				isFloat = true
				for j < len(s) && s[j] >= '0' && s[j] <= '9' {
					j++
				}
				i = j
			}
		}
		if i < len(s) {
			switch s[i] {
			case 'f', 'F':
				lx.advance(i + 1)
				return lx.checkEnd(token{kind: tFloat, text: s[:i], line: line, col: col})
			case 'd', 'D':
				lx.advance(i + 1)
				return lx.checkEnd(token{kind: tDouble, text: s[:i], line: line, col: col})
			}
		}
		if isFloat {
			lx.advance(i)
			return lx.checkEnd(token{kind: tDouble, text: s[:i], line: line, col: col})
		}
	}
	if i < len(s) && (s[i] == 'l' || s[i] == 'L') {
		lx.advance(i + 1)
		return lx.checkEnd(token{kind: tLong, text: s[:i], line: line, col: col})
	}
	lx.advance(i)
	return lx.checkEnd(token{kind: tInt, text: s[:i], line: line, col: col})
}

// checkEnd refuses a number glued to letters (12abc).
func (lx *lexer) checkEnd(t token) (token, error) {
	if lx.pos < len(lx.src) {
		r, _ := utf8.DecodeRuneInString(lx.src[lx.pos:])
		if isIdentPart(r) {
			return token{}, lx.errorf(t.line, t.col, "malformed number %q", t.text+string(r))
		}
	}
	return t, nil
}
