package cli

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/kvnode/kvnode/cli/render"
	"github.com/spf13/cobra"
)

func newGetCmd(a *app) *cobra.Command {
	var ignoreMissing bool
	c := command("get REGION KEY...", "Read entries", `
Read the values of one or more keys (GET /kv/v1/REGION/KEY[,KEY...];
permission DATA:READ:REGION). Keys may be separate arguments or a comma
list. A missing key is "not found" (exit code 3) for a single key and a bad
request (exit code 2) among several, unless --ignore-missing shows it as
null. With -o json the answer as it came: the value for one key,
{"REGION":[values...]} for several.`, cobra.MinimumNArgs(2), func(cmd *cobra.Command, args []string) error {
		keys, err := splitKeys(args[1:])
		if err != nil {
			return err
		}
		req := request{Method: http.MethodGet, Path: "/kv/v1/" + seg(args[0]) + "/" + keyPath(keys)}
		if ignoreMissing {
			req.Query = url.Values{"ignoreMissingKey": {"true"}}
		}
		resp, err := a.call(cmd, req)
		if err != nil {
			return err
		}
		p := a.printer(cmd)
		if p.json {
			return p.raw(resp.Body)
		}
		t := render.NewTable(p.out, "KEY", "VALUE")
		if len(keys) == 1 {
			t.Row(keys[0], render.Cell(resp.Body))
			return t.Flush()
		}
		var doc map[string][]json.RawMessage
		if err := decode(resp.Body, &doc, "GET "+req.Path); err != nil {
			return err
		}
		values := doc[args[0]]
		for i, k := range keys {
			v := json.RawMessage("null")
			if i < len(values) {
				v = values[i]
			}
			t.Row(k, render.Cell(v))
		}
		return t.Flush()
	})
	c.Flags().BoolVar(&ignoreMissing, "ignore-missing", false, "show a missing key's value as null instead of failing (several keys)")
	return c
}

func newPutCmd(a *app) *cobra.Command {
	var file, expect string
	var ifAbsent, replace bool
	var ttl time.Duration
	c := command("put REGION KEY [VALUE|-]", "Write an entry", `
Write a JSON object as the value of KEY: from the argument, from --file, or
from standard input with "-".

  (default)      PUT /kv/v1/REGION/KEY: create or overwrite
  --if-absent    POST /kv/v1/REGION?key=KEY: only if the key is absent; else a
                 conflict (exit code 4) that prints the current value
  --replace      PUT ...?op=REPLACE: only if the key exists; else the API's 400
  --expect OLD   PUT ...?op=CAS: only if the current value equals OLD; else a
                 conflict that prints the current value
  --ttl D        ...&ttl=SECONDS: the entry expires D after this write (whole
                 seconds: 30s, 10m; 0: never, whatever the region's default)

Permission DATA:WRITE:REGION:KEY. The answer has no body, so -o json prints
nothing.`, cobra.RangeArgs(2, 3), func(cmd *cobra.Command, args []string) error {
		arg := ""
		if len(args) == 3 {
			arg = args[2]
		}
		value, err := readValue(cmd, arg, file)
		if err != nil {
			return err
		}
		modes := 0
		for _, on := range []bool{ifAbsent, replace, expect != ""} {
			if on {
				modes++
			}
		}
		if modes > 1 {
			return usagef("--if-absent, --replace and --expect exclude each other")
		}
		region, key := args[0], args[1]
		req := request{Method: http.MethodPut, Path: "/kv/v1/" + seg(region) + "/" + seg(key), Query: url.Values{}, Body: value}
		switch {
		case ifAbsent:
			req = request{Method: http.MethodPost, Path: "/kv/v1/" + seg(region), Query: url.Values{"key": {key}}, Body: value}
		case replace:
			req.Query.Set("op", "REPLACE")
		case expect != "":
			if !json.Valid([]byte(expect)) || !json.Valid(value) {
				return usagef("--expect: the expected and the new value must both be JSON objects")
			}
			req.Query.Set("op", "CAS")
			req.Body = fmt.Appendf(nil, `{"@old":%s,"@new":%s}`, bytes.TrimSpace([]byte(expect)), bytes.TrimSpace(value))
		}
		if cmd.Flags().Changed("ttl") {
			secs, err := ttlSeconds(ttl)
			if err != nil {
				return err
			}
			req.Query.Set("ttl", strconv.FormatInt(secs, 10))
		}
		resp, err := a.call(cmd, req)
		if err != nil {
			return err
		}
		p := a.printer(cmd)
		if p.json {
			return p.raw(resp.Body)
		}
		_, err = fmt.Fprintf(p.out, "stored %s/%s\n", region, key)
		return err
	})
	c.Flags().StringVarP(&file, "file", "f", "", "read the value from this file")
	c.Flags().BoolVar(&ifAbsent, "if-absent", false, "create only: a conflict if the key exists")
	c.Flags().BoolVar(&replace, "replace", false, "update only: refused if the key is absent")
	c.Flags().StringVar(&expect, "expect", "", "compare-and-set: write only if the current value equals this JSON object")
	c.Flags().DurationVar(&ttl, "ttl", 0, "the entry's time-to-live from this write, whole seconds (0: never expires; default: the region's)")
	return c
}

func newDeleteCmd(a *app) *cobra.Command {
	var all bool
	c := command("delete REGION [KEY...]", "Delete entries", `
Delete keys (DELETE /kv/v1/REGION/KEY[,KEY...]): all or none; a missing key
is "not found" (exit code 3) and nothing is deleted. With --all and no key,
remove every entry of a replicated region (DELETE /kv/v1/REGION; a
partitioned region refuses it, exit code 2). Permission DATA:WRITE:REGION.`, cobra.MinimumNArgs(1), func(cmd *cobra.Command, args []string) error {
		path := "/kv/v1/" + seg(args[0])
		what := "every entry of " + args[0]
		switch {
		case all && len(args) > 1:
			return usagef("--all deletes every entry: give no key with it")
		case !all && len(args) == 1:
			return usagef("give the keys to delete, or --all for every entry")
		case !all:
			keys, err := splitKeys(args[1:])
			if err != nil {
				return err
			}
			path += "/" + keyPath(keys)
			what = args[0] + "/" + strings.Join(keys, ",")
		}
		resp, err := a.call(cmd, request{Method: http.MethodDelete, Path: path})
		if err != nil {
			return err
		}
		p := a.printer(cmd)
		if p.json {
			return p.raw(resp.Body)
		}
		_, err = fmt.Fprintln(p.out, "deleted", what)
		return err
	})
	c.Flags().BoolVar(&all, "all", false, "delete every entry of the region (replicated regions only)")
	return c
}

func newKeysCmd(a *app) *cobra.Command {
	return command("keys REGION", "List the keys of a region", `
List every key of a region, in key order (GET /kv/v1/REGION/keys;
permission DATA:READ:REGION). With -o json the answer as it came:
{"keys":[...]}.`, cobra.ExactArgs(1), func(cmd *cobra.Command, args []string) error {
		path := "/kv/v1/" + seg(args[0]) + "/keys"
		resp, err := a.call(cmd, request{Method: http.MethodGet, Path: path})
		if err != nil {
			return err
		}
		p := a.printer(cmd)
		if p.json {
			return p.raw(resp.Body)
		}
		var doc struct {
			Keys []string `json:"keys"`
		}
		if err := decode(resp.Body, &doc, "GET "+path); err != nil {
			return err
		}
		t := render.NewTable(p.out, "KEY")
		for _, k := range doc.Keys {
			t.Row(k)
		}
		return t.Flush()
	})
}
