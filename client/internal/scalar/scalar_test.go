package scalar

import (
	"errors"
	"testing"
)

func TestSubstitute(t *testing.T) {
	type v struct {
		typ, text string
		null      bool
	}
	for _, tc := range []struct {
		text  string
		binds []v
		want  string
	}{
		{"SELECT * FROM /o o WHERE o.a = $1 AND o.b = $2", []v{{"long", "5", false}, {"string", "x", false}},
			"SELECT * FROM /o o WHERE o.a = 5 AND o.b = 'x'"},
		{"SELECT $2, $1, $2", []v{{"long", "-1", false}, {"boolean", "TRUE", false}}, "SELECT true, (-1), true"},
		// Text, not parameters: a string literal (with a doubled quote), a
		// quoted name, a line comment, a block comment.
		{"SELECT 'it''s $1', \"$1\" FROM /o -- $1\nWHERE x = $1 /* $1 */", []v{{"int", "7", false}},
			"SELECT 'it''s $1', \"$1\" FROM /o -- $1\nWHERE x = 7 /* $1 */"},
		{"x = $1", []v{{"string", "a'b", false}}, "x = 'a''b'"},
		{"x = $1", []v{{"long", "3000000000", false}}, "x = 3000000000L"},
		{"x = $1", []v{{"long", "-9223372036854775808", false}}, "x = (-9223372036854775807L - 1)"},
		{"x = $1", []v{{"double", "2", false}}, "x = 2d"},
		{"x = $1", []v{{"double", "-0.5", false}}, "x = (-0.5)"},
		{"x = $1", []v{{"java.lang.Float", "0.1", false}}, "x = 0.1f"},
		{"x = $1", []v{{"string", "", true}}, "x = NULL"},
		{"x = $0 AND $x", nil, "x = $0 AND $x"},
		{"an unterminated 'string $1", nil, "an unterminated 'string $1"},
		{"an unterminated /* comment $1", nil, "an unterminated /* comment $1"},
	} {
		got, err := Substitute(tc.text, len(tc.binds), func(i int) (string, error) {
			return Literal(tc.binds[i].typ, tc.binds[i].text, tc.binds[i].null)
		})
		if err != nil || got != tc.want {
			t.Errorf("Substitute(%q) = %q, %v; want %q", tc.text, got, err, tc.want)
		}
	}
	for _, tc := range []struct {
		text string
		typ  string
		val  string
	}{
		{"x = $2", "int", "1"},  // a parameter past the values
		{"x = 1", "int", "1"},   // a value no parameter uses
		{"x = $1", "int", "x"},  // not an int
		{"x = $1", "date", "1"}, // not a type
		{"x = $1", "double", "NaN"},
	} {
		_, err := Substitute(tc.text, 1, func(int) (string, error) { return Literal(tc.typ, tc.val, false) })
		if !errors.Is(err, ErrInvalid) {
			t.Errorf("Substitute(%q, %s:%s) = %v, want ErrInvalid", tc.text, tc.typ, tc.val, err)
		}
	}
}

func TestOf(t *testing.T) {
	for _, tc := range []struct {
		v         any
		typ, text string
	}{
		{5, "long", "5"}, {int32(5), "int", "5"}, {int16(-5), "short", "-5"}, {int8(5), "byte", "5"},
		{2.5, "double", "2.5"}, {float32(0.1), "float", "0.1"}, {"x", "string", "x"}, {true, "boolean", "true"},
	} {
		typ, text, null, ok := Of(tc.v)
		if typ != tc.typ || text != tc.text || null || !ok {
			t.Errorf("Of(%#v) = %s %q %v %v", tc.v, typ, text, null, ok)
		}
	}
	if _, _, null, ok := Of(nil); !null || !ok {
		t.Error("Of(nil) is not null")
	}
	if _, _, _, ok := Of([]int{1}); ok {
		t.Error("Of(a slice) is a scalar")
	}
}
