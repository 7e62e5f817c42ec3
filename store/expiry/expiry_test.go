package expiry

import (
	"errors"
	"testing"
	"time"

	"github.com/kvnode/kvnode/fsm"
	"github.com/kvnode/kvnode/fsm/codec"
	"github.com/kvnode/kvnode/region"
)

// TestStamp: commands carry the member's clock once every member reads
// the format with time; while one does not (a rolling upgrade), they go
// without it, byte for byte what the older release wrote, and what needs
// time is refused before anything is written.
func TestStamp(t *testing.T) {
	now := time.UnixMilli(1_795_000_000_000)
	put := func() *codec.Command {
		return &codec.Command{Op: codec.OpPut, Region: "r", Entries: []region.Entry{{Key: "k", Value: []byte(`{}`)}}}
	}
	for _, tc := range []struct {
		name    string
		cmd     *codec.Command
		formats int
		wantNow uint64
		wantErr error
	}{
		{"a put, every member current", put(), fsm.Formats, 1_795_000_000_000, nil},
		{"a put, a member of the release before bucket moves", put(), fsm.FormatTime, 1_795_000_000_000, nil},
		{"a put, an older member", put(), 2, 0, nil},
		{"a put with a TTL, an older member", &codec.Command{Op: codec.OpPut, Region: "r", Entries: put().Entries, TTL: 1000}, 2, 0, region.ErrUpgradeInProgress},
		{"a region with a default TTL, an older member", &codec.Command{Op: codec.OpCreateRegion, Region: "r", Kind: region.Replicate, TTL: 1000}, 2, 0, region.ErrUpgradeInProgress},
		{"an alter-region, an older member", &codec.Command{Op: codec.OpAlterRegion, Region: "r"}, 2, 0, region.ErrUpgradeInProgress},
		{"a command without time", &codec.Command{Op: codec.OpClear, Region: "r"}, fsm.Formats, 0, nil},
		{"a command already stamped", &codec.Command{Op: codec.OpDelete, Region: "r", Keys: []string{"k"}, Now: 7}, fsm.Formats, 7, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := Stamp(tc.cmd, tc.formats, now)
			if !errors.Is(err, tc.wantErr) || (err != nil) != (tc.wantErr != nil) {
				t.Fatalf("Stamp = %v, want %v", err, tc.wantErr)
			}
			if tc.cmd.Now != tc.wantNow {
				t.Errorf("Now = %d, want %d", tc.cmd.Now, tc.wantNow)
			}
			if tc.formats < fsm.FormatTime && err == nil {
				if v := tc.cmd.Encode(nil)[0]; v >= 3 {
					t.Errorf("with an older member the command is encoded in format %d, which it cannot read", v)
				}
			}
		})
	}
}

// TestCached: the value is computed once per interval, not per call, and
// again once the interval has passed.
func TestCached(t *testing.T) {
	calls := 0
	f := Cached(func() int { calls++; return calls }, 50*time.Millisecond)
	if a, b := f(), f(); a != 1 || b != 1 || calls != 1 {
		t.Fatalf("two calls in the interval: %d, %d after %d computations; want 1, 1 after 1", a, b, calls)
	}
	deadline := time.Now().Add(5 * time.Second)
	for f() == 1 {
		if time.Now().After(deadline) {
			t.Fatal("the value was never computed again after the interval")
		}
		time.Sleep(10 * time.Millisecond)
	}
	if calls != 2 {
		t.Errorf("computations after one interval = %d, want 2", calls)
	}
}
