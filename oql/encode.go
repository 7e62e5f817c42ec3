package oql

import (
	"bytes"
	"fmt"
	"strconv"
	"time"

	"github.com/tidwall/gjson"
)

// EncodePartial writes a Partial for the wire (a partition group's replica
// sends it to the coordinator). Values keep their exact kinds: an int
// stays an int, a float a float, UNDEFINED stays UNDEFINED.
//
// The format is JSON: a value is null, true/false, a string, or a tagged
// array ["i", 5], ["d", "1.5"], ["f", "1.5"], ["u"], ["o", {..}], ["a", [..]],
// ["l", [..]], ["s", [names], [values]], ["e", key, value], ["t", time, kind],
// ["r", path], ["c", path, kind].
func EncodePartial(p *Partial) []byte {
	var b bytes.Buffer
	b.WriteString(`{"rows":[`)
	for i, r := range p.Rows {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteByte('[')
		encodeValue(&b, r.Value)
		b.WriteByte(',')
		encodeValues(&b, r.Keys)
		b.WriteByte(']')
	}
	b.WriteString(`],"groups":[`)
	for i, g := range p.Groups {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteByte('[')
		encodeValues(&b, g.Keys)
		b.WriteString(",[")
		for j, s := range g.States {
			if j > 0 {
				b.WriteByte(',')
			}
			fmt.Fprintf(&b, `[%d,%q,`, s.Count, strconv.FormatFloat(s.Sum, 'g', -1, 64))
			if s.Best == nil {
				b.WriteString("null")
			} else {
				encodeValue(&b, s.Best)
			}
			b.WriteString(",[")
			n := 0
			for _, v := range s.Distinct {
				if n > 0 {
					b.WriteByte(',')
				}
				encodeValue(&b, v)
				n++
			}
			b.WriteString("]]")
		}
		b.WriteString("]]")
	}
	b.WriteString("]}")
	return b.Bytes()
}

func encodeValues(b *bytes.Buffer, vs []Value) {
	b.WriteByte('[')
	for i, v := range vs {
		if i > 0 {
			b.WriteByte(',')
		}
		encodeValue(b, v)
	}
	b.WriteByte(']')
}

func encodeValue(b *bytes.Buffer, v Value) {
	switch x := v.(type) {
	case nil:
		b.WriteString("null")
	case undefinedValue:
		b.WriteString(`["u"]`)
	case bool:
		b.WriteString(strconv.FormatBool(x))
	case string:
		writeString(b, x)
	case int64:
		b.WriteString(`["i",` + strconv.FormatInt(x, 10) + "]")
	case float64:
		b.WriteString(`["d","` + strconv.FormatFloat(x, 'g', -1, 64) + `"]`)
	case float32:
		b.WriteString(`["f","` + strconv.FormatFloat(float64(x), 'g', -1, 32) + `"]`)
	case Temporal:
		b.WriteString(`["t",`)
		writeString(b, x.T.Format(time.RFC3339Nano))
		b.WriteByte(',')
		writeString(b, x.Kind)
		b.WriteByte(']')
	case Object:
		b.WriteString(`["o",` + x.raw + "]")
	case Array:
		b.WriteString(`["a",` + x.raw + "]")
	case List:
		b.WriteString(`["l",`)
		encodeValues(b, x)
		b.WriteByte(']')
	case *Struct:
		b.WriteString(`["s",[`)
		for i, n := range x.Names {
			if i > 0 {
				b.WriteByte(',')
			}
			writeString(b, n)
		}
		b.WriteString("],")
		encodeValues(b, x.Values)
		b.WriteByte(']')
	case Entry:
		b.WriteString(`["e",`)
		writeString(b, x.Key)
		b.WriteByte(',')
		encodeValue(b, x.Value)
		b.WriteByte(']')
	case regionValue:
		b.WriteString(`["r",`)
		writeString(b, x.path)
		b.WriteByte(']')
	case regionCollection:
		b.WriteString(`["c",`)
		writeString(b, x.path)
		b.WriteByte(',')
		writeString(b, x.kind)
		b.WriteByte(']')
	default:
		b.WriteString("null")
	}
}

// DecodePartial reads what EncodePartial wrote.
func DecodePartial(data []byte) (*Partial, error) {
	if !gjson.ValidBytes(data) {
		return nil, fmt.Errorf("oql: partial result is not valid JSON")
	}
	root := gjson.ParseBytes(data)
	p := &Partial{}
	var err error
	root.Get("rows").ForEach(func(_, r gjson.Result) bool {
		parts := r.Array()
		if len(parts) != 2 {
			err = fmt.Errorf("oql: malformed partial row")
			return false
		}
		var row Row
		if row.Value, err = decodeValue(parts[0]); err != nil {
			return false
		}
		if row.Keys, err = decodeValues(parts[1]); err != nil {
			return false
		}
		p.Rows = append(p.Rows, row)
		return true
	})
	if err != nil {
		return nil, err
	}
	root.Get("groups").ForEach(func(_, g gjson.Result) bool {
		parts := g.Array()
		if len(parts) != 2 {
			err = fmt.Errorf("oql: malformed partial group")
			return false
		}
		var grp Group
		if grp.Keys, err = decodeValues(parts[0]); err != nil {
			return false
		}
		for _, s := range parts[1].Array() {
			f := s.Array()
			if len(f) != 4 {
				err = fmt.Errorf("oql: malformed aggregate state")
				return false
			}
			st := AggState{Count: f[0].Int()}
			if st.Sum, err = strconv.ParseFloat(f[1].Str, 64); err != nil {
				return false
			}
			if f[2].Type != gjson.Null {
				if st.Best, err = decodeValue(f[2]); err != nil {
					return false
				}
			}
			for _, d := range f[3].Array() {
				v, derr := decodeValue(d)
				if derr != nil {
					err = derr
					return false
				}
				if st.Distinct == nil {
					st.Distinct = map[string]Value{}
				}
				st.Distinct[canonicalKey(normalizeNumber(v))] = v
			}
			grp.States = append(grp.States, st)
		}
		p.Groups = append(p.Groups, grp)
		return true
	})
	if err != nil {
		return nil, err
	}
	return p, nil
}

func decodeValues(r gjson.Result) ([]Value, error) {
	var out []Value
	for _, el := range r.Array() {
		v, err := decodeValue(el)
		if err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	return out, nil
}

func decodeValue(r gjson.Result) (Value, error) {
	switch r.Type {
	case gjson.Null:
		return nil, nil
	case gjson.True:
		return true, nil
	case gjson.False:
		return false, nil
	case gjson.String:
		return r.Str, nil
	}
	if !r.IsArray() {
		return nil, fmt.Errorf("oql: malformed partial value %s", r.Raw)
	}
	f := r.Array()
	if len(f) == 0 {
		return nil, fmt.Errorf("oql: malformed partial value %s", r.Raw)
	}
	bad := fmt.Errorf("oql: malformed partial value %s", r.Raw)
	arg := func(i int) gjson.Result {
		if i < len(f) {
			return f[i]
		}
		return gjson.Result{}
	}
	switch f[0].Str {
	case "u":
		return Undefined, nil
	case "i":
		n, err := strconv.ParseInt(arg(1).Raw, 10, 64)
		if err != nil {
			return nil, bad
		}
		return n, nil
	case "d":
		x, err := strconv.ParseFloat(arg(1).Str, 64)
		if err != nil {
			return nil, bad
		}
		return x, nil
	case "f":
		x, err := strconv.ParseFloat(arg(1).Str, 32)
		if err != nil {
			return nil, bad
		}
		return float32(x), nil
	case "t":
		t, err := time.Parse(time.RFC3339Nano, arg(1).Str)
		if err != nil {
			return nil, bad
		}
		return Temporal{T: t, Kind: arg(2).Str}, nil
	case "o":
		return Object{raw: arg(1).Raw}, nil
	case "a":
		return Array{raw: arg(1).Raw}, nil
	case "l":
		vs, err := decodeValues(arg(1))
		return List(vs), err
	case "s":
		var names []string
		for _, n := range arg(1).Array() {
			names = append(names, n.Str)
		}
		vals, err := decodeValues(arg(2))
		if err != nil || len(vals) != len(names) {
			return nil, bad
		}
		return &Struct{Names: names, Values: vals}, nil
	case "e":
		v, err := decodeValue(arg(2))
		if err != nil {
			return nil, err
		}
		return Entry{Key: arg(1).Str, Value: v}, nil
	case "r":
		return regionValue{path: arg(1).Str}, nil
	case "c":
		return regionCollection{path: arg(1).Str, kind: arg(2).Str}, nil
	}
	return nil, bad
}

// EncodeParams writes bind values for the wire, keeping their kinds.
func EncodeParams(params []any) []byte {
	var b bytes.Buffer
	b.WriteByte('[')
	for i, p := range params {
		if i > 0 {
			b.WriteByte(',')
		}
		v, err := paramValue(p)
		if err != nil {
			v = nil
		}
		encodeValue(&b, v)
	}
	b.WriteByte(']')
	return b.Bytes()
}

// DecodeParams reads what EncodeParams wrote.
func DecodeParams(data []byte) ([]any, error) {
	if len(bytes.TrimSpace(data)) == 0 {
		return nil, nil
	}
	if !gjson.ValidBytes(data) {
		return nil, fmt.Errorf("oql: bind values are not valid JSON")
	}
	vals, err := decodeValues(gjson.ParseBytes(data))
	if err != nil {
		return nil, err
	}
	out := make([]any, len(vals))
	for i, v := range vals {
		out[i] = v
	}
	return out, nil
}
