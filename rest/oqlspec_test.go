package rest

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"strings"
	"testing"

	"github.com/kvnode/kvnode/internal/oqlspec"
	"github.com/kvnode/kvnode/region"
)

// TestOQLSpecThroughREST runs every row of oql.md (internal/oqlspec)
// through the REST API, with /orders a replicated and then a partitioned
// region: ad-hoc when the row has no bind values, as a named query with
// {"@type","@value"} bind values when it has. Errors must be 500 with a
// cause; on a partitioned region the rows Geode refuses there must fail.
func TestOQLSpecThroughREST(t *testing.T) {
	for _, kind := range []region.Kind{region.Replicate, region.Partition} {
		t.Run(string(kind), func(t *testing.T) {
			ts := newTestServer(t)
			for path, entries := range oqlspec.Data {
				k := region.Replicate
				if path == "/orders" {
					k = kind
				}
				var kv []string
				for key, v := range entries {
					kv = append(kv, key, v)
				}
				ts.mkRegion(t, strings.TrimPrefix(path, "/"), k, kv...)
			}
			for i, row := range oqlspec.Rows {
				t.Run(row.Section, func(t *testing.T) {
					var got response
					if len(row.Params) == 0 {
						got = ts.do(t, "GET", "/kv/v1/queries/adhoc?q="+url.QueryEscape(row.Q), "", "")
					} else {
						id := fmt.Sprintf("row%d", i)
						if err := ts.store.CreateQuery(context.Background(), id, row.Q); err != nil {
							t.Fatal(err)
						}
						got = ts.do(t, "POST", "/kv/v1/queries/"+id, "application/json", bindBody(t, row.Params))
					}
					want := row.Want
					if kind == region.Partition && oqlspec.PartitionedErrors[row.Section] {
						want = "ERROR:derivable"
					}
					if strings.HasPrefix(want, "ERROR") {
						_, text, _ := strings.Cut(want, ":")
						fails(500, text).check(t, ts, got)
						return
					}
					if got.status != 200 {
						t.Fatalf("%s = %d %s, want 200 %s", row.Q, got.status, got.body, want)
					}
					body := got.body
					if q := strings.ToUpper(row.Q); !strings.Contains(q, "ORDER BY") && !strings.Contains(q, "GROUP BY") {
						body, want = sortedArray(t, body), sortedArray(t, want)
					}
					if body != want {
						t.Errorf("%s\n got  %s\n want %s", row.Q, body, want)
					}
				})
			}
		})
	}
}

// bindBody writes Go bind values as the REST body of a named query.
func bindBody(t *testing.T, params []any) string {
	t.Helper()
	var args []map[string]any
	for _, p := range params {
		typ := map[string]string{"int64": "long", "float64": "double", "string": "String", "bool": "boolean"}[fmt.Sprintf("%T", p)]
		if typ == "" {
			t.Fatalf("no REST @type for %T", p)
		}
		args = append(args, map[string]any{"@type": typ, "@value": p})
	}
	b, err := json.Marshal(args)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
