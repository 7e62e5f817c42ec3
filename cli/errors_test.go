package cli

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/kvnode/kvnode/client"
)

// TestExitCode covers the statuses the cluster tests do not provoke.
func TestExitCode(t *testing.T) {
	for _, tc := range []struct {
		err  error
		want int
	}{
		{nil, ExitOK},
		{&client.Error{Status: 405}, ExitBadInput},
		{&client.Error{Status: 413}, ExitBadInput},
		{&client.Error{Status: 414}, ExitBadInput},
		{&client.Error{Status: 415}, ExitBadInput},
		{fmt.Errorf("wrapped: %w", &client.Error{Status: 429}), ExitDenied},
		{&client.Error{Status: 503}, ExitUnavailable},
		{&client.Error{Status: 500}, ExitFailure},
		{&client.Error{Status: 410}, ExitGone},
		{&client.Error{Status: 502}, ExitFailure},
		{Usage(errors.New("x")), ExitBadInput},
		{fmt.Errorf("query: %w", context.DeadlineExceeded), ExitUnavailable},
		{fmt.Errorf("%w: no member reachable", client.ErrUnavailable), ExitUnavailable},
		{fmt.Errorf("%w: not JSON", client.ErrInvalidArgument), ExitBadInput},
		{errors.New("anything"), ExitFailure},
	} {
		if got := ExitCode(tc.err); got != tc.want {
			t.Errorf("ExitCode(%v) = %d, want %d", tc.err, got, tc.want)
		}
	}
	if Usage(nil) != nil {
		t.Errorf("Usage(nil) is not nil")
	}
}
