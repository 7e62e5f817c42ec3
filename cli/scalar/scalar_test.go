package scalar

import (
	"strings"
	"testing"
)

func TestSubstituteBinds(t *testing.T) {
	s := func(typ, text string) Value { return Value{typ: typ, text: text} }
	for _, tc := range []struct {
		text  string
		binds []Value
		want  string
	}{
		{"SELECT * FROM /o o WHERE o.a = $1 AND o.b = $2", []Value{s("int", "5"), s("string", "x")},
			"SELECT * FROM /o o WHERE o.a = 5 AND o.b = 'x'"},
		{"SELECT $2, $1, $2", []Value{s("long", "-1"), s("boolean", "TRUE")}, "SELECT true, (-1), true"},
		// Text, not parameters: a string literal (with a doubled quote), a
		// quoted name, a line comment, a block comment.
		{"SELECT 'it''s $1', \"$1\" FROM /o -- $1\nWHERE x = $1 /* $1 */", []Value{s("int", "7")},
			"SELECT 'it''s $1', \"$1\" FROM /o -- $1\nWHERE x = 7 /* $1 */"},
		{"x = $10", []Value{s("int", "1"), s("int", "2"), s("int", "3"), s("int", "4"), s("int", "5"),
			s("int", "6"), s("int", "7"), s("int", "8"), s("int", "9"), s("int", "10")}, "x = 10"},
		{"x = $1", []Value{s("string", "a'b")}, "x = 'a''b'"},
		{"x = $1", []Value{s("long", "3000000000")}, "x = 3000000000L"},
		{"x = $1", []Value{s("double", "2")}, "x = 2d"},
		{"x = $1", []Value{s("double", "-0.5")}, "x = (-0.5)"},
		{"x = $1", []Value{s("float", "0.1")}, "x = 0.1f"},
		{"SELECT 1", nil, "SELECT 1"},
		{"an unterminated 'string $1", nil, "an unterminated 'string $1"},
	} {
		got, err := Substitute(tc.text, tc.binds)
		if err != nil || got != tc.want {
			t.Errorf("Substitute(%q) = %q, %v; want %q", tc.text, got, err, tc.want)
		}
	}
	for _, tc := range []struct {
		text  string
		binds int
		want  string
	}{
		{"x = $2", 1, "uses $2 but 1"},
		{"x = $1", 2, "go up to $1"},
		{"x = '$1'", 1, "go up to $0"},
	} {
		binds := make([]Value, tc.binds)
		for i := range binds {
			binds[i] = s("int", "1")
		}
		_, err := Substitute(tc.text, binds)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Substitute(%q, %d values) error = %v, want %q", tc.text, tc.binds, err, tc.want)
		}
	}
}

func TestParseScalar(t *testing.T) {
	for _, in := range []string{"int:5", "INT:-5", "java.lang.String:a:b", "string:", "boolean:False", "byte:127", "short:-32768",
		"long:9223372036854775807", "float:1e38", "double:1e308"} {
		if _, err := Parse("bind", in); err != nil {
			t.Errorf("Parse(%q): %v", in, err)
		}
	}
	for _, in := range []string{"5", "int:", "int:2147483648", "byte:128", "int:0x10", "float:1e39", "double:NaN",
		"double:Inf", "boolean:yes", "Integer:5", "char:a"} {
		if _, err := Parse("bind", in); err == nil {
			t.Errorf("Parse(%q) succeeded, want an error", in)
		}
	}
}
