package render

import (
	"bytes"
	"testing"
)

func TestRowsTable(t *testing.T) {
	for _, tc := range []struct{ body, want string }{
		{`[{"a":1,"b":"x"},{"b":"y\tz","c":{"d":[1]}},{"a":""}]`,
			"a   b       c\n1   x       -\n-   \"y\\tz\"  {\"d\":[1]}\n\"\"  -       -\n"},
		{`[1,"two",null,{"a":1}]`, "RESULT\n1\ntwo\nnull\n{\"a\":1}\n"},
		{`[]`, "(no results)\n"},
		{`[{}]`, "RESULT\n{}\n"},
	} {
		var b bytes.Buffer
		if err := Rows(&b, []byte(tc.body)); err != nil || b.String() != tc.want {
			t.Errorf("Rows(%s) =\n%s(%v)\nwant\n%s", tc.body, b.String(), err, tc.want)
		}
	}
	if err := Rows(&bytes.Buffer{}, []byte(`{"a":1}`)); err == nil {
		t.Errorf("rowsTable of an object succeeded, want an error")
	}
}
