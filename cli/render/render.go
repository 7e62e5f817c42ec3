// Package render is how the client commands show answers to people:
// aligned tables, JSON values as cells, arrays of results as rows. It
// imports nothing of kvnode (imports_test.go).
package render

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"
	"unicode"
)

// Table is aligned columns under an upper-case header.
type Table struct {
	w *tabwriter.Writer
}

// NewTable is a table writing to out, with its header row.
func NewTable(out io.Writer, header ...string) *Table {
	t := &Table{w: tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)}
	t.Row(header...)
	return t
}

// Row adds a row; a cell that would break the layout (a tab, a newline,
// another control character) is written quoted.
func (t *Table) Row(cells ...string) {
	for i, c := range cells {
		if c == "" {
			c = "-"
		}
		if strings.ContainsFunc(c, unicode.IsControl) {
			c = strconv.Quote(c)
		}
		if i > 0 {
			_, _ = io.WriteString(t.w, "\t")
		}
		_, _ = io.WriteString(t.w, c)
	}
	_, _ = io.WriteString(t.w, "\n")
}

// Flush writes the table out.
func (t *Table) Flush() error { return t.w.Flush() }

// Cell is a JSON value as a table shows it: a string's text (the empty
// string quoted, as "-" is an absent one), anything else compact JSON.
func Cell(v json.RawMessage) string {
	v = bytes.TrimSpace(v)
	if len(v) > 0 && v[0] == '"' {
		var s string
		if json.Unmarshal(v, &s) == nil && s != "" {
			return s
		}
	}
	var b bytes.Buffer
	if json.Compact(&b, v) != nil {
		return string(v)
	}
	return b.String()
}

// member is one member of a JSON object, in the order it came.
type member struct {
	name  string
	value json.RawMessage
}

// objectMembers splits a JSON object into its members in their order; ok
// is false when v is not an object.
func objectMembers(v json.RawMessage) (members []member, ok bool) {
	dec := json.NewDecoder(bytes.NewReader(v))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return nil, false
	}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, false
		}
		name, _ := tok.(string)
		var value json.RawMessage
		if err := dec.Decode(&value); err != nil {
			return nil, false
		}
		members = append(members, member{name, value})
	}
	return members, true
}

// Rows prints a JSON array of results (a query's rows, a function's
// results): when every row is an object, a column per member name in the
// order they first appear; else one RESULT column.
func Rows(out io.Writer, body []byte) error {
	var rows []json.RawMessage
	if err := json.Unmarshal(body, &rows); err != nil {
		return fmt.Errorf("the answer is not a JSON array: %w", err)
	}
	if len(rows) == 0 {
		_, err := fmt.Fprintln(out, "(no results)")
		return err
	}
	var columns []string
	index := map[string]int{}
	objects := make([][]member, len(rows))
	for i, r := range rows {
		ms, ok := objectMembers(r)
		if !ok {
			objects = nil
			break
		}
		objects[i] = ms
		for _, m := range ms {
			if _, seen := index[m.name]; !seen {
				index[m.name] = len(columns)
				columns = append(columns, m.name)
			}
		}
	}
	if objects == nil || len(columns) == 0 {
		t := NewTable(out, "RESULT")
		for _, r := range rows {
			t.Row(Cell(r))
		}
		return t.Flush()
	}
	t := NewTable(out, columns...)
	for _, ms := range objects {
		cells := make([]string, len(columns))
		for _, m := range ms {
			cells[index[m.name]] = Cell(m.value)
		}
		t.Row(cells...)
	}
	return t.Flush()
}
