package input

import (
	"errors"
	"slices"
	"testing"

	"github.com/kvnode/kvnode/region"
)

// TestParams: each parameter's accepted values and its default when
// absent; every refusal is region.ErrInvalid (a 400), with the cause a
// client reads.
func TestParams(t *testing.T) {
	for _, tc := range []struct {
		name    string
		parse   func() (any, error)
		want    any
		wantErr string
	}{
		{"limit absent", func() (any, error) { return ParseLimit("", false) }, DefaultLimit, ""},
		{"limit all", func() (any, error) { return ParseLimit("aLl", true) }, -1, ""},
		{"limit zero", func() (any, error) { return ParseLimit("0", true) }, 0, ""},
		{"limit negative", func() (any, error) { return ParseLimit("-1", true) }, nil, `invalid request: limit "-1" is neither ALL nor an integer ≥ 0`},
		{"limit empty", func() (any, error) { return ParseLimit("", true) }, nil, `invalid request: limit "" is neither ALL nor an integer ≥ 0`},
		{"op absent", func() (any, error) { return ParsePutOp("", false) }, OpPut, ""},
		{"op cas", func() (any, error) { return ParsePutOp("cas", true) }, OpCAS, ""},
		{"op replace", func() (any, error) { return ParsePutOp("Replace", true) }, OpReplace, ""},
		{"op unknown", func() (any, error) { return ParsePutOp("MERGE", true) }, nil, `invalid request: op "MERGE" is not PUT, REPLACE or CAS`},
		{"flag absent", func() (any, error) { return ParseFlag("f", "", false) }, false, ""},
		{"flag true", func() (any, error) { return ParseFlag("f", "TRUE", true) }, true, ""},
		{"flag other", func() (any, error) { return ParseFlag("f", "yes", true) }, nil, `invalid request: f "yes" is neither true nor false`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := tc.parse()
			checkErr(t, err, tc.wantErr)
			if tc.wantErr == "" && got != tc.want {
				t.Errorf("got %v, want %v", got, tc.want)
			}
		})
	}
}

// TestLists: key lists and comma-separated parameters.
func TestLists(t *testing.T) {
	for _, tc := range []struct {
		name    string
		parse   func() ([]string, error)
		want    []string
		wantErr string
	}{
		{"one key", func() ([]string, error) { return ParseKeys("a") }, []string{"a"}, ""},
		{"keys keep blanks", func() ([]string, error) { return ParseKeys(" a,b ") }, []string{" a", "b "}, ""},
		{"empty key", func() ([]string, error) { return ParseKeys("a,,b") }, nil, `invalid request: key list "a,,b" has an empty key`},
		{"list absent", func() ([]string, error) { return ParseList("onMembers", "", false) }, nil, ""},
		{"list trimmed", func() ([]string, error) { return ParseList("onMembers", " m1 ,, m2", true) }, []string{"m1", "m2"}, ""},
		{"list of nothing", func() ([]string, error) { return ParseList("filter", " , ", true) }, nil, "invalid request: filter is given but names nothing"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := tc.parse()
			checkErr(t, err, tc.wantErr)
			if !slices.Equal(got, tc.want) {
				t.Errorf("got %q, want %q", got, tc.want)
			}
		})
	}
}

// TestCheckWriteKeys: a write's keys are valid and distinct.
func TestCheckWriteKeys(t *testing.T) {
	checkErr(t, CheckWriteKeys([]string{"a", "b"}), "")
	checkErr(t, CheckWriteKeys([]string{"a", "b", "a"}), `invalid request: key "a" appears more than once`)
	if err := CheckWriteKeys([]string{"a", ""}); !errors.Is(err, region.ErrInvalid) {
		t.Errorf("an empty key: %v, want region.ErrInvalid", err)
	}
}

// checkErr fails unless err is nil (want "") or is region.ErrInvalid with
// the message want.
func checkErr(t *testing.T, err error, want string) {
	t.Helper()
	switch {
	case want == "" && err != nil:
		t.Fatalf("unexpected error: %v", err)
	case want == "":
	case !errors.Is(err, region.ErrInvalid):
		t.Fatalf("error %v, want one wrapping region.ErrInvalid", err)
	case err.Error() != want:
		t.Fatalf("error %q, want %q", err, want)
	}
}
