package cli

import "github.com/spf13/cobra"

func newMemberCmd(a *app) *cobra.Command {
	remove := a.command("remove NAME", "Remove a member that is gone for good", `
Remove a member that will not come back (a scaled-away pod, a lost machine)
from the cluster now, instead of after --dead-member-timeout
(DELETE /management/v1/members/NAME; permission CLUSTER:MANAGE): the
control group's leader removes it and its partition replicas move to the
remaining members (follow it with "kvnode status"). A member that still
answers gossip is refused as a conflict (exit code 4): stop it first. Ask
another member than the one removed.`, cobra.ExactArgs(1), func(s *session, args []string) error {
		if err := s.Cluster().RemoveMember(s.ctx, args[0]); err != nil {
			return err
		}
		return s.done("member " + args[0] + " removed")
	})
	return group("member", "Manage the cluster's members", remove)
}
