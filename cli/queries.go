package cli

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/kvnode/kvnode/cli/render"
	"github.com/kvnode/kvnode/cli/scalar"
	"github.com/kvnode/kvnode/client"
)

// printRows prints a query's or a function's result array, the latest
// answer.
func printRows(s *session) error {
	if s.p.json {
		return s.raw()
	}
	return render.Rows(s.p.out, s.answer.Body)
}

// binds reads the --bind (or --arg) TYPE:VALUE values as the client's
// typed values.
func binds(flag string, args []string) ([]any, error) {
	values, err := scalar.ParseAll(flag, args)
	if err != nil {
		return nil, Usage(err)
	}
	out := make([]any, len(values))
	for i, v := range values {
		t := v.Typed()
		out[i] = client.Typed{Type: t.Type, Value: t.Value}
	}
	return out, nil
}

func newQueryCmd(a *app) *cobra.Command {
	var bindArgs []string
	c := a.command("query OQL", "Run an OQL query; list, create, update, run and delete named queries", `
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
cause.`, cobra.ArbitraryArgs, func(s *session, args []string) error {
		switch len(args) {
		case 0:
			return usagef("give an OQL query, or a subcommand: list, create, update, run, delete")
		case 1:
		default:
			return usagef("give the query as one argument, in quotes (found %d arguments)", len(args))
		}
		values, err := binds("bind", bindArgs)
		if err != nil {
			return err
		}
		if _, err := s.Query(s.ctx, args[0], values...); err != nil {
			return err
		}
		return printRows(s)
	})
	c.Flags().StringArrayVarP(&bindArgs, "bind", "b", nil, "bind value TYPE:VALUE for $1, $2, ... (repeat in order)")
	c.AddCommand(queryListCmd(a), queryCreateCmd(a, false), queryCreateCmd(a, true), queryRunCmd(a), queryDeleteCmd(a))
	return c
}

func queryListCmd(a *app) *cobra.Command {
	return a.command("list", "List the named queries", `
List the named queries (GET /kv/v1/queries; permission DATA:READ). With
-o json the answer as it came: {"queries":[{"id":..,"oql":..}]}.`, cobra.NoArgs, func(s *session, _ []string) error {
		queries, err := s.Queries().List(s.ctx)
		if err != nil {
			return err
		}
		if s.p.json {
			return s.raw()
		}
		t := render.NewTable(s.p.out, "ID", "OQL")
		for _, q := range queries {
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
	return a.command(use, short, long, cobra.ExactArgs(2), func(s *session, args []string) error {
		var err error
		done := "created"
		if update {
			err, done = s.Queries().Update(s.ctx, args[0], args[1]), "updated"
		} else {
			err = s.Queries().Create(s.ctx, args[0], args[1])
		}
		if err != nil {
			return err
		}
		if s.p.json {
			return s.raw()
		}
		_, err = fmt.Fprintf(s.p.out, "query %s %s\n", args[0], done)
		return err
	})
}

func queryRunCmd(a *app) *cobra.Command {
	var bindArgs []string
	c := a.command("run ID", "Run a named query with bind values", `
Run the named query ID with its bind values (POST /kv/v1/queries/ID with
[{"@type":..,"@value":..}]; permission DATA:READ on every region it reads):

  kvnode query run big --bind double:5 --bind int:10

Output as for an ad-hoc query. A wrong number of values or a value the
query cannot use is the API's 500 (exit code 1) with its cause.`, cobra.ExactArgs(1), func(s *session, args []string) error {
		values, err := binds("bind", bindArgs)
		if err != nil {
			return err
		}
		if _, err := s.Queries().Run(s.ctx, args[0], values...); err != nil {
			return err
		}
		return printRows(s)
	})
	c.Flags().StringArrayVarP(&bindArgs, "bind", "b", nil, "bind value TYPE:VALUE for $1, $2, ... (repeat in order)")
	return c
}
func queryDeleteCmd(a *app) *cobra.Command {
	return a.command("delete ID", "Delete a named query", `
Delete the named query ID (DELETE /kv/v1/queries/ID; permission
DATA:WRITE). An unknown ID is "not found" (exit code 3).`, cobra.ExactArgs(1), func(s *session, args []string) error {
		if err := s.Queries().Delete(s.ctx, args[0]); err != nil {
			return err
		}
		if s.p.json {
			return s.raw()
		}
		_, err := fmt.Fprintf(s.p.out, "query %s deleted\n", args[0])
		return err
	})
}
