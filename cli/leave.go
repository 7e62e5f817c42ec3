package cli

import (
	"context"
	"fmt"
	"net/http"

	"github.com/spf13/cobra"
)

func newLeaveCmd(a *app) *cobra.Command {
	return command("leave", "Make one member leave the cluster for good (a scale-down) and stop", `
Ask the member at --url to leave the cluster (POST /management/v1/leave):
it hands the leadership of its groups to other members, leaves gossip and
the control group, waits while its partition replicas move to the other
members, and its process exits. Use it before removing a member for good
(a scale-down); a plain SIGTERM is a restart and keeps the member in (unless
it runs with --leave-on-shutdown). Exactly one --url: the member that
answers is the one that leaves, so it is never sent to another. Follow the
leave with "kvnode status" on another member. Permission CLUSTER:MANAGE.`, cobra.NoArgs, func(cmd *cobra.Command, _ []string) error {
		c, err := a.client()
		if err != nil {
			return err
		}
		if len(c.bases) != 1 {
			return usagef("leave: give exactly one --url, the member that should leave (%d given)", len(c.bases))
		}
		ctx := cmd.Context()
		if ctx == nil {
			ctx = context.Background()
		}
		// c.do with one URL: a member that cannot be reached is exit code
		// 4 (unavailable), as for every command.
		resp, err := c.do(ctx, request{Method: http.MethodPost, Path: "/management/v1/leave"})
		if err != nil {
			return err
		}
		p := a.printer(cmd)
		if p.json {
			return p.raw(resp.Body)
		}
		_, err = fmt.Fprintf(p.out, "%s is leaving the cluster; it stops once its partition replicas have moved (see kvnode status on another member)\n", c.bases[0].Redacted())
		return err
	})
}
