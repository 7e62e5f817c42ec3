package cli

import (
	"fmt"
	"net/http"
	"net/url"

	"github.com/spf13/cobra"

	"github.com/kvnode/kvnode/cli/render"
	"github.com/kvnode/kvnode/cli/scalar"
)

// printRows prints a query's or a function's result array.
func printRows(p printer, body []byte) error {
	if p.json {
		return p.raw(body)
	}
	return render.Rows(p.out, body)
}

func newQueryCmd(a *app) *cobra.Command {
	var binds []string
	c := legacyCommand("query OQL", "Run an OQL query; list, create, update, run and delete named queries", `
Run an ad-hoc OQL query (GET /kv/v1/queries/adhoc?q=OQL; permission
DATA:READ on every region it reads), for example

  kvnode query 'SELECT o.total FROM /orders o WHERE o.total > $1' --bind double:5

The ad-hoc endpoint takes no bind values, so each --bind TYPE:VALUE is
written into the text as an OQL literal of its type ($1 is the first);
a "$" inside a string literal, a quoted name or a comment stays as it is.
The values must be exactly as many as the highest parameter. Types: byte,
short, int, long, float, double, boolean, string. Named queries bind on the
server: see "kvnode query run".

Rows print as a table: a column per member when the rows are objects, one
RESULT column otherwise. With -o json the answer as it came, a JSON array.
A query that fails on the server is the API's 500 (exit code 1) with its
cause.`, cobra.ArbitraryArgs, func(cmd *cobra.Command, args []string) error {
		switch len(args) {
		case 0:
			return usagef("give an OQL query, or a subcommand: list, create, update, run, delete")
		case 1:
		default:
			return usagef("give the query as one argument, in quotes (found %d arguments)", len(args))
		}
		values, err := scalar.ParseAll("bind", binds)
		if err != nil {
			return Usage(err)
		}
		text, err := scalar.Substitute(args[0], values)
		if err != nil {
			return Usage(err)
		}
		resp, err := a.call(cmd, request{Method: http.MethodGet, Path: "/kv/v1/queries/adhoc", Query: url.Values{"q": {text}}})
		if err != nil {
			return err
		}
		return printRows(a.printer(cmd), resp.Body)
	})
	c.Flags().StringArrayVarP(&binds, "bind", "b", nil, "bind value TYPE:VALUE for $1, $2, ... (repeat in order)")
	c.AddCommand(queryListCmd(a), queryCreateCmd(a, false), queryCreateCmd(a, true), queryRunCmd(a), queryDeleteCmd(a))
	return c
}

func queryListCmd(a *app) *cobra.Command {
	return legacyCommand("list", "List the named queries", `
List the named queries (GET /kv/v1/queries; permission DATA:READ). With
-o json the answer as it came: {"queries":[{"id":..,"oql":..}]}.`, cobra.NoArgs, func(cmd *cobra.Command, _ []string) error {
		resp, err := a.call(cmd, request{Method: http.MethodGet, Path: "/kv/v1/queries"})
		if err != nil {
			return err
		}
		p := a.printer(cmd)
		if p.json {
			return p.raw(resp.Body)
		}
		var doc struct {
			Queries []struct {
				ID  string `json:"id"`
				OQL string `json:"oql"`
			} `json:"queries"`
		}
		if err := decode(resp.Body, &doc, "GET /kv/v1/queries"); err != nil {
			return err
		}
		t := render.NewTable(p.out, "ID", "OQL")
		for _, q := range doc.Queries {
			t.Row(q.ID, q.OQL)
		}
		return t.Flush()
	})
}

// queryCreateCmd is "query create" (POST /kv/v1/queries?id=ID&q=OQL), or
// with update "query update" (PUT /kv/v1/queries/ID?q=OQL).
func queryCreateCmd(a *app, update bool) *cobra.Command {
	use, short, long := "create ID OQL", "Store a named query", `
Store a named query under ID (POST /kv/v1/queries?id=ID&q=OQL; permission
DATA:READ). The server checks its syntax (exit code 2 when wrong); an
existing ID is a conflict (exit code 4) that prints the stored query.
Parameters are written $1, $2, ...: "kvnode query run" binds them.`
	if update {
		use, short, long = "update ID OQL", "Replace the text of a named query", `
Replace the text of the named query ID (PUT /kv/v1/queries/ID?q=OQL;
permission DATA:READ). An unknown ID is "not found" (exit code 3).`
	}
	return legacyCommand(use, short, long, cobra.ExactArgs(2), func(cmd *cobra.Command, args []string) error {
		req := request{Method: http.MethodPost, Path: "/kv/v1/queries", Query: url.Values{"id": {args[0]}, "q": {args[1]}}}
		done := "created"
		if update {
			req = request{Method: http.MethodPut, Path: "/kv/v1/queries/" + seg(args[0]), Query: url.Values{"q": {args[1]}}}
			done = "updated"
		}
		resp, err := a.call(cmd, req)
		if err != nil {
			return err
		}
		p := a.printer(cmd)
		if p.json {
			return p.raw(resp.Body)
		}
		_, err = fmt.Fprintf(p.out, "query %s %s\n", args[0], done)
		return err
	})
}

func queryRunCmd(a *app) *cobra.Command {
	var binds []string
	c := legacyCommand("run ID", "Run a named query with bind values", `
Run the named query ID with its bind values (POST /kv/v1/queries/ID with
[{"@type":..,"@value":..}]; permission DATA:READ on every region it reads):

  kvnode query run big --bind double:5 --bind int:10

Output as for an ad-hoc query. A wrong number of values or a value the
query cannot use is the API's 500 (exit code 1) with its cause.`, cobra.ExactArgs(1), func(cmd *cobra.Command, args []string) error {
		values, err := scalar.ParseAll("bind", binds)
		if err != nil {
			return Usage(err)
		}
		req := request{Method: http.MethodPost, Path: "/kv/v1/queries/" + seg(args[0])}
		if len(values) > 0 {
			req.Body = scalar.JSON(values)
		}
		resp, err := a.call(cmd, req)
		if err != nil {
			return err
		}
		return printRows(a.printer(cmd), resp.Body)
	})
	c.Flags().StringArrayVarP(&binds, "bind", "b", nil, "bind value TYPE:VALUE for $1, $2, ... (repeat in order)")
	return c
}

func queryDeleteCmd(a *app) *cobra.Command {
	return legacyCommand("delete ID", "Delete a named query", `
Delete the named query ID (DELETE /kv/v1/queries/ID; permission
DATA:WRITE). An unknown ID is "not found" (exit code 3).`, cobra.ExactArgs(1), func(cmd *cobra.Command, args []string) error {
		resp, err := a.call(cmd, request{Method: http.MethodDelete, Path: "/kv/v1/queries/" + seg(args[0])})
		if err != nil {
			return err
		}
		p := a.printer(cmd)
		if p.json {
			return p.raw(resp.Body)
		}
		_, err = fmt.Fprintf(p.out, "query %s deleted\n", args[0])
		return err
	})
}
