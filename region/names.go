package region

import (
	"fmt"
	"strings"
	"unicode/utf8"
)

// Limits on names and keys. They keep every key addressable through the
// REST paths and every command small enough to replicate.
const (
	// MaxRegionNameLen is the longest region name, in bytes.
	MaxRegionNameLen = 128
	// MaxKeyLen is the longest key, in bytes.
	MaxKeyLen = 4096
)

// reservedNames are path segments under /kv/v1 that are not regions.
var reservedNames = map[string]bool{
	"queries": true, "functions": true, "servers": true, "ping": true, "watch": true,
}

// ValidateName checks a region name: 1 to MaxRegionNameLen characters from
// [A-Za-z0-9_-], not starting with "__" (Geode reserves those), and not one of
// the fixed endpoint names under /kv/v1 (queries, functions, servers, ping,
// watch).
func ValidateName(name string) error {
	if name == "" {
		return fmt.Errorf("%w: region name is empty", ErrInvalid)
	}
	if len(name) > MaxRegionNameLen {
		return fmt.Errorf("%w: region name is longer than %d bytes", ErrInvalid, MaxRegionNameLen)
	}
	for _, r := range name {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '_' || r == '-') {
			return fmt.Errorf("%w: region name %q may contain only letters, digits, '_' and '-'", ErrInvalid, name)
		}
	}
	if strings.HasPrefix(name, "__") {
		return fmt.Errorf("%w: region name %q must not start with \"__\"", ErrInvalid, name)
	}
	if reservedNames[name] {
		return fmt.Errorf("%w: %q is a reserved path under /kv/v1, not a region name", ErrInvalid, name)
	}
	return nil
}

// ValidateKey checks a key: non-empty valid UTF-8 of at most MaxKeyLen bytes,
// without ',' (the REST paths separate keys with commas, so such a key could
// never be read back by itself) and without control characters.
func ValidateKey(key string) error {
	if key == "" {
		return fmt.Errorf("%w: key is empty", ErrInvalid)
	}
	if len(key) > MaxKeyLen {
		return fmt.Errorf("%w: key is longer than %d bytes", ErrInvalid, MaxKeyLen)
	}
	if !utf8.ValidString(key) {
		return fmt.Errorf("%w: key is not valid UTF-8", ErrInvalid)
	}
	for _, r := range key {
		if r == ',' {
			return fmt.Errorf("%w: key %q contains ',', which separates keys in paths", ErrInvalid, key)
		}
		if r < 0x20 || r == 0x7f {
			return fmt.Errorf("%w: key contains a control character", ErrInvalid)
		}
	}
	return nil
}
