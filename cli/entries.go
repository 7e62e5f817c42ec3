package cli

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/kvnode/kvnode/cli/render"
	"github.com/kvnode/kvnode/client"
)

func newGetCmd(a *app) *cobra.Command {
	var ignoreMissing bool
	c := a.command("get REGION KEY...", "Read entries", `
Read the values of one or more keys (GET /kv/v1/REGION/KEY[,KEY...];
permission DATA:READ:REGION). Keys may be separate arguments or a comma
list. A missing key is "not found" (exit code 3) for a single key and a bad
request (exit code 2) among several, unless --ignore-missing shows it as
null. With -o json the answer as it came: the value for one key,
{"REGION":[values...]} for several.`, cobra.MinimumNArgs(2), func(s *session, args []string) error {
		keys, err := splitKeys(args[1:])
		if err != nil {
			return err
		}
		r := s.Region(args[0])
		var values []json.RawMessage
		if len(keys) == 1 && !ignoreMissing {
			var v json.RawMessage
			v, err = r.Get(s.ctx, keys[0])
			values = []json.RawMessage{v}
		} else {
			values, err = r.GetMany(s.ctx, keys)
		}
		if err != nil {
			return err
		}
		if !ignoreMissing {
			for i, v := range values {
				if v == nil {
					return &missingKeyError{region: args[0], key: keys[i]}
				}
			}
		}
		if s.p.json {
			return s.raw()
		}
		t := render.NewTable(s.p.out, "KEY", "VALUE")
		for i, k := range keys {
			v := values[i]
			if v == nil {
				v = json.RawMessage("null")
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
	c := a.command("put REGION KEY [VALUE|-]", "Write an entry", `
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
nothing.`, cobra.RangeArgs(2, 3), func(s *session, args []string) error {
		arg := ""
		if len(args) == 3 {
			arg = args[2]
		}
		value, err := readValue(s.cmd, arg, file)
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
		var opts []client.Option
		if s.cmd.Flags().Changed("ttl") {
			secs, err := ttlSeconds(ttl)
			if err != nil {
				return err
			}
			opts = append(opts, client.WithTTL(time.Duration(secs)*time.Second))
		}
		region, key := args[0], args[1]
		r, v := s.Region(region), json.RawMessage(value)
		switch {
		case ifAbsent:
			_, err = r.Create(s.ctx, key, v, opts...)
		case replace:
			err = r.Replace(s.ctx, key, v, opts...)
		case expect != "":
			if !json.Valid([]byte(expect)) || !json.Valid(value) {
				return usagef("--expect: the expected and the new value must both be JSON objects")
			}
			err = r.CompareAndSet(s.ctx, key, json.RawMessage(expect), v, opts...)
		default:
			err = r.Put(s.ctx, key, v, opts...)
		}
		if err != nil {
			return err
		}
		if s.p.json {
			return s.raw()
		}
		_, err = fmt.Fprintf(s.p.out, "stored %s/%s\n", region, key)
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
	c := a.command("delete REGION [KEY...]", "Delete entries", `
Delete keys (DELETE /kv/v1/REGION/KEY[,KEY...]): all or none; a missing key
is "not found" (exit code 3) and nothing is deleted. With --all and no key,
remove every entry of a replicated region (DELETE /kv/v1/REGION; a
partitioned region refuses it, exit code 2). Permission DATA:WRITE:REGION.`, cobra.MinimumNArgs(1), func(s *session, args []string) error {
		r, what := s.Region(args[0]), "every entry of "+args[0]
		var err error
		switch {
		case all && len(args) > 1:
			return usagef("--all deletes every entry: give no key with it")
		case !all && len(args) == 1:
			return usagef("give the keys to delete, or --all for every entry")
		case all:
			err = r.Clear(s.ctx)
		default:
			keys, kerr := splitKeys(args[1:])
			if kerr != nil {
				return kerr
			}
			what = args[0] + "/" + strings.Join(keys, ",")
			err = r.Delete(s.ctx, keys...)
		}
		if err != nil {
			return err
		}
		if s.p.json {
			return s.raw()
		}
		_, err = fmt.Fprintln(s.p.out, "deleted", what)
		return err
	})
	c.Flags().BoolVar(&all, "all", false, "delete every entry of the region (replicated regions only)")
	return c
}

func newKeysCmd(a *app) *cobra.Command {
	return a.command("keys REGION", "List the keys of a region", `
List every key of a region, in key order (GET /kv/v1/REGION/keys;
permission DATA:READ:REGION). With -o json the answer as it came:
{"keys":[...]}.`, cobra.ExactArgs(1), func(s *session, args []string) error {
		if s.p.json {
			return keysJSON(s, args[0])
		}
		var keys []string
		for k, err := range s.Region(args[0]).Keys(s.ctx) {
			if err != nil {
				return err
			}
			keys = append(keys, k)
		}
		t := render.NewTable(s.p.out, "KEY")
		for _, k := range keys {
			t.Row(k)
		}
		return t.Flush()
	})
}

// keysJSON prints a region's keys as the API's listing writes them,
// {"keys":[...]}, while they arrive: a region of any size takes one key's
// memory.
func keysJSON(s *session, region string) error {
	w := bufio.NewWriter(s.p.out)
	var key bytes.Buffer
	enc := json.NewEncoder(&key)
	enc.SetEscapeHTML(false) // as the members write keys
	w.WriteString(`{"keys":[`)
	first := true
	for k, err := range s.Region(region).Keys(s.ctx) {
		if err != nil {
			return err
		}
		if !first {
			w.WriteByte(',')
		}
		first = false
		key.Reset()
		if err := enc.Encode(k); err != nil {
			return err
		}
		w.Write(bytes.TrimSuffix(key.Bytes(), []byte("\n")))
	}
	w.WriteString("]}\n")
	return w.Flush()
}

// missingKeyError is a key missing among several that get asked for
// without --ignore-missing: the API would have refused the whole request
// (400), and so does get.
type missingKeyError struct{ region, key string }

func (e *missingKeyError) Error() string {
	return fmt.Sprintf("key %q of region %q not found (give --ignore-missing to show it as null)", e.key, e.region)
}

func (*missingKeyError) ExitCode() int { return ExitBadInput }
