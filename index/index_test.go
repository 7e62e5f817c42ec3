package index

import (
	"fmt"
	"slices"
	"testing"
)

func TestCompareOrdersLikeOQL(t *testing.T) {
	key := func(v any) Key {
		k, ok := KeyOf(v)
		if !ok {
			t.Fatalf("KeyOf(%v) not a key", v)
		}
		return k
	}
	for _, tc := range []struct {
		a, b any
		want int // sign
	}{
		{int64(5), 5.0, 0},
		{int64(5), 5.5, -1},
		{float32(2.5), 2.5, 0},
		{int64(1) << 62, (int64(1) << 62) + 1, -1}, // integers compare exactly
		{"B", "a", -1},                             // uppercase before lowercase
		{"\U0001F600", "\uFFFD", -1},               // a surrogate pair sorts before U+FFFD, as in Java
		{"ab", "abc", -1},
		{false, true, -1},
		{true, int64(0), -1}, // kinds: booleans, numbers, strings
		{int64(99), "1", -1},
	} {
		got := Compare(key(tc.a), key(tc.b))
		if sign(got) != tc.want || sign(Compare(key(tc.b), key(tc.a))) != -tc.want {
			t.Errorf("Compare(%v, %v) = %d, want sign %d (and the opposite reversed)", tc.a, tc.b, got, tc.want)
		}
	}
	if _, ok := KeyOf(nil); ok {
		t.Error("null is a key")
	}
}

func sign(n int) int {
	switch {
	case n < 0:
		return -1
	case n > 0:
		return 1
	}
	return 0
}

func TestScanRanges(t *testing.T) {
	x := New(Def{Name: "v", Path: []string{"a", "v"}})
	for i := range 10 {
		x.Add(fmt.Sprintf("n%d", i), fmt.Appendf(nil, `{"a":{"v":%d}}`, i))
		x.Add(fmt.Sprintf("s%d", i), fmt.Appendf(nil, `{"a":{"v":"%d"}}`, i))
	}
	x.Add("f", []byte(`{"a":{"v":4.5}}`))
	x.Add("t", []byte(`{"a":{"v":true}}`))
	for _, skip := range []string{`{"a":{"v":null}}`, `{"a":{}}`, `{"a":{"v":[1]}}`, `{"a":{"v":{"x":1}}}`, `{"a":5}`} {
		x.Add("skip", []byte(skip))
	}
	x.Add("moved", []byte(`{"a":{"v":7}}`))
	x.Remove("moved", []byte(`{"a":{"v":7}}`))
	scan := func(rs ...Range) []string {
		var out []string
		if !x.Scan(rs, func(k string) bool { out = append(out, k); return true }) {
			t.Fatalf("Scan(%v) refused", rs)
		}
		return out
	}
	for _, tc := range []struct {
		name   string
		ranges []Range
		want   []string
	}{
		{"point across number kinds", []Range{Point(4.0)}, []string{"n4"}},
		{"closed-open", []Range{{Lo: int64(4), LoIncl: true, Hi: int64(6)}}, []string{"n4", "f", "n5"}},
		{"open below stays with numbers", []Range{{Hi: int64(2)}}, []string{"n0", "n1"}},
		{"open above stays with numbers", []Range{{Lo: int64(8)}}, []string{"n9"}},
		{"strings only", []Range{{Lo: "7", LoIncl: true}}, []string{"s7", "s8", "s9"}},
		{"several points, each key once", []Range{Point(int64(3)), Point("3"), Point(int64(3))}, []string{"n3", "s3"}},
		{"booleans", []Range{Point(true)}, []string{"t"}},
	} {
		if got := scan(tc.ranges...); !slices.Equal(got, tc.want) {
			t.Errorf("%s: got %v, want %v", tc.name, got, tc.want)
		}
	}
	if x.Len() != 22 {
		t.Errorf("Len = %d, want 22 (nulls, absent members, arrays and objects are not indexed)", x.Len())
	}
	if x.Scan([]Range{{}}, func(string) bool { return true }) {
		t.Error("a range open at both ends was served; it must fall back to a scan")
	}
}

func TestAscendListsEveryItemInOrder(t *testing.T) {
	x := New(Def{Name: "i", Path: []string{"v"}})
	x.Add("c", []byte(`{"v":"b"}`))
	x.Add("a", []byte(`{"v":2}`))
	x.Add("b", []byte(`{"v":2}`))
	x.Add("d", []byte(`{"v":true}`))
	x.Add("e", []byte(`{"v":null}`))
	var got []string
	x.Ascend(func(v Key, key string) bool {
		got = append(got, key)
		return true
	})
	if want := []string{"d", "a", "b", "c"}; !slices.Equal(got, want) {
		t.Fatalf("Ascend = %v, want %v (booleans, numbers, strings; ties by key)", got, want)
	}
	n := 0
	x.Ascend(func(Key, string) bool { n++; return n < 2 })
	if n != 2 {
		t.Fatalf("Ascend went on after fn returned false: %d calls", n)
	}
}
