package regions

import (
	"errors"
	"fmt"
	"testing"

	"github.com/kvnode/kvnode/region"
)

// TestSplitWriteAnswer: the answer to a multi-key write over several
// partition groups. When one group refused its part while another's
// outcome is unknown, the answer is the unknown outcome (503), not the
// refusal: a 409 would tell the client the request is over, yet the
// unknown part can still be applied afterwards (the chaos model checks a
// refused request's parts between its call and its answer). It used to be
// the refusal.
func TestSplitWriteAnswer(t *testing.T) {
	conflict := fmt.Errorf("cas on region %q: %w", "p", &region.ConflictError{Err: region.ErrCASMismatch, Key: "a", Current: []byte(`{"v":1}`)})
	absent := fmt.Errorf("replace on region %q: key %q: %w", "p", "b", region.ErrKeyAbsent)
	unknown := fmt.Errorf("cas on region %q: %w", "p", region.ErrIndeterminate)
	noLeader := fmt.Errorf("group 2: %w", region.ErrNoLeader)

	for _, errs := range [][]error{{conflict, unknown}, {unknown, conflict}, {nil, absent, unknown}} {
		err := writeError(errs)
		var ce *region.ConflictError
		if !errors.Is(err, region.ErrIndeterminate) || errors.As(err, &ce) || errors.Is(err, region.ErrKeyAbsent) {
			t.Errorf("%v: answered %v; want the unknown outcome, not the refusal", errs, err)
		}
	}
	// Every part over: a refusal beats a group that never took its part.
	if err := writeError([]error{noLeader, absent}); !errors.Is(err, region.ErrKeyAbsent) {
		t.Errorf("refusal and no leader: %v, want the refusal", err)
	}
	if err := writeError([]error{nil, noLeader}); !errors.Is(err, region.ErrNoLeader) {
		t.Errorf("applied and no leader: %v, want no leader", err)
	}
	if err := writeError([]error{nil, unknown}); !errors.Is(err, region.ErrIndeterminate) {
		t.Errorf("applied and unknown: %v, want unknown", err)
	}
	if err := writeError([]error{nil, nil}); err != nil {
		t.Errorf("all applied: %v", err)
	}
}
