package oql

import (
	"strconv"
	"strings"
	"unicode/utf16"
)

// attribute reads v.name (oql.md §3): a JSON object's member, a region's
// properties and collections, an entry's key and value, a struct's field;
// on strings and collections the attribute spelling of a no-argument
// method (o.items.size, o.contact.length) calls it. Anything else, and any
// attribute of null or UNDEFINED, is UNDEFINED.
func attribute(e *env, v Value, name string) (Value, error) {
	switch x := v.(type) {
	case Object:
		return x.member(name), nil
	case nil, undefinedValue:
		return Undefined, nil
	case Entry:
		switch name {
		case "key":
			return x.Key, nil
		case "value":
			return x.Value, nil
		}
		return Undefined, nil
	case *Struct:
		for i, n := range x.Names {
			if n == name {
				return x.Values[i], nil
			}
		}
		return Undefined, nil
	case regionValue:
		switch name {
		case "values":
			return regionCollection{path: x.path, kind: "values"}, nil
		case "keySet", "keys":
			return regionCollection{path: x.path, kind: "keys"}, nil
		case "entrySet", "entries":
			return regionCollection{path: x.path, kind: "entries"}, nil
		case "name":
			return x.path[strings.LastIndexByte(x.path, '/')+1:], nil
		case "fullPath":
			return x.path, nil
		}
	}
	if isNoArgMethod(name) {
		return callMethod(e, v, name, nil)
	}
	return Undefined, nil
}

// isNoArgMethod lists the methods that may be written as attributes.
func isNoArgMethod(name string) bool {
	switch name {
	case "size", "isEmpty", "length", "toUpperCase", "toLowerCase", "trim", "toString",
		"intValue", "longValue", "doubleValue", "floatValue":
		return true
	}
	return false
}

// callMethod calls a Java method on the runtime value (oql.md §5): a null
// receiver or an UNDEFINED argument gives UNDEFINED, an unknown method
// UNDEFINED, and any method on a JSON object is an error.
func callMethod(e *env, recv Value, name string, args []Value) (Value, error) {
	switch recv.(type) {
	case nil, undefinedValue:
		return Undefined, nil
	case Object:
		return nil, errorf("method %s() cannot be called on a JSON object", name)
	}
	for _, a := range args {
		if _, ok := a.(undefinedValue); ok {
			return Undefined, nil
		}
	}
	switch r := recv.(type) {
	case string:
		return stringMethod(r, name, args)
	case Array, List, regionCollection:
		return collectionMethod(e, r, name, args)
	case regionValue:
		switch name {
		case "size", "isEmpty":
			n, err := e.src.Size(e.ctx, r.path)
			if err != nil {
				return nil, err
			}
			if name == "size" {
				return int64(n), nil
			}
			return n == 0, nil
		case "get", "containsKey":
			if len(args) != 1 {
				break
			}
			k, ok := args[0].(string)
			if !ok {
				if name == "get" {
					return nil, nil
				}
				return false, nil
			}
			raw, found, err := e.src.Get(e.ctx, r.path, k)
			if err != nil {
				return nil, err
			}
			if name == "containsKey" {
				return found, nil
			}
			if !found {
				return nil, nil
			}
			return storedValue(e.src, raw), nil
		}
		if len(args) == 0 {
			return attribute(e, r, name)
		}
	case Entry:
		switch name {
		case "getKey":
			return r.Key, nil
		case "getValue":
			return r.Value, nil
		}
	case int64, float64, float32:
		switch name {
		case "intValue", "longValue":
			if n, ok := r.(int64); ok {
				return n, nil
			}
			return int64(toFloat(r)), nil
		case "doubleValue":
			return toFloat(r), nil
		case "floatValue":
			return float32(toFloat(r)), nil
		case "toString":
			return displayString(r), nil
		}
	case bool:
		if name == "toString" {
			return strconv.FormatBool(r), nil
		}
	}
	return Undefined, nil
}

// stringMethod implements the java.lang.String methods queries use.
// Positions are in UTF-16 code units, as in Java.
func stringMethod(s, name string, args []Value) (Value, error) {
	u := utf16.Encode([]rune(s))
	str := func(i int) (string, bool) {
		if i < len(args) {
			v, ok := args[i].(string)
			return v, ok
		}
		return "", false
	}
	integer := func(i int) (int, bool) {
		if i < len(args) {
			v, ok := args[i].(int64)
			return int(v), ok
		}
		return 0, false
	}
	switch len(args) {
	case 0:
		switch name {
		case "length":
			return int64(len(u)), nil
		case "toUpperCase":
			return strings.ToUpper(s), nil
		case "toLowerCase":
			return strings.ToLower(s), nil
		case "trim":
			return strings.TrimFunc(s, func(r rune) bool { return r <= ' ' }), nil
		case "isEmpty":
			return s == "", nil
		case "toString", "intern":
			return s, nil
		case "hashCode":
			var h int32
			for _, c := range u {
				h = 31*h + int32(c)
			}
			return int64(h), nil
		}
	case 1:
		if a, ok := str(0); ok {
			switch name {
			case "startsWith":
				return strings.HasPrefix(s, a), nil
			case "endsWith":
				return strings.HasSuffix(s, a), nil
			case "contains":
				return strings.Contains(s, a), nil
			case "equals":
				return s == a, nil
			case "equalsIgnoreCase":
				return strings.EqualFold(s, a), nil
			case "indexOf":
				return int64(utf16Index(u, utf16.Encode([]rune(a)), 0)), nil
			case "lastIndexOf":
				return int64(utf16LastIndex(u, utf16.Encode([]rune(a)))), nil
			case "concat":
				return s + a, nil
			case "compareTo":
				return int64(compareStrings(s, a)), nil
			case "matches":
				return nil, errorf("String.matches is not supported; use LIKE")
			}
		}
		if a, ok := integer(0); ok {
			switch name {
			case "substring":
				if a < 0 || a > len(u) {
					return nil, errorf("substring(%d) out of range for a string of length %d", a, len(u))
				}
				return string(utf16.Decode(u[a:])), nil
			case "charAt":
				if a < 0 || a >= len(u) {
					return nil, errorf("charAt(%d) out of range for a string of length %d", a, len(u))
				}
				return string(utf16.Decode(u[a : a+1])), nil
			}
		}
		if args[0] == nil {
			return nil, errorf("String.%s(null): a null argument", name)
		}
	case 2:
		if a, ok := integer(0); ok {
			if b, ok := integer(1); ok && name == "substring" {
				if a < 0 || b > len(u) || a > b {
					return nil, errorf("substring(%d, %d) out of range for a string of length %d", a, b, len(u))
				}
				return string(utf16.Decode(u[a:b])), nil
			}
		}
		if a, ok := str(0); ok {
			if b, ok := integer(1); ok && name == "indexOf" {
				return int64(utf16Index(u, utf16.Encode([]rune(a)), b)), nil
			}
			if b, ok := str(1); ok && name == "replace" {
				return strings.ReplaceAll(s, a, b), nil
			}
		}
	}
	return Undefined, nil
}

func utf16Index(s, sub []uint16, from int) int {
	if from < 0 {
		from = 0
	}
	for i := from; i+len(sub) <= len(s); i++ {
		if equalU16(s[i:i+len(sub)], sub) {
			return i
		}
	}
	return -1
}

func utf16LastIndex(s, sub []uint16) int {
	for i := len(s) - len(sub); i >= 0; i-- {
		if equalU16(s[i:i+len(sub)], sub) {
			return i
		}
	}
	return -1
}

func equalU16(a, b []uint16) bool {
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// collectionMethod implements java.util.List methods on JSON arrays and
// engine collections.
func collectionMethod(e *env, c Value, name string, args []Value) (Value, error) {
	switch name {
	case "size", "isEmpty":
		n := 0
		switch x := c.(type) {
		case Array:
			n = x.size()
		case List:
			n = len(x)
		case regionCollection:
			m, err := e.src.Size(e.ctx, x.path)
			if err != nil {
				return nil, err
			}
			n = m
		}
		if name == "size" {
			return int64(n), nil
		}
		return n == 0, nil
	case "get":
		if len(args) == 1 {
			return indexValue(e, c, args[0])
		}
	case "contains":
		if len(args) == 1 {
			return in(e, args[0], c)
		}
	}
	return Undefined, nil
}

// indexValue is v[i]: a list position (0-based, out of range is an error), a
// map member, or a region key.
func indexValue(e *env, v, i Value) (Value, error) {
	switch x := v.(type) {
	case nil, undefinedValue:
		return Undefined, nil
	case Array, List:
		n, ok := i.(int64)
		if !ok {
			return nil, errorf("a list index must be an integer, got %s", typeName(i))
		}
		var els []Value
		if a, isArr := x.(Array); isArr {
			els = a.elements()
		} else {
			els = x.(List)
		}
		if n < 0 || n >= int64(len(els)) {
			return nil, errorf("index %d out of range for a list of %d elements", n, len(els))
		}
		return els[n], nil
	case Object:
		k, ok := i.(string)
		if !ok {
			return nil, nil
		}
		m := x.member(k)
		if _, u := m.(undefinedValue); u {
			return nil, nil
		}
		return m, nil
	case regionValue:
		return callMethod(e, x, "get", []Value{i})
	}
	return nil, errorf("cannot index a %s", typeName(v))
}

// displayString is a value as Java's toString would print it.
func displayString(v Value) string {
	switch x := v.(type) {
	case int64:
		return strconv.FormatInt(x, 10)
	case float64:
		return formatDouble(x)
	case float32:
		return formatFloat32(x)
	case string:
		return x
	}
	return canonicalKey(v)
}
