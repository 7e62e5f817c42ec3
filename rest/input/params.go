package input

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/kvnode/kvnode/region"
)

// The values of a path's {keys} segment and of query parameters. A
// parameter arrives as its first value and whether it was present at all
// (?key= is present and empty), so absent and empty can mean different
// things.

// DefaultLimit is how many values GET /{region} returns without ?limit, as
// in Geode.
const DefaultLimit = 50

// ParseKeys splits a decoded {keys} segment on commas. One element is the
// single-key form, several the multi-key form; an empty element is an error.
func ParseKeys(seg string) ([]string, error) {
	keys := strings.Split(seg, ",")
	for _, k := range keys {
		if k == "" {
			return nil, fmt.Errorf("%w: key list %q has an empty key", region.ErrInvalid, seg)
		}
	}
	return keys, nil
}

// CheckWriteKeys validates keys a write would store or delete: each must be
// a valid key, and a key may not appear twice (which of two values, or which
// of two deletes, would win is not a question a client should have to ask).
func CheckWriteKeys(keys []string) error {
	seen := make(map[string]bool, len(keys))
	for _, k := range keys {
		if err := region.ValidateKey(k); err != nil {
			return err
		}
		if seen[k] {
			return fmt.Errorf("%w: key %q appears more than once", region.ErrInvalid, k)
		}
		seen[k] = true
	}
	return nil
}

// ParseLimit reads ?limit=: absent is DefaultLimit, ALL (any case) is every
// entry (-1 for the store), otherwise an integer ≥ 0.
func ParseLimit(s string, present bool) (int, error) {
	if !present {
		return DefaultLimit, nil
	}
	if strings.EqualFold(s, "ALL") {
		return -1, nil
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < 0 {
		return 0, fmt.Errorf("%w: limit %q is neither ALL nor an integer ≥ 0", region.ErrInvalid, s)
	}
	return n, nil
}

// PutOp is the ?op= of a PUT.
type PutOp int

// The operations of a PUT: an upsert, a replace of existing keys only, and
// a compare-and-set.
const (
	OpPut PutOp = iota
	OpReplace
	OpCAS
)

// ParsePutOp reads ?op= in any letter case; absent means PUT.
func ParsePutOp(s string, present bool) (PutOp, error) {
	if !present {
		return OpPut, nil
	}
	switch strings.ToUpper(s) {
	case "PUT":
		return OpPut, nil
	case "REPLACE":
		return OpReplace, nil
	case "CAS":
		return OpCAS, nil
	}
	return 0, fmt.Errorf("%w: op %q is not PUT, REPLACE or CAS", region.ErrInvalid, s)
}

// ParseFlag reads the boolean parameter name: true or false in any letter
// case; absent is false.
func ParseFlag(name, s string, present bool) (bool, error) {
	if !present {
		return false, nil
	}
	switch strings.ToLower(s) {
	case "true":
		return true, nil
	case "false":
		return false, nil
	}
	return false, fmt.Errorf("%w: %s %q is neither true nor false", region.ErrInvalid, name, s)
}

// ParseList reads the comma-separated parameter name, trimming blanks
// around each element; absent is nil, and present but naming nothing is an
// error, since it names no target.
func ParseList(name, s string, present bool) ([]string, error) {
	if !present {
		return nil, nil
	}
	var out []string
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%w: %s is given but names nothing", region.ErrInvalid, name)
	}
	return out, nil
}
