package cli

import (
	"context"
	"errors"
	"fmt"
	"testing"
)

// TestExitCode covers the statuses the cluster tests do not provoke.
func TestExitCode(t *testing.T) {
	for _, tc := range []struct {
		err  error
		want int
	}{
		{nil, ExitOK},
		{&APIError{Status: 413}, ExitBadInput},
		{&APIError{Status: 415}, ExitBadInput},
		{fmt.Errorf("wrapped: %w", &APIError{Status: 429}), ExitDenied},
		{&APIError{Status: 503}, ExitUnavailable},
		{&APIError{Status: 500}, ExitFailure},
		{&APIError{Status: 410}, ExitGone},
		{&APIError{Status: 502}, ExitFailure},
		{Usage(errors.New("x")), ExitBadInput},
		{fmt.Errorf("query: %w", context.DeadlineExceeded), ExitUnavailable},
		{&unreachableError{}, ExitUnavailable},
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
