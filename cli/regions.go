package cli

import (
	"encoding/json"
	"net/http"
	"strings"

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
				Name string `json:"name"`
				Type string `json:"type"`
			} `json:"regions"`
		}
		if err := decode(resp.Body, &doc, "GET /kv/v1"); err != nil {
			return err
		}
		t := newTable(p.out, "NAME", "TYPE")
		for _, r := range doc.Regions {
			t.row(r.Name, r.Type)
		}
		return t.flush()
	})

	var kind string
	create := command("create NAME", "Create a region", `
Create a region (POST /management/v1/regions; permission CLUSTER:MANAGE):
REPLICATE keeps every entry on every member, PARTITION spreads the entries
over the partition groups. An existing region is a conflict (exit code 4).`, cobra.ExactArgs(1), func(cmd *cobra.Command, args []string) error {
		body, err := json.Marshal(map[string]string{"name": args[0], "type": strings.ToUpper(kind)})
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

	destroy := command("destroy REGION", "Destroy a region and every entry in it", `
Destroy a region and all its entries (DELETE /management/v1/regions/REGION;
permission CLUSTER:MANAGE). There is no undo.`, cobra.ExactArgs(1), func(cmd *cobra.Command, args []string) error {
		resp, err := a.call(cmd, request{Method: http.MethodDelete, Path: "/management/v1/regions/" + seg(args[0])})
		if err != nil {
			return err
		}
		return message(a.printer(cmd), resp.Body, "region "+args[0]+" deleted")
	})
	return group("region", "List, create and destroy regions", list, create, destroy)
}
