package oql

import (
	"bytes"
	"encoding/json"
	"math"
	"strconv"
	"strings"
)

// Result is a query's answer: its rows in order.
type Result struct {
	Rows []Value
}

// MarshalJSON writes the result as the REST API answers it (oql.md §9):
// a JSON array; structs as objects with their fields in projection order;
// stored objects as stored, plus "type-class" = their "@type" when they are
// a row or a row's field; UNDEFINED as null; dates as MM/dd/yyyy.
func (r *Result) MarshalJSON() ([]byte, error) {
	var b bytes.Buffer
	b.WriteByte('[')
	for i, v := range r.Rows {
		if i > 0 {
			b.WriteByte(',')
		}
		writeJSON(&b, v, true)
	}
	b.WriteByte(']')
	return b.Bytes(), nil
}

// writeJSON writes one value; top marks a row or a field of a row, whose
// stored objects get their type-class member.
func writeJSON(b *bytes.Buffer, v Value, top bool) {
	switch x := v.(type) {
	case nil, undefinedValue:
		b.WriteString("null")
	case bool:
		b.WriteString(strconv.FormatBool(x))
	case int64:
		b.WriteString(strconv.FormatInt(x, 10))
	case float64:
		b.WriteString(jsonFloat(formatDouble(x)))
	case float32:
		b.WriteString(jsonFloat(formatFloat32(x)))
	case string:
		writeString(b, x)
	case Temporal:
		writeString(b, formatTemporal(x))
	case Object:
		writeObject(b, x, top)
	case Array:
		b.WriteString(x.raw)
	case List:
		b.WriteByte('[')
		for i, el := range x {
			if i > 0 {
				b.WriteByte(',')
			}
			writeJSON(b, el, false)
		}
		b.WriteByte(']')
	case *Struct:
		b.WriteByte('{')
		for i, n := range x.Names {
			if i > 0 {
				b.WriteByte(',')
			}
			writeString(b, n)
			b.WriteByte(':')
			writeJSON(b, x.Values[i], top)
		}
		b.WriteByte('}')
	case Entry:
		b.WriteString(`{"key":`)
		writeString(b, x.Key)
		b.WriteString(`,"value":`)
		writeJSON(b, x.Value, top)
		b.WriteByte('}')
	case regionValue:
		writeString(b, x.path)
	case regionCollection:
		writeString(b, x.path+"."+x.kind)
	default:
		b.WriteString("null")
	}
}

// writeObject writes a stored object, adding "type-class" after its last
// member when it has a string "@type" and is a whole row or field.
func writeObject(b *bytes.Buffer, o Object, top bool) {
	raw := strings.TrimSpace(o.raw)
	if !top {
		b.WriteString(raw)
		return
	}
	t, ok := o.member("@type").(string)
	if !ok {
		b.WriteString(raw)
		return
	}
	b.WriteString(strings.TrimRight(raw[:len(raw)-1], " \t\r\n"))
	b.WriteString(`,"type-class":`)
	writeString(b, t)
	b.WriteByte('}')
}

func writeString(b *bytes.Buffer, s string) {
	enc, _ := json.Marshal(s) // a string always encodes
	b.Write(enc)
}

// jsonFloat keeps non-finite numbers valid JSON: as strings, the way
// Jackson writes them when asked to.
func jsonFloat(s string) string {
	switch s {
	case "NaN", "Infinity", "-Infinity":
		return `"` + s + `"`
	}
	return s
}

// formatDouble prints a double as Java does: always with a fraction or an
// exponent (4131.0, 516.375, 1.0E10).
func formatDouble(f float64) string { return javaFloat(f, 64) }

// formatFloat32 prints a float with the shortest digits that read back as
// the same float (11497.713).
func formatFloat32(f float32) string { return javaFloat(float64(f), 32) }

func javaFloat(f float64, bits int) string {
	switch {
	case math.IsNaN(f):
		return "NaN"
	case math.IsInf(f, 1):
		return "Infinity"
	case math.IsInf(f, -1):
		return "-Infinity"
	}
	abs := math.Abs(f)
	if abs != 0 && (abs < 1e-3 || abs >= 1e7) {
		s := strconv.FormatFloat(f, 'E', -1, bits)
		mant, exp, _ := strings.Cut(s, "E")
		if !strings.Contains(mant, ".") {
			mant += ".0"
		}
		exp = strings.TrimPrefix(exp, "+")
		return mant + "E" + exp
	}
	s := strconv.FormatFloat(f, 'f', -1, bits)
	if !strings.Contains(s, ".") {
		s += ".0"
	}
	return s
}

// formatTemporal prints a date as Geode's JSON writer does: MM/dd/yyyy.
func formatTemporal(t Temporal) string {
	switch t.Kind {
	case "time":
		return t.T.Format("15:04:05")
	}
	return t.T.Format("01/02/2006")
}
