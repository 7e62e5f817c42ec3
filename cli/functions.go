package cli

import (
	"encoding/json"
	"strings"

	"github.com/spf13/cobra"

	"github.com/kvnode/kvnode/cli/render"
	"github.com/kvnode/kvnode/client"
)

func newFunctionCmd(a *app) *cobra.Command {
	list := a.command("list", "List the functions (built-in and deployed)", `
List the ids of every function (GET /kv/v1/functions; permission
DATA:READ). With -o json the answer as it came: {"functions":[...]}.`, cobra.NoArgs, func(s *session, _ []string) error {
		ids, err := s.Functions().List(s.ctx)
		if err != nil {
			return err
		}
		if s.p.json {
			return s.raw()
		}
		t := render.NewTable(s.p.out, "ID")
		for _, id := range ids {
			t.Row(id)
		}
		return t.Flush()
	})
	return group("function", "List, run, deploy and remove server-side functions",
		list, functionRunCmd(a), functionDeployCmd(a), functionRemoveCmd(a))
}

func functionRunCmd(a *app) *cobra.Command {
	var onRegion string
	var onMembers, onGroups, filter, args []string
	c := a.command("run ID", "Run a function", `
Run the function ID (POST /kv/v1/functions/ID; permission: what the function
declares, DATA:WRITE by default). Without a target it runs on every member;
--on-region, --on-members and --on-groups choose where, and --filter keys
narrow a partitioned region's run to the groups owning them.

Arguments, in order: --arg TYPE:VALUE for a scalar (int:5, string:x) or
--arg '{"@type":"org.Order","id":1}' for an object with flat members.

  kvnode function run RegionSize --on-region orders
  kvnode function run SumField --on-region orders --arg string:totalPrice

The results (every executing member's, in member-name order) print as a
table; with -o json the answer as it came, a JSON array, or nothing for a
function without results.`, cobra.ExactArgs(1), func(s *session, ids []string) error {
		values, err := functionArgs(args)
		if err != nil {
			return err
		}
		target := client.Target{Region: onRegion, Members: onMembers, Groups: onGroups, Filter: filter}
		results, err := s.Functions().Run(s.ctx, ids[0], target, values...)
		switch {
		case err != nil:
			return err
		case results != nil:
			return printRows(s)
		case s.p.json:
			return nil
		}
		_, err = s.p.out.Write([]byte("(no result)\n"))
		return err
	})
	f := c.Flags()
	f.StringVar(&onRegion, "on-region", "", "run on the members holding this region")
	f.StringSliceVar(&onMembers, "on-members", nil, "run on these members (names, repeated or comma-separated)")
	f.StringSliceVar(&onGroups, "on-groups", nil, "run on the members of these member groups")
	f.StringSliceVar(&filter, "filter", nil, "keys narrowing a partitioned region's run (with --on-region)")
	f.StringArrayVar(&args, "arg", nil, "an argument: TYPE:VALUE, or a JSON object with \"@type\" (repeat in order)")
	return c
}

// functionArgs reads the --arg values: a JSON object as given, else a
// scalar TYPE:VALUE.
func functionArgs(args []string) ([]any, error) {
	out := make([]any, len(args))
	for i, s := range args {
		if t := strings.TrimSpace(s); strings.HasPrefix(t, "{") {
			if !json.Valid([]byte(t)) {
				return nil, usagef("--arg %s: not valid JSON", s)
			}
			out[i] = json.RawMessage(t)
			continue
		}
		v, err := binds("arg", []string{s})
		if err != nil {
			return nil, err
		}
		out[i] = v[0]
	}
	return out, nil
}

func functionDeployCmd(a *app) *cobra.Command {
	var spec client.Function
	c := a.command("deploy ID FILE|-", "Deploy a JavaScript function", `
Deploy the JavaScript in FILE ("-" for standard input) as the function ID
(PUT /management/v1/functions/ID; permission CLUSTER:MANAGE). The script
defines execute(ctx); a script that does not compile is a bad request
(exit code 2). Deploying an existing ID replaces it.

  kvnode function deploy inc inc.js --permission DATA:WRITE --script-timeout 5s`, cobra.ExactArgs(2), func(s *session, args []string) error {
		file, arg := args[1], ""
		if file == "-" {
			file, arg = "", "-"
		}
		src, err := readValue(s.cmd, arg, file)
		if err != nil {
			return err
		}
		spec.ID, spec.Source = args[0], string(src)
		if _, err := s.Functions().Deploy(s.ctx, spec); err != nil {
			return err
		}
		return s.done("function " + args[0] + " deployed")
	})
	f := c.Flags()
	f.StringVar(&spec.Permission, "permission", "", "what running it needs, e.g. DATA:READ (default DATA:WRITE)")
	f.BoolVar(&spec.DataAware, "data-aware", false, "the function runs where a region's data lives: callers must give --on-region")
	f.BoolVar(&spec.NoResult, "no-result", false, "the function returns nothing (the answer has no body)")
	f.StringVar(&spec.Description, "description", "", "a description")
	f.StringVar(&spec.Timeout, "script-timeout", "", "stop the script sooner than the node's --function-timeout, e.g. 5s")
	return c
}

func functionRemoveCmd(a *app) *cobra.Command {
	return a.command("remove ID", "Remove a deployed function", `
Remove the deployed function ID (DELETE /management/v1/functions/ID;
permission CLUSTER:MANAGE). An unknown ID is "not found" (exit code 3).`, cobra.ExactArgs(1), func(s *session, args []string) error {
		if err := s.Functions().Remove(s.ctx, args[0]); err != nil {
			return err
		}
		return s.done("function " + args[0] + " removed")
	})
}
