package cli

import (
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/kvnode/kvnode/cli/render"
	"github.com/kvnode/kvnode/client"
)

func newRegionCmd(a *app) *cobra.Command {
	list := a.command("list", "List the regions and their types", `
List the regions (GET /kv/v1; permission DATA:READ). With -o json the
answer as it came: {"regions":[{"name":..,"type":..}]}.`, cobra.NoArgs, func(s *session, _ []string) error {
		regions, err := s.Regions(s.ctx)
		if err != nil {
			return err
		}
		if s.p.json {
			return s.raw()
		}
		// The TTL column appears once some region has a default
		// time-to-live: most clusters have none.
		ttl := false
		for _, r := range regions {
			ttl = ttl || r.EntryTimeToLive > 0
		}
		cols := []string{"NAME", "TYPE"}
		if ttl {
			cols = append(cols, "TTL")
		}
		t := render.NewTable(s.p.out, cols...)
		for _, r := range regions {
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
	create := a.command("create NAME", "Create a region", `
Create a region (POST /management/v1/regions; permission CLUSTER:MANAGE):
REPLICATE keeps every entry on every member, PARTITION spreads the entries
over the partition groups. With --ttl (whole seconds: 90s, 15m, 24h) every
entry written without a time-to-live of its own expires that long after
its write. An existing region is a conflict (exit code 4).`, cobra.ExactArgs(1), func(s *session, args []string) error {
		info := client.RegionInfo{Name: args[0], Type: strings.ToUpper(kind)}
		if s.cmd.Flags().Changed("ttl") {
			secs, err := ttlSeconds(ttl)
			if err != nil {
				return err
			}
			info.EntryTimeToLive = secs
		}
		if err := s.CreateRegion(s.ctx, info); err != nil {
			return err
		}
		return s.done("region " + args[0] + " created")
	})
	create.Flags().StringVarP(&kind, "type", "t", "REPLICATE", "REPLICATE or PARTITION")
	create.Flags().DurationVar(&ttl, "ttl", 0, "the entries' default time-to-live, whole seconds (0: never expire)")

	var newTTL time.Duration
	alter := a.command("alter REGION --ttl DURATION", "Change a region's default entry time-to-live", `
Change the default time-to-live of the region's entries (PATCH
/management/v1/regions/REGION; permission CLUSTER:MANAGE): whole seconds,
0 for never. It applies to writes after the change; entries already
written keep their deadline.`, cobra.ExactArgs(1), func(s *session, args []string) error {
		if !s.cmd.Flags().Changed("ttl") {
			return usagef("region alter: give the new default time-to-live with --ttl")
		}
		secs, err := ttlSeconds(newTTL)
		if err != nil {
			return err
		}
		if _, err := s.AlterRegion(s.ctx, args[0], secs); err != nil {
			return err
		}
		if s.p.json {
			return s.raw()
		}
		_, err = fmt.Fprintf(s.p.out, "region %s: entry time-to-live %s\n", args[0], showTTL(secs))
		return err
	})
	alter.Flags().DurationVar(&newTTL, "ttl", 0, "the new default time-to-live, whole seconds (0: never expire)")

	destroy := a.command("destroy REGION", "Destroy a region and every entry in it", `
Destroy a region and all its entries (DELETE /management/v1/regions/REGION;
permission CLUSTER:MANAGE). There is no undo.`, cobra.ExactArgs(1), func(s *session, args []string) error {
		if err := s.DestroyRegion(s.ctx, args[0]); err != nil {
			return err
		}
		return s.done("region " + args[0] + " deleted")
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
