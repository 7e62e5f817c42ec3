package oql

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/kvnode/kvnode/internal/oqlspec"
	"github.com/kvnode/kvnode/region"
)

// The rows of ../shared/spec/oql.md (package internal/oqlspec), one or
// more per feature, over a small dataset of orders with missing members,
// nulls, empty and null item lists. Each row runs twice: over the whole
// data, and as a partitioned region runs it (partials over three shards of
// /orders, sent through the wire encoding, merged). Both must give the
// row's answer. (Package rest runs them again through HTTP.)

func TestOQLSpecRows(t *testing.T) {
	ctx := context.Background()
	mdData := mapSource(oqlspec.Data)
	parts := shards(mdData, "/orders", 3)
	for _, row := range oqlspec.Rows {
		t.Run(row.Section, func(t *testing.T) {
			wantErr := strings.HasPrefix(row.Want, "ERROR")
			q, err := Parse(row.Q)
			var got string
			if err == nil {
				var res *Result
				if res, err = q.Execute(ctx, mdData, row.Params, Options{}); err == nil {
					b, _ := res.MarshalJSON()
					got = string(b)
				}
			}
			checkRow(t, "whole", row, wantErr, got, err)

			// As a partitioned region runs it.
			if err != nil || q == nil || q.ScatterRegion() != "/orders" {
				return
			}
			var partials []*Partial
			for _, shard := range parts {
				p, err := q.ExecutePartial(ctx, mdData, shard, row.Params, Options{})
				if err != nil {
					t.Fatalf("partial: %v", err)
				}
				back, err := DecodePartial(EncodePartial(p))
				if err != nil {
					t.Fatalf("decode partial: %v", err)
				}
				partials = append(partials, back)
			}
			res, err := q.Merge(ctx, partials, row.Params, Options{})
			got = ""
			if err == nil {
				b, _ := res.MarshalJSON()
				got = string(b)
			}
			checkRow(t, "partitioned", row, wantErr, got, err)
		})
	}
}

func checkRow(t *testing.T, how string, row oqlspec.Row, wantErr bool, got string, err error) {
	t.Helper()
	if wantErr {
		if err == nil {
			t.Errorf("%s: %s = %s, want an error", how, row.Q, got)
			return
		}
		var se *SyntaxError
		var ee *EvalError
		if !errors.As(err, &se) && !errors.As(err, &ee) && !errors.Is(err, region.ErrRegionNotFound) && !errors.Is(err, ErrBind) {
			t.Errorf("%s: %s: error %T %v is not a query error", how, row.Q, err, err)
		}
		if _, text, ok := strings.Cut(row.Want, ":"); ok && !strings.Contains(err.Error(), text) {
			t.Errorf("%s: %s: error %q, want it to mention %q", how, row.Q, err, text)
		}
		return
	}
	if err != nil {
		t.Errorf("%s: %s: %v, want %s", how, row.Q, err, row.Want)
		return
	}
	want := row.Want
	if !strings.Contains(strings.ToUpper(row.Q), "ORDER BY") && !strings.Contains(strings.ToUpper(row.Q), "GROUP BY") {
		got, want = sortJSONArray(t, []byte(got)), sortJSONArray(t, []byte(want))
	}
	if got != want {
		t.Errorf("%s: %s\n got  %s\n want %s", how, row.Q, got, want)
	}
}
