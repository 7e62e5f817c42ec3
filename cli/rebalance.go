package cli

import (
	"fmt"
	"strconv"
	"time"

	"github.com/spf13/cobra"

	"github.com/kvnode/kvnode/cli/render"
	"github.com/kvnode/kvnode/client"
)

func newRebalanceCmd(a *app) *cobra.Command {
	var wait bool
	start := a.command("rebalance", "Even out buckets, replicas and leaderships over the members", `
Start a rebalance (POST /management/v1/operations/rebalances; permission
CLUSTER:MANAGE), as Geode's "gfsh rebalance": the partition regions'
buckets move between partition groups, online, until each group owns about
as many, and the groups' replicas and leaderships are spread evenly over
the live members. It prints the operation's id; --wait follows it to its
end, printing progress, and fails (exit code 1) if it ends in ERROR.
"kvnode rebalance status" lists the operations.`, cobra.NoArgs, func(s *session, _ []string) error {
		id, err := s.Cluster().Rebalance(s.ctx)
		if err != nil {
			return err
		}
		return started(s, id, wait)
	})
	start.Flags().BoolVar(&wait, "wait", false, "follow the rebalance until it ends")

	status := a.command("status [ID]", "Show rebalance operations", `
Show one rebalance operation (GET /management/v1/operations/rebalances/ID)
or, without an id, every one the cluster remembers, oldest first: status
(IN_PROGRESS, SUCCESS, ERROR), when it started and ended, and what it
moved.`, cobra.MaximumNArgs(1), func(s *session, args []string) error {
		var ops []client.Operation
		if len(args) == 1 {
			op, err := s.Cluster().Operation(s.ctx, args[0])
			if err != nil {
				return err
			}
			ops = []client.Operation{*op}
		} else {
			var err error
			if ops, err = s.Cluster().Operations(s.ctx); err != nil {
				return err
			}
		}
		if s.p.json {
			return s.raw()
		}
		t := render.NewTable(s.p.out, "ID", "STATUS", "STARTED", "ENDED", "GROUPS", "BUCKETS", "BYTES", "LEADERSHIPS", "TOOK", "MESSAGE")
		for _, r := range ops {
			ended, groups := "-", "-"
			if !r.End.IsZero() {
				ended = r.End.Local().Format(time.DateTime)
			}
			if r.Result.PartitionGroups > 0 {
				groups = strconv.Itoa(r.Result.PartitionGroups)
			}
			t.Row(r.ID, r.Status, r.Start.Local().Format(time.DateTime), ended, groups,
				strconv.Itoa(r.Result.BucketsMoved), strconv.FormatInt(r.Result.BytesMoved, 10), strconv.Itoa(r.Result.LeadershipsMoved),
				(time.Duration(r.Result.Millis) * time.Millisecond).String(), r.Result.StatusMessage)
		}
		return t.Flush()
	})
	start.AddCommand(status)
	return start
}

func newPartitionsCmd(a *app) *cobra.Command {
	var groups int
	var wait bool
	set := a.command("set --groups N", "Grow the partition groups of a running cluster", `
Grow the cluster's partition groups to N (PATCH /management/v1/partitions
with {"groups": N}; permission CLUSTER:MANAGE): the new groups are placed
on the members and a rebalance moves buckets into them, online, while the
cluster serves. N is at most 113 (one bucket each); a smaller N than the
cluster has is refused (partition groups are not removed). It prints the
rebalance's id; --wait follows it to its end.`, cobra.NoArgs, func(s *session, _ []string) error {
		if !s.cmd.Flags().Changed("groups") {
			return usagef("partitions set: --groups N is required")
		}
		id, err := s.Cluster().GrowPartitions(s.ctx, groups)
		if err != nil {
			return err
		}
		return started(s, id, wait)
	})
	set.Flags().IntVar(&groups, "groups", 0, "the partition group count wanted")
	set.Flags().BoolVar(&wait, "wait", false, "follow the rebalance that moves buckets into the new groups until it ends")
	return group("partitions", "Manage the cluster's partition groups", set)
}

// started prints a started operation's id (the 202's body with -o
// json), and with wait follows it: a line each time it moved more, and its
// end. Each call of the wait has the connection's timeout.
func started(s *session, id string, wait bool) error {
	p := s.p
	if !wait {
		if p.json {
			return s.raw()
		}
		_, err := fmt.Fprintf(p.out, "rebalance %s started; follow it with: kvnode rebalance status %s\n", id, id)
		return err
	}
	if !p.json {
		if _, err := fmt.Fprintf(p.out, "rebalance %s started\n", id); err != nil {
			return err
		}
	}
	s.untimed()
	last := -1
	for {
		ctx, cancel := s.bounded()
		r, err := s.Cluster().Operation(ctx, id)
		cancel()
		if err != nil {
			return err
		}
		if r.Status != client.OperationInProgress {
			if p.json {
				if err := s.raw(); err != nil {
					return err
				}
			} else if _, err := fmt.Fprintf(p.out, "rebalance %s: %s after %v: %d buckets (%d bytes) and %d leaderships moved; %s\n",
				r.ID, r.Status, time.Duration(r.Result.Millis)*time.Millisecond,
				r.Result.BucketsMoved, r.Result.BytesMoved, r.Result.LeadershipsMoved, r.Result.StatusMessage); err != nil {
				return err
			}
			if r.Status == client.OperationFailed {
				return fmt.Errorf("rebalance %s ended in ERROR: %s", r.ID, r.Result.StatusMessage)
			}
			return nil
		}
		if r.Result.BucketsMoved != last && !p.json {
			last = r.Result.BucketsMoved
			if _, err := fmt.Fprintf(p.out, "  %d buckets moved so far\n", last); err != nil {
				return err
			}
		}
		time.Sleep(time.Second)
	}
}
