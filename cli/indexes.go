package cli

import (
	"encoding/json"
	"net/http"
	"strings"

	"github.com/kvnode/kvnode/cli/render"
	"github.com/spf13/cobra"
)

func newIndexCmd(a *app) *cobra.Command {
	list := legacyCommand("list REGION", "List a region's indexes", `
List the indexes of REGION (GET /management/v1/regions/REGION/indexes;
permission CLUSTER:MANAGE). With -o json the answer as it came.`, cobra.ExactArgs(1), func(cmd *cobra.Command, args []string) error {
		path := "/management/v1/regions/" + seg(args[0]) + "/indexes"
		resp, err := a.call(cmd, request{Method: http.MethodGet, Path: path})
		if err != nil {
			return err
		}
		p := a.printer(cmd)
		if p.json {
			return p.raw(resp.Body)
		}
		var doc struct {
			Result []struct {
				Name       string `json:"name"`
				Expression string `json:"expression"`
				From       string `json:"from"`
			} `json:"result"`
		}
		if err := decode(resp.Body, &doc, "GET "+path); err != nil {
			return err
		}
		t := render.NewTable(p.out, "NAME", "EXPRESSION", "FROM")
		for _, d := range doc.Result {
			t.Row(d.Name, d.Expression, d.From)
		}
		return t.Flush()
	})

	var from string
	create := legacyCommand("create REGION NAME EXPRESSION", "Create an index", `
Create the index NAME on REGION over EXPRESSION, a member path of the FROM
iterator (POST /management/v1/regions/REGION/indexes; permission
CLUSTER:MANAGE). Without --from the iterator is the expression's first
name over the region:

  kvnode index create orders byTotal o.total     # from "/orders o"

An existing name is a conflict (exit code 4) that prints its definition.`, cobra.ExactArgs(3), func(cmd *cobra.Command, args []string) error {
		region, name, expr := args[0], args[1], args[2]
		if from == "" {
			alias, _, ok := strings.Cut(expr, ".")
			if !ok || alias == "" {
				return usagef("cannot tell the iterator of %q: give --from '/%s x'", expr, region)
			}
			from = "/" + region + " " + alias
		}
		body, err := json.Marshal(map[string]string{"name": name, "expression": expr, "from": from})
		if err != nil {
			return err
		}
		resp, err := a.call(cmd, request{Method: http.MethodPost, Path: "/management/v1/regions/" + seg(region) + "/indexes", Body: body})
		if err != nil {
			return err
		}
		return message(a.printer(cmd), resp.Body, "index "+name+" created")
	})
	create.Flags().StringVar(&from, "from", "", `the FROM clause the expression is evaluated over, e.g. "/orders o"`)

	drop := legacyCommand("drop REGION NAME", "Drop an index", `
Drop the index NAME of REGION (DELETE /management/v1/regions/REGION/indexes/NAME;
permission CLUSTER:MANAGE). An unknown index is "not found" (exit code 3).`, cobra.ExactArgs(2), func(cmd *cobra.Command, args []string) error {
		path := "/management/v1/regions/" + seg(args[0]) + "/indexes/" + seg(args[1])
		resp, err := a.call(cmd, request{Method: http.MethodDelete, Path: path})
		if err != nil {
			return err
		}
		return message(a.printer(cmd), resp.Body, "index "+args[1]+" dropped")
	})
	return group("index", "List, create and drop secondary indexes", list, create, drop)
}
