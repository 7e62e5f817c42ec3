package cli

import (
	"strings"

	"github.com/spf13/cobra"

	"github.com/kvnode/kvnode/cli/render"
	"github.com/kvnode/kvnode/client"
)

func newIndexCmd(a *app) *cobra.Command {
	list := a.command("list REGION", "List a region's indexes", `
List the indexes of REGION (GET /management/v1/regions/REGION/indexes;
permission CLUSTER:MANAGE). With -o json the answer as it came.`, cobra.ExactArgs(1), func(s *session, args []string) error {
		indexes, err := s.Indexes(args[0]).List(s.ctx)
		if err != nil {
			return err
		}
		if s.p.json {
			return s.raw()
		}
		t := render.NewTable(s.p.out, "NAME", "EXPRESSION", "FROM")
		for _, d := range indexes {
			t.Row(d.Name, d.Expression, d.From)
		}
		return t.Flush()
	})

	var from string
	create := a.command("create REGION NAME EXPRESSION", "Create an index", `
Create the index NAME on REGION over EXPRESSION, a member path of the FROM
iterator (POST /management/v1/regions/REGION/indexes; permission
CLUSTER:MANAGE). Without --from the iterator is the expression's first
name over the region:

  kvnode index create orders byTotal o.total     # from "/orders o"

An existing name is a conflict (exit code 4) that prints its definition.`, cobra.ExactArgs(3), func(s *session, args []string) error {
		region, name, expr := args[0], args[1], args[2]
		if from == "" {
			alias, _, ok := strings.Cut(expr, ".")
			if !ok || alias == "" {
				return usagef("cannot tell the iterator of %q: give --from '/%s x'", expr, region)
			}
			from = "/" + region + " " + alias
		}
		if err := s.Indexes(region).Create(s.ctx, client.Index{Name: name, Expression: expr, From: from}); err != nil {
			return err
		}
		return s.done("index " + name + " created")
	})
	create.Flags().StringVar(&from, "from", "", `the FROM clause the expression is evaluated over, e.g. "/orders o"`)

	drop := a.command("drop REGION NAME", "Drop an index", `
Drop the index NAME of REGION (DELETE /management/v1/regions/REGION/indexes/NAME;
permission CLUSTER:MANAGE). An unknown index is "not found" (exit code 3).`, cobra.ExactArgs(2), func(s *session, args []string) error {
		if err := s.Indexes(args[0]).Delete(s.ctx, args[1]); err != nil {
			return err
		}
		return s.done("index " + args[1] + " dropped")
	})
	return group("index", "List, create and drop secondary indexes", list, create, drop)
}
