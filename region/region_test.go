package region

import (
	"errors"
	"strings"
	"testing"
)

func TestParseKind(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want Kind
		ok   bool
	}{
		{"REPLICATE", Replicate, true},
		{"replicate", Replicate, true},
		{" Partition ", Partition, true},
		{"", "", false},
		{"HASHED", "", false},
		// Geode's shortcuts that mean one of the two kinds.
		{"REPLICATE_PERSISTENT", Replicate, true},
		{"replicate_overflow", Replicate, true},
		{"REPLICATE_PERSISTENT_OVERFLOW", Replicate, true},
		{"PARTITION_REDUNDANT", Partition, true},
		{"PARTITION_PERSISTENT", Partition, true},
		{"Partition_Redundant_Persistent", Partition, true},
		{"PARTITION_OVERFLOW", Partition, true},
		{"PARTITION_REDUNDANT_OVERFLOW", Partition, true},
		{"PARTITION_PERSISTENT_OVERFLOW", Partition, true},
		{"PARTITION_REDUNDANT_PERSISTENT_OVERFLOW", Partition, true},
	} {
		got, err := ParseKind(tc.in)
		if (err == nil) != tc.ok || got != tc.want {
			t.Errorf("ParseKind(%q) = %q, %v; want %q, ok=%v", tc.in, got, err, tc.want, tc.ok)
		}
		if err != nil && !errors.Is(err, ErrInvalid) {
			t.Errorf("ParseKind(%q) error %v does not wrap ErrInvalid", tc.in, err)
		}
	}
}

// TestParseKindRefusesWhatKvnodeCannotHonour: Geode's shortcuts without a
// meaning here are refused with the reason, so a Geode user learns why
// rather than getting a region that behaves otherwise.
func TestParseKindRefusesWhatKvnodeCannotHonour(t *testing.T) {
	for in, why := range map[string]string{
		"PROXY":                        "holds no data on the member that defines it",
		"PARTITION_PROXY":              "holds no data on the member that defines it",
		"PARTITION_PROXY_REDUNDANT":    "holds no data on the member that defines it",
		"replicate_proxy":              "holds no data on the member that defines it",
		"CACHING_PROXY":                "kvnode has no client caches",
		"CACHING_PROXY_HEAP_LRU":       "kvnode has no client caches",
		"LOCAL":                        "lives on one member and is not replicated",
		"LOCAL_PERSISTENT":             "lives on one member and is not replicated",
		"LOCAL_HEAP_LRU":               "lives on one member and is not replicated",
		"PARTITION_HEAP_LRU":           "kvnode never evicts entries",
		"PARTITION_REDUNDANT_HEAP_LRU": "kvnode never evicts entries",
		"REPLICATE_HEAP_LRU":           "kvnode never evicts entries",
		"PARTITION_SOMETHING":          "is not REPLICATE or PARTITION",
	} {
		_, err := ParseKind(in)
		if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), why) || !strings.Contains(err.Error(), in) {
			t.Errorf("ParseKind(%q) = %v; want ErrInvalid naming the type and saying %q", in, err, why)
		}
	}
}

func TestValidateName(t *testing.T) {
	good := []string{"orders", "a", "Customer_2", "x-y", strings.Repeat("a", MaxRegionNameLen)}
	bad := []string{"", "__system", "a b", "a/b", "a,b", "queries", "ping", "servers", "functions", "watch",
		strings.Repeat("a", MaxRegionNameLen+1), "é"}
	for _, n := range good {
		if err := ValidateName(n); err != nil {
			t.Errorf("ValidateName(%q) = %v, want nil", n, err)
		}
	}
	for _, n := range bad {
		if err := ValidateName(n); !errors.Is(err, ErrInvalid) {
			t.Errorf("ValidateName(%q) = %v, want ErrInvalid", n, err)
		}
	}
}

func TestValidateKey(t *testing.T) {
	good := []string{"1", "key with spaces", "a/b", "ключ", "%41", strings.Repeat("k", MaxKeyLen)}
	bad := []string{"", "a,b", "tab\there", "\x7f", string([]byte{0xff}), strings.Repeat("k", MaxKeyLen+1)}
	for _, k := range good {
		if err := ValidateKey(k); err != nil {
			t.Errorf("ValidateKey(%q) = %v, want nil", k, err)
		}
	}
	for _, k := range bad {
		if err := ValidateKey(k); !errors.Is(err, ErrInvalid) {
			t.Errorf("ValidateKey(%q) = %v, want ErrInvalid", k, err)
		}
	}
}

func TestNormalizeValue(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{`{"a":1}`, `{"a":1}`},
		{" {\n \"b\" : 10.0 , \"a\": [1, 2] }\n", `{"b":10.0,"a":[1,2]}`},
		{`{"big":9223372036854775807,"s":"\u00e9 x"}`, `{"big":9223372036854775807,"s":"\u00e9 x"}`},
	} {
		got, err := NormalizeValue([]byte(tc.in))
		if err != nil || string(got) != tc.want {
			t.Errorf("NormalizeValue(%q) = %s, %v; want %s", tc.in, got, err, tc.want)
		}
	}
	for _, in := range []string{"", "  ", "[1]", `"s"`, "1", "null", "true", `{"a":`, `{"a":1}x`, `{a:1}`, "{\"a\":\"\xff\"}"} {
		if _, err := NormalizeValue([]byte(in)); !errors.Is(err, ErrInvalid) {
			t.Errorf("NormalizeValue(%q) error = %v, want ErrInvalid", in, err)
		}
	}
}

func TestConflictErrorUnwraps(t *testing.T) {
	err := error(&ConflictError{Err: ErrCASMismatch, Key: "k", Current: []byte(`{}`)})
	if !errors.Is(err, ErrCASMismatch) {
		t.Fatalf("errors.Is(%v, ErrCASMismatch) = false", err)
	}
	var ce *ConflictError
	if !errors.As(err, &ce) || ce.Key != "k" {
		t.Fatalf("errors.As did not recover the ConflictError: %v", err)
	}
}

func TestParseConsistency(t *testing.T) {
	for in, want := range map[string]Consistency{"": Linearizable, "stale": Stale, "STALE": Stale, "linearizable": Linearizable} {
		got, err := ParseConsistency(in)
		if err != nil || got != want {
			t.Errorf("ParseConsistency(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	if _, err := ParseConsistency("eventual"); !errors.Is(err, ErrInvalid) {
		t.Errorf("ParseConsistency(eventual) = %v, want ErrInvalid", err)
	}
}
