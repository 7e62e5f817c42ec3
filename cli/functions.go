package cli

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/url"
	"strings"

	"github.com/spf13/cobra"

	"github.com/kvnode/kvnode/cli/render"
	"github.com/kvnode/kvnode/cli/scalar"
)

func newFunctionCmd(a *app) *cobra.Command {
	list := legacyCommand("list", "List the functions (built-in and deployed)", `
List the ids of every function (GET /kv/v1/functions; permission
DATA:READ). With -o json the answer as it came: {"functions":[...]}.`, cobra.NoArgs, func(cmd *cobra.Command, _ []string) error {
		resp, err := a.call(cmd, request{Method: http.MethodGet, Path: "/kv/v1/functions"})
		if err != nil {
			return err
		}
		p := a.printer(cmd)
		if p.json {
			return p.raw(resp.Body)
		}
		var doc struct {
			Functions []string `json:"functions"`
		}
		if err := decode(resp.Body, &doc, "GET /kv/v1/functions"); err != nil {
			return err
		}
		t := render.NewTable(p.out, "ID")
		for _, id := range doc.Functions {
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
	c := legacyCommand("run ID", "Run a function", `
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
function without results.`, cobra.ExactArgs(1), func(cmd *cobra.Command, ids []string) error {
		q := url.Values{}
		if onRegion != "" {
			q.Set("onRegion", onRegion)
		}
		for name, list := range map[string][]string{"onMembers": onMembers, "onGroups": onGroups, "filter": filter} {
			if len(list) > 0 {
				q.Set(name, strings.Join(list, ","))
			}
		}
		req := request{Method: http.MethodPost, Path: "/kv/v1/functions/" + seg(ids[0]), Query: q}
		if len(args) > 0 {
			body, err := functionArgs(args)
			if err != nil {
				return err
			}
			req.Body = body
		}
		resp, err := a.call(cmd, req)
		if err != nil {
			return err
		}
		p := a.printer(cmd)
		if len(bytes.TrimSpace(resp.Body)) == 0 {
			if p.json {
				return nil
			}
			_, err := p.out.Write([]byte("(no result)\n"))
			return err
		}
		return printRows(p, resp.Body)
	})
	f := c.Flags()
	f.StringVar(&onRegion, "on-region", "", "run on the members holding this region")
	f.StringSliceVar(&onMembers, "on-members", nil, "run on these members (names, repeated or comma-separated)")
	f.StringSliceVar(&onGroups, "on-groups", nil, "run on the members of these member groups")
	f.StringSliceVar(&filter, "filter", nil, "keys narrowing a partitioned region's run (with --on-region)")
	f.StringArrayVar(&args, "arg", nil, "an argument: TYPE:VALUE, or a JSON object with \"@type\" (repeat in order)")
	return c
}

// functionArgs is the body of a function call: each --arg a scalar
// {"@type","@value"} or, when it is a JSON object, that object as given.
func functionArgs(args []string) ([]byte, error) {
	out := make([]json.RawMessage, len(args))
	for i, s := range args {
		if t := strings.TrimSpace(s); strings.HasPrefix(t, "{") {
			if !json.Valid([]byte(t)) {
				return nil, usagef("--arg %s: not valid JSON", s)
			}
			out[i] = json.RawMessage(t)
			continue
		}
		v, err := scalar.Parse("arg", s)
		if err != nil {
			return nil, Usage(err)
		}
		if out[i], err = json.Marshal(v.Typed()); err != nil {
			return nil, err
		}
	}
	return json.Marshal(out)
}

func functionDeployCmd(a *app) *cobra.Command {
	var spec struct {
		Source      string `json:"source"`
		Permission  string `json:"permission,omitempty"`
		DataAware   bool   `json:"dataAware"`
		HasResult   bool   `json:"hasResult"`
		Description string `json:"description,omitempty"`
		Timeout     string `json:"timeout,omitempty"`
	}
	var noResult bool
	c := legacyCommand("deploy ID FILE|-", "Deploy a JavaScript function", `
Deploy the JavaScript in FILE ("-" for standard input) as the function ID
(PUT /management/v1/functions/ID; permission CLUSTER:MANAGE). The script
defines execute(ctx); a script that does not compile is a bad request
(exit code 2). Deploying an existing ID replaces it.

  kvnode function deploy inc inc.js --permission DATA:WRITE --script-timeout 5s`, cobra.ExactArgs(2), func(cmd *cobra.Command, args []string) error {
		file, arg := args[1], ""
		if file == "-" {
			file, arg = "", "-"
		}
		src, err := readValue(cmd, arg, file)
		if err != nil {
			return err
		}
		spec.Source, spec.HasResult = string(src), !noResult
		body, err := json.Marshal(spec)
		if err != nil {
			return err
		}
		resp, err := a.call(cmd, request{Method: http.MethodPut, Path: "/management/v1/functions/" + seg(args[0]), Body: body})
		if err != nil {
			return err
		}
		return message(a.printer(cmd), resp.Body, "function "+args[0]+" deployed")
	})
	f := c.Flags()
	f.StringVar(&spec.Permission, "permission", "", "what running it needs, e.g. DATA:READ (default DATA:WRITE)")
	f.BoolVar(&spec.DataAware, "data-aware", false, "the function runs where a region's data lives: callers must give --on-region")
	f.BoolVar(&noResult, "no-result", false, "the function returns nothing (the answer has no body)")
	f.StringVar(&spec.Description, "description", "", "a description")
	f.StringVar(&spec.Timeout, "script-timeout", "", "stop the script sooner than the node's --function-timeout, e.g. 5s")
	return c
}

func functionRemoveCmd(a *app) *cobra.Command {
	return legacyCommand("remove ID", "Remove a deployed function", `
Remove the deployed function ID (DELETE /management/v1/functions/ID;
permission CLUSTER:MANAGE). An unknown ID is "not found" (exit code 3).`, cobra.ExactArgs(1), func(cmd *cobra.Command, args []string) error {
		resp, err := a.call(cmd, request{Method: http.MethodDelete, Path: "/management/v1/functions/" + seg(args[0])})
		if err != nil {
			return err
		}
		return message(a.printer(cmd), resp.Body, "function "+args[0]+" removed")
	})
}
