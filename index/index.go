package index

import (
	"math"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/google/btree"
	"github.com/tidwall/gjson"
)

// Def defines an index: its name and the member path it indexes.
type Def struct {
	Name string
	Path []string
}

// kind ranks the kinds of keys.
type kind uint8

const (
	kindBool kind = iota
	kindNumber
	kindString
)

// Key is one indexed scalar.
type Key struct {
	kind  kind
	isInt bool
	i     int64
	f     float64
	s     string
	b     bool
}

// KeyOf returns the key of a Go scalar (int, int64, float64, float32,
// string, bool); ok is false for anything else.
func KeyOf(v any) (Key, bool) {
	switch x := v.(type) {
	case int64:
		return Key{kind: kindNumber, isInt: true, i: x, f: float64(x)}, true
	case int:
		return Key{kind: kindNumber, isInt: true, i: int64(x), f: float64(x)}, true
	case float64:
		if math.IsNaN(x) {
			return Key{}, false
		}
		return Key{kind: kindNumber, f: x}, true
	case float32:
		return KeyOf(float64(x))
	case string:
		return Key{kind: kindString, s: x}, true
	case bool:
		return Key{kind: kindBool, b: x}, true
	}
	return Key{}, false
}

// SameKind reports whether two keys are of one kind (both numbers, both
// strings or both booleans).
func SameKind(a, b Key) bool { return a.kind == b.kind }

// Compare orders keys (see the package doc).
func Compare(a, b Key) int {
	if a.kind != b.kind {
		return int(a.kind) - int(b.kind)
	}
	switch a.kind {
	case kindBool:
		switch {
		case a.b == b.b:
			return 0
		case !a.b:
			return -1
		}
		return 1
	case kindString:
		return CompareStrings(a.s, b.s)
	}
	if a.isInt && b.isInt {
		switch {
		case a.i < b.i:
			return -1
		case a.i > b.i:
			return 1
		}
		return 0
	}
	switch {
	case a.f < b.f:
		return -1
	case a.f > b.f:
		return 1
	}
	return 0
}

// CompareStrings compares like Java's String.compareTo: by UTF-16 code
// units, so a supplementary character (a surrogate pair) sorts before
// U+E000..U+FFFF, unlike Go's byte order.
func CompareStrings(a, b string) int {
	for a != "" && b != "" {
		ra, na := utf8.DecodeRuneInString(a)
		rb, nb := utf8.DecodeRuneInString(b)
		if ra != rb {
			return utf16First(ra) - utf16First(rb)
		}
		a, b = a[na:], b[nb:]
	}
	return len(a) - len(b)
}

// utf16First is a rune's first UTF-16 code unit.
func utf16First(r rune) int {
	if r >= 0x10000 {
		return 0xD800 + int((r-0x10000)>>10)
	}
	return int(r)
}

// Extract returns the key at path in a JSON value; ok is false when the
// member is absent, null, an object or an array.
func Extract(value []byte, path []string) (Key, bool) {
	r := gjson.ParseBytes(value)
	for _, name := range path {
		if !r.IsObject() {
			return Key{}, false
		}
		var next gjson.Result
		found := false
		r.ForEach(func(k, v gjson.Result) bool {
			if k.Str == name {
				next, found = v, true
				return false
			}
			return true
		})
		if !found {
			return Key{}, false
		}
		r = next
	}
	switch r.Type {
	case gjson.True:
		return Key{kind: kindBool, b: true}, true
	case gjson.False:
		return Key{kind: kindBool}, true
	case gjson.String:
		return Key{kind: kindString, s: r.Str}, true
	case gjson.Number:
		if !strings.ContainsAny(r.Raw, ".eE") {
			if n, err := strconv.ParseInt(r.Raw, 10, 64); err == nil {
				return Key{kind: kindNumber, isInt: true, i: n, f: float64(n)}, true
			}
		}
		return Key{kind: kindNumber, f: r.Num}, true
	}
	return Key{}, false
}

// item is one index entry: a key and the primary key holding it.
type item struct {
	k   Key
	key string
}

func itemLess(a, b item) bool {
	if c := Compare(a.k, b.k); c != 0 {
		return c < 0
	}
	return a.key < b.key
}

// Index is one secondary index of one region replica. It is not safe for
// concurrent use; the FSM guards it with its lock and hands readers a
// Clone.
type Index struct {
	def  Def
	tree *btree.BTreeG[item]
}

// New returns an empty index.
func New(def Def) *Index {
	return &Index{def: def, tree: btree.NewG(32, itemLess)}
}

// Def returns the index's definition.
func (x *Index) Def() Def { return x.def }

// Len returns the number of indexed entries.
func (x *Index) Len() int { return x.tree.Len() }

// Add indexes an entry's value.
func (x *Index) Add(key string, value []byte) {
	if k, ok := Extract(value, x.def.Path); ok {
		x.tree.ReplaceOrInsert(item{k: k, key: key})
	}
}

// Remove forgets an entry's (previous) value.
func (x *Index) Remove(key string, value []byte) {
	if k, ok := Extract(value, x.def.Path); ok {
		x.tree.Delete(item{k: k, key: key})
	}
}

// Ascend calls fn with every indexed value and the primary key holding
// it, in index order, until fn returns false. It lets a caller check an
// index against its entries.
func (x *Index) Ascend(fn func(value Key, key string) bool) {
	x.tree.Ascend(func(it item) bool { return fn(it.k, it.key) })
}

// Clone returns a copy-on-write copy: O(1) now, and later writes to
// either copy do not show in the other. Like the B-tree's Clone it writes
// to x, so the caller must hold x's write lock.
func (x *Index) Clone() *Index {
	return &Index{def: x.def, tree: x.tree.Clone()}
}

// Range is an interval of keys. A nil bound is open: the interval then
// extends to every key of the other bound's kind (never across kinds, as
// no comparison matches values of another kind).
type Range struct {
	Lo, Hi         any
	LoIncl, HiIncl bool
}

// Point is the range of one value.
func Point(v any) Range { return Range{Lo: v, Hi: v, LoIncl: true, HiIncl: true} }

// Scan calls fn with the primary key of every entry whose indexed value
// lies in one of the ranges, each key once, until fn returns false. ok is
// false when a bound is not a scalar (the caller scans instead).
func (x *Index) Scan(ranges []Range, fn func(key string) bool) (ok bool) {
	type bounds struct {
		lo, hi         Key
		hasLo, hasHi   bool
		loIncl, hiIncl bool
	}
	bs := make([]bounds, len(ranges))
	for i, r := range ranges {
		b := bounds{loIncl: r.LoIncl, hiIncl: r.HiIncl}
		if r.Lo != nil {
			if b.lo, ok = KeyOf(r.Lo); !ok {
				return false
			}
			b.hasLo = true
		}
		if r.Hi != nil {
			if b.hi, ok = KeyOf(r.Hi); !ok {
				return false
			}
			b.hasHi = true
		}
		if !b.hasLo && !b.hasHi {
			return false
		}
		bs[i] = b
	}
	var seen map[string]bool
	if len(ranges) > 1 {
		seen = map[string]bool{}
	}
	for _, b := range bs {
		k := b.lo
		if !b.hasLo {
			k = minOf(b.hi.kind)
		}
		more := true
		x.tree.AscendGreaterOrEqual(item{k: k}, func(it item) bool {
			if it.k.kind != k.kind {
				return false
			}
			if b.hasLo && !b.loIncl && Compare(it.k, b.lo) == 0 {
				return true
			}
			if b.hasHi {
				c := Compare(it.k, b.hi)
				if c > 0 || c == 0 && !b.hiIncl {
					return false
				}
			}
			if seen != nil {
				if seen[it.key] {
					return true
				}
				seen[it.key] = true
			}
			more = fn(it.key)
			return more
		})
		if !more {
			break
		}
	}
	return true
}

// minOf is the smallest key of a kind.
func minOf(k kind) Key {
	switch k {
	case kindNumber:
		return Key{kind: kindNumber, f: math.Inf(-1)}
	case kindString:
		return Key{kind: kindString}
	}
	return Key{kind: kindBool}
}
