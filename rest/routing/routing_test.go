package routing

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"testing"

	"github.com/kvnode/kvnode/region"
)

// TestSingleWrite: only a single-key write that certainly appended
// nothing is answered as not applied; an unknown outcome, a deadline, a
// multi-key write and every other error are not.
func TestSingleWrite(t *testing.T) {
	wrap := func(err error) error { return fmt.Errorf("put on region %q: %w", "r", err) }
	cases := []struct {
		err  error
		keys int
		want bool
	}{
		{wrap(region.ErrNoLeader), 1, true},
		{wrap(region.ErrNotLeader), 1, true},
		{wrap(region.ErrWrongGroup), 1, true},
		{wrap(region.ErrShuttingDown), 1, true},
		{wrap(region.ErrNoLeader), 2, false},
		{wrap(region.ErrIndeterminate), 1, false},
		{fmt.Errorf("%w (then %w)", region.ErrNotLeader, region.ErrIndeterminate), 1, false},
		{fmt.Errorf("%w: %w", region.ErrNoLeader, context.DeadlineExceeded), 1, false},
		{wrap(region.ErrKeyExists), 1, false},
		{wrap(errors.New("disk on fire")), 1, false},
	}
	for _, c := range cases {
		err := SingleWrite(c.err, c.keys)
		if !errors.Is(err, c.err) {
			t.Errorf("SingleWrite(%v) = %v: the error is lost", c.err, err)
		}
		h := http.Header{}
		SetOutcome(h, err)
		if got := h.Get(HeaderOutcome) == OutcomeNotApplied; got != c.want {
			t.Errorf("SingleWrite(%v, %d keys): not applied = %v, want %v", c.err, c.keys, got, c.want)
		}
	}
	if SingleWrite(nil, 1) != nil {
		t.Error("SingleWrite(nil) is not nil")
	}
}
