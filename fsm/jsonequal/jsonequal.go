// Package jsonequal decides whether two JSON values are equal in the sense
// of a compare-and-set, as Geode's REST API (Jackson's JsonNode.equals)
// has it. The state machine's CAS and the store's pre-check of a CAS
// spanning partition groups must agree byte for byte, so both use it.
//
// It is pure and imports nothing of kvnode.
package jsonequal

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"math"
	"math/big"
	"strconv"
	"strings"
)

// Equal reports whether a and b are equal JSON values in the sense of a
// compare-and-set: the sense Geode users know from Jackson's JsonNode.equals.
//
//   - Objects are equal when they have the same member names with equal
//     values; member order does not matter. (A duplicate member name counts
//     once, with its last value, as when Jackson builds a tree.)
//   - Arrays are equal element by element.
//   - Strings are equal when their decoded text is ("\u00e9" equals "é").
//   - Numbers must be of the same kind and value. A literal without '.', 'e'
//     or 'E' is an integer and never equals a decimal (1 != 1.0, as IntNode
//     never equals DoubleNode). Integers compare exactly at any size.
//     Decimals compare as float64 values (1.0 == 1.00, 1e2 == 100.0), with
//     Java's Double.compare, which Jackson's DoubleNode.equals uses: 0.0 and
//     -0.0 differ.
//   - true, false and null equal only themselves.
//
// Invalid JSON (including trailing data) is never equal to anything, not
// even to identical bytes; Equal never panics.
func Equal(a, b []byte) bool {
	if bytes.Equal(a, b) {
		// Identical bytes parse to identical trees: only validity is left.
		return json.Valid(a)
	}
	va, ok := parseJSON(a)
	if !ok {
		return false
	}
	vb, ok := parseJSON(b)
	if !ok {
		return false
	}
	return equalValues(va, vb)
}

// parseJSON decodes exactly one JSON value, keeping number literals as text.
func parseJSON(b []byte) (any, bool) {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, false
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, false // trailing data
	}
	return v, true
}

// equalValues compares trees produced by parseJSON. The result does not
// depend on map iteration order: it is true only if every member matches.
func equalValues(a, b any) bool {
	switch x := a.(type) {
	case map[string]any:
		y, ok := b.(map[string]any)
		if !ok || len(x) != len(y) {
			return false
		}
		for name, xv := range x {
			yv, ok := y[name]
			if !ok || !equalValues(xv, yv) {
				return false
			}
		}
		return true
	case []any:
		y, ok := b.([]any)
		if !ok || len(x) != len(y) {
			return false
		}
		for i := range x {
			if !equalValues(x[i], y[i]) {
				return false
			}
		}
		return true
	case string:
		y, ok := b.(string)
		return ok && x == y
	case json.Number:
		y, ok := b.(json.Number)
		return ok && equalNumbers(string(x), string(y))
	case bool:
		y, ok := b.(bool)
		return ok && x == y
	case nil:
		return b == nil
	}
	return false
}

// equalNumbers compares two valid JSON number literals (see Equal).
func equalNumbers(a, b string) bool {
	aInt, bInt := isIntegerLiteral(a), isIntegerLiteral(b)
	if aInt != bInt {
		return false
	}
	if aInt {
		return equalIntegers(a, b)
	}
	fa, okA := parseDecimal(a)
	fb, okB := parseDecimal(b)
	return okA && okB && math.Float64bits(fa) == math.Float64bits(fb)
}

func isIntegerLiteral(s string) bool { return !strings.ContainsAny(s, ".eE") }

// equalIntegers compares integer literals exactly: as int64 when both fit,
// else as big integers.
func equalIntegers(a, b string) bool {
	x, errX := strconv.ParseInt(a, 10, 64)
	y, errY := strconv.ParseInt(b, 10, 64)
	if errX == nil && errY == nil {
		return x == y
	}
	bx, okX := new(big.Int).SetString(a, 10)
	by, okY := new(big.Int).SetString(b, 10)
	return okX && okY && bx.Cmp(by) == 0
}

// parseDecimal reads a decimal literal as Java's Double.parseDouble would:
// out-of-range magnitudes become ±Inf or ±0 rather than errors.
func parseDecimal(s string) (float64, bool) {
	f, err := strconv.ParseFloat(s, 64)
	if err != nil && !errors.Is(err, strconv.ErrRange) {
		return 0, false
	}
	return f, true
}
