package cli

import (
	"net/http"

	"github.com/spf13/cobra"
)

func newMemberCmd(a *app) *cobra.Command {
	remove := legacyCommand("remove NAME", "Remove a member that is gone for good", `
Remove a member that will not come back (a scaled-away pod, a lost machine)
from the cluster now, instead of after --dead-member-timeout
(DELETE /management/v1/members/NAME; permission CLUSTER:MANAGE): the
control group's leader removes it and its partition replicas move to the
remaining members (follow it with "kvnode status"). A member that still
answers gossip is refused as a conflict (exit code 4): stop it first. Ask
another member than the one removed.`, cobra.ExactArgs(1), func(cmd *cobra.Command, args []string) error {
		resp, err := a.call(cmd, request{Method: http.MethodDelete, Path: "/management/v1/members/" + seg(args[0])})
		if err != nil {
			return err
		}
		return message(a.printer(cmd), resp.Body, "member "+args[0]+" removed")
	})
	return group("member", "Manage the cluster's members", remove)
}
