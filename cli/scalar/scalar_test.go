package scalar

import "testing"

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
