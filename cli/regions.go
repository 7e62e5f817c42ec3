package cli

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/kvnode/kvnode/cli/render"
	"github.com/spf13/cobra"
)

func newRegionCmd(a *app) *cobra.Command {
	list := command("list", "List the regions and their types", `
List the regions (GET /kv/v1; permission DATA:READ). With -o json the
answer as it came: {"regions":[{"name":..,"type":..}]}.`, cobra.NoArgs, func(cmd *cobra.Command, _ []string) error {
		resp, err := a.call(cmd, request{Method: http.MethodGet, Path: "/kv/v1"})
		if err != nil {
			return err
		}
		p := a.printer(cmd)
		if p.json {
			return p.raw(resp.Body)
		}
		var doc struct {
			Regions []struct {
				Name            string `json:"name"`
				Type            string `json:"type"`
				EntryTimeToLive int64  `json:"entryTimeToLive"`
			} `json:"regions"`
		}
		if err := decode(resp.Body, &doc, "GET /kv/v1"); err != nil {
			return err
		}
		// The TTL column appears once some region has a default
		// time-to-live: most clusters have none.
		ttl := false
		for _, r := range doc.Regions {
			ttl = ttl || r.EntryTimeToLive > 0
		}
		cols := []string{"NAME", "TYPE"}
		if ttl {
			cols = append(cols, "TTL")
		}
		t := render.NewTable(p.out, cols...)
		for _, r := range doc.Regions {
			if ttl {
				t.Row(r.Name, r.Type, showTTL(r.EntryTimeToLive))
			} else {
				t.Row(r.Name, r.Type)
			}
		}
		return t.Flush()
	})

	var kind string
	var ttl time.Duration
	create := command("create NAME", "Create a region", `
Create a region (POST /management/v1/regions; permission CLUSTER:MANAGE):
REPLICATE keeps every entry on every member, PARTITION spreads the entries
over the partition groups. With --ttl (whole seconds: 90s, 15m, 24h) every
entry written without a time-to-live of its own expires that long after
its write. An existing region is a conflict (exit code 4).`, cobra.ExactArgs(1), func(cmd *cobra.Command, args []string) error {
		cfg := map[string]any{"name": args[0], "type": strings.ToUpper(kind)}
		if cmd.Flags().Changed("ttl") {
			secs, err := ttlSeconds(ttl)
			if err != nil {
				return err
			}
			cfg["entryTimeToLive"] = secs
		}
		body, err := json.Marshal(cfg)
		if err != nil {
			return err
		}
		resp, err := a.call(cmd, request{Method: http.MethodPost, Path: "/management/v1/regions", Body: body})
		if err != nil {
			return err
		}
		return message(a.printer(cmd), resp.Body, "region "+args[0]+" created")
	})
	create.Flags().StringVarP(&kind, "type", "t", "REPLICATE", "REPLICATE or PARTITION")
	create.Flags().DurationVar(&ttl, "ttl", 0, "the entries' default time-to-live, whole seconds (0: never expire)")

	var newTTL time.Duration
	alter := command("alter REGION --ttl DURATION", "Change a region's default entry time-to-live", `
Change the default time-to-live of the region's entries (PATCH
/management/v1/regions/REGION; permission CLUSTER:MANAGE): whole seconds,
0 for never. It applies to writes after the change; entries already
written keep their deadline.`, cobra.ExactArgs(1), func(cmd *cobra.Command, args []string) error {
		if !cmd.Flags().Changed("ttl") {
			return usagef("region alter: give the new default time-to-live with --ttl")
		}
		secs, err := ttlSeconds(newTTL)
		if err != nil {
			return err
		}
		resp, err := a.call(cmd, request{Method: http.MethodPatch, Path: "/management/v1/regions/" + seg(args[0]),
			Body: fmt.Appendf(nil, `{"entryTimeToLive":%d}`, secs)})
		if err != nil {
			return err
		}
		p := a.printer(cmd)
		if p.json {
			return p.raw(resp.Body)
		}
		_, err = fmt.Fprintf(p.out, "region %s: entry time-to-live %s\n", args[0], showTTL(secs))
		return err
	})
	alter.Flags().DurationVar(&newTTL, "ttl", 0, "the new default time-to-live, whole seconds (0: never expire)")

	destroy := command("destroy REGION", "Destroy a region and every entry in it", `
Destroy a region and all its entries (DELETE /management/v1/regions/REGION;
permission CLUSTER:MANAGE). There is no undo.`, cobra.ExactArgs(1), func(cmd *cobra.Command, args []string) error {
		resp, err := a.call(cmd, request{Method: http.MethodDelete, Path: "/management/v1/regions/" + seg(args[0])})
		if err != nil {
			return err
		}
		return message(a.printer(cmd), resp.Body, "region "+args[0]+" deleted")
	})
	return group("region", "List, create, alter and destroy regions", list, create, alter, destroy)
}

// ttlSeconds is a --ttl as the API's whole seconds.
func ttlSeconds(d time.Duration) (int64, error) {
	if d < 0 || d%time.Second != 0 {
		return 0, usagef("--ttl %v: a time-to-live is whole seconds (90s, 15m, 24h), 0 for never", d)
	}
	return int64(d / time.Second), nil
}

// showTTL renders a time-to-live in seconds for a person: 1m30s, or never.
func showTTL(secs int64) string {
	if secs == 0 {
		return "never"
	}
	return (time.Duration(secs) * time.Second).String()
}
