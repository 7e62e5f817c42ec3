package oql

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"
	"unsafe"

	"github.com/kvnode/kvnode/index"
	"github.com/kvnode/kvnode/oql/internal/member"
	"github.com/tidwall/gjson"
)

// Value is one OQL value. Its dynamic type is one of:
//
//	nil                 null
//	undefinedValue      UNDEFINED (Undefined): a member that is absent
//	int64               Java byte/short/int/long
//	float64, float32    Java double, float
//	string              Java String (and char)
//	bool
//	Temporal            java.sql Date/Time/Timestamp
//	Object              a stored JSON object, read lazily
//	Array               a stored JSON array, read lazily
//	List                a collection the engine built (SET, subquery, keys)
//	*Struct             a row of named fields
//	Entry               a region entry (key, value)
//	regionValue, regionCollection   a region and its keySet/values/entrySet
type Value any

// undefinedValue is the type of Undefined.
type undefinedValue struct{}

// Undefined is OQL's UNDEFINED: what reading an absent member gives.
var Undefined Value = undefinedValue{}

func (undefinedValue) String() string { return "UNDEFINED" }

// Object is a JSON object as stored: members are read on demand, so a
// predicate over one member of a large object never decodes the rest.
type Object struct{ raw string }

// Array is a JSON array as stored.
type Array struct{ raw string }

// List is a collection built by the engine.
type List []Value

// Struct is a row with named fields, in projection order.
type Struct struct {
	Names  []string
	Values []Value
}

// Entry is a region entry, the element of region.entrySet.
type Entry struct {
	Key   string
	Value Value
}

// Temporal is a date, time or timestamp literal (or TO_DATE's result).
type Temporal struct {
	T    time.Time
	Kind string // date, time or timestamp
}

// regionValue is a region named in a query: /orders.
type regionValue struct{ path string }

// regionCollection is one of a region's collections.
type regionCollection struct {
	path string
	kind string // values, keys, entries
}

// FromJSON returns the value of a stored JSON text (objects and arrays stay
// lazy). Invalid JSON reads as UNDEFINED; the store only holds valid JSON.
func FromJSON(raw []byte) Value {
	return fromResult(gjson.ParseBytes(raw))
}

// storedValue is FromJSON of a value src gave, read in place when src
// promises it never changes (ImmutableSource). Such a source is the store,
// which holds only valid, compact JSON objects: one needs no parsing to
// become a lazy Object.
func storedValue(src Source, raw []byte) Value {
	if _, ok := src.(ImmutableSource); ok && len(raw) > 0 {
		s := unsafe.String(&raw[0], len(raw))
		if s[0] == '{' {
			return Object{raw: s}
		}
		return fromResult(gjson.Parse(s))
	}
	return FromJSON(raw)
}

// fromResult converts a gjson result: numbers keep their integer or
// floating-point kind, as Java's JSON-to-PDX conversion does.
func fromResult(r gjson.Result) Value {
	switch r.Type {
	case gjson.Null:
		return nil
	case gjson.False:
		return false
	case gjson.True:
		return true
	case gjson.String:
		return r.Str
	case gjson.Number:
		return parseNumber(r.Raw, r.Num)
	case gjson.JSON:
		if strings.HasPrefix(r.Raw, "[") {
			return Array{raw: r.Raw}
		}
		return Object{raw: r.Raw}
	}
	return Undefined
}

// parseNumber keeps a JSON number's kind: no fraction or exponent → int64
// (a float64 when too large for a long, as Jackson makes it a BigInteger
// that PDX cannot hold either).
func parseNumber(raw string, f float64) Value {
	if n, ok := parseInteger(raw); ok {
		return n
	}
	return f
}

// isInteger says whether a JSON number's text has neither fraction nor
// exponent.
func isInteger(raw string) bool {
	for i := 0; i < len(raw); i++ {
		if c := raw[i]; c == '.' || c == 'e' || c == 'E' {
			return false
		}
	}
	return true
}

// member returns the named member of a JSON object (the first, if the
// name repeats), UNDEFINED if absent. Package member finds it without
// decoding the members before it, and its text becomes a value without a
// second parse; what member cannot settle (a key written with escapes)
// gjson reads. A predicate on one field of a million entries spends most
// of its time here (docs/performance.md, "COUNT with a predicate").
func (o Object) member(name string) Value {
	raw, found, sure := member.Find(o.raw, name)
	if !sure {
		// The name is escaped so that no character of it (., *, ?, #,
		// @, |) is read as gjson path syntax.
		r := gjson.Get(o.raw, gjson.Escape(name))
		if !r.Exists() {
			return Undefined
		}
		return fromResult(r)
	}
	if !found {
		return Undefined
	}
	return fromText(raw)
}

// fromText is fromResult for the text of one JSON value, read only as far
// as its kind needs: a number is parsed once, by the kind its text shows.
func fromText(raw string) Value {
	switch raw[0] {
	case '"':
		if strings.IndexByte(raw, '\\') < 0 {
			return raw[1 : len(raw)-1]
		}
		return gjson.Parse(raw).Str
	case '{':
		return Object{raw: raw}
	case '[':
		return Array{raw: raw}
	case 't':
		return true
	case 'f':
		return false
	case 'n':
		return nil
	}
	if n, ok := parseInteger(raw); ok {
		return n
	}
	f, _ := strconv.ParseFloat(raw, 64) // as gjson: out of range is ±Inf
	return f
}

// elements returns the values of a JSON array.
func (a Array) elements() []Value {
	var out []Value
	gjson.Parse(a.raw).ForEach(func(_, v gjson.Result) bool {
		out = append(out, fromResult(v))
		return true
	})
	return out
}

// size counts the elements of a JSON array without converting them.
func (a Array) size() int {
	n := 0
	gjson.Parse(a.raw).ForEach(func(_, _ gjson.Result) bool {
		n++
		return true
	})
	return n
}

// typeName names v's type in error messages.
func typeName(v Value) string {
	switch v.(type) {
	case nil:
		return "null"
	case undefinedValue:
		return "UNDEFINED"
	case int64:
		return "integer"
	case float64:
		return "double"
	case float32:
		return "float"
	case string:
		return "string"
	case bool:
		return "boolean"
	case Temporal:
		return "date"
	case Object:
		return "object"
	case Array, List:
		return "collection"
	case *Struct:
		return "struct"
	case Entry:
		return "entry"
	case regionValue:
		return "region"
	case regionCollection:
		return "region collection"
	}
	return fmt.Sprintf("%T", v)
}

// isNumber reports whether v is a number.
func isNumber(v Value) bool {
	switch v.(type) {
	case int64, float64, float32:
		return true
	}
	return false
}

// toFloat returns a number as float64.
func toFloat(v Value) float64 {
	switch n := v.(type) {
	case int64:
		return float64(n)
	case float64:
		return n
	case float32:
		return float64(n)
	}
	return math.NaN()
}

// compareNumbers compares two numbers with binary numeric promotion: two
// integers exactly, anything else as doubles. NaN equals NaN and is greater
// than everything else, as Java's Double.compareTo has it.
func compareNumbers(a, b Value) int {
	ai, aInt := a.(int64)
	bi, bInt := b.(int64)
	if aInt && bInt {
		switch {
		case ai < bi:
			return -1
		case ai > bi:
			return 1
		}
		return 0
	}
	af, bf := toFloat(a), toFloat(b)
	switch {
	case math.IsNaN(af) && math.IsNaN(bf):
		return 0
	case math.IsNaN(af):
		return 1
	case math.IsNaN(bf):
		return -1
	case af < bf:
		return -1
	case af > bf:
		return 1
	}
	return 0
}

// compareStrings compares like Java's String.compareTo: by UTF-16 code
// units, case-sensitively (the order indexes keep too).
func compareStrings(a, b string) int { return index.CompareStrings(a, b) }

// comparable3 compares two non-null, defined values of compatible kinds;
// ok is false for kinds that do not compare (string vs number...).
func comparable3(a, b Value) (c int, ok bool) {
	switch x := a.(type) {
	case int64, float64, float32:
		if isNumber(b) {
			return compareNumbers(a, b), true
		}
	case string:
		if y, isStr := b.(string); isStr {
			return compareStrings(x, y), true
		}
	case bool:
		if y, isBool := b.(bool); isBool {
			switch {
			case x == y:
				return 0, true
			case !x:
				return -1, true
			}
			return 1, true
		}
	case Temporal:
		if y, isT := b.(Temporal); isT {
			return x.T.Compare(y.T), true
		}
	}
	return 0, false
}

// equalValues is Java equals as OQL's = uses it between defined, non-null
// values: numbers by value across kinds, JSON objects and arrays by
// content, structs field-wise.
func equalValues(a, b Value) bool {
	if c, ok := comparable3(a, b); ok {
		return c == 0
	}
	switch x := a.(type) {
	case Object, Array, List, *Struct, Entry:
		switch b.(type) {
		case Object, Array, List, *Struct, Entry:
			return canonicalKey(x) == canonicalKey(b)
		}
	case regionValue:
		y, ok := b.(regionValue)
		return ok && x == y
	case regionCollection:
		y, ok := b.(regionCollection)
		return ok && x == y
	case undefinedValue:
		_, ok := b.(undefinedValue)
		return ok
	case nil:
		return b == nil
	}
	return false
}

// canonicalKey is a text that two values share exactly when they are equal
// as DISTINCT, GROUP BY and = see them: JSON objects by content with their
// members sorted, numbers by kind and value (Java's Integer 5 and Double 5.0
// are different objects).
func canonicalKey(v Value) string {
	var b strings.Builder
	writeCanonical(&b, v)
	return b.String()
}

func writeCanonical(b *strings.Builder, v Value) {
	switch x := v.(type) {
	case nil:
		b.WriteString("n")
	case undefinedValue:
		b.WriteString("u")
	case int64:
		b.WriteString("i" + strconv.FormatInt(x, 10))
	case float64:
		b.WriteString("d" + strconv.FormatFloat(x, 'g', -1, 64))
	case float32:
		b.WriteString("d" + strconv.FormatFloat(float64(x), 'g', -1, 32))
	case string:
		b.WriteString(strconv.Quote(x))
	case bool:
		b.WriteString(strconv.FormatBool(x))
	case Temporal:
		b.WriteString("t" + x.T.Format(time.RFC3339Nano))
	case Object:
		writeCanonicalJSON(b, gjson.Parse(x.raw))
	case Array:
		writeCanonicalJSON(b, gjson.Parse(x.raw))
	case List:
		b.WriteByte('[')
		for _, e := range x {
			writeCanonical(b, e)
			b.WriteByte(',')
		}
		b.WriteByte(']')
	case *Struct:
		b.WriteByte('(')
		for i, n := range x.Names {
			b.WriteString(strconv.Quote(n) + ":")
			writeCanonical(b, x.Values[i])
			b.WriteByte(',')
		}
		b.WriteByte(')')
	case Entry:
		b.WriteString("e" + strconv.Quote(x.Key) + ":")
		writeCanonical(b, x.Value)
	case regionValue:
		b.WriteString("r" + x.path)
	case regionCollection:
		b.WriteString("r" + x.path + "." + x.kind)
	default:
		fmt.Fprintf(b, "?%v", x)
	}
}

func writeCanonicalJSON(b *strings.Builder, r gjson.Result) {
	switch {
	case r.IsObject():
		type kv struct {
			k string
			v gjson.Result
		}
		var members []kv
		r.ForEach(func(k, v gjson.Result) bool {
			members = append(members, kv{k.Str, v})
			return true
		})
		slices.SortFunc(members, func(a, b kv) int { return strings.Compare(a.k, b.k) })
		b.WriteByte('{')
		for _, m := range members {
			b.WriteString(strconv.Quote(m.k) + ":")
			writeCanonicalJSON(b, m.v)
			b.WriteByte(',')
		}
		b.WriteByte('}')
	case r.IsArray():
		b.WriteByte('[')
		r.ForEach(func(_, v gjson.Result) bool {
			writeCanonicalJSON(b, v)
			b.WriteByte(',')
			return true
		})
		b.WriteByte(']')
	default:
		writeCanonical(b, fromResult(r))
	}
}
