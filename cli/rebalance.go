package cli

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/kvnode/kvnode/cli/render"
	"github.com/spf13/cobra"
)

// The rebalance operations of the management API, as Geode's management
// REST API has them (docs/operations.md, "Scale-out: partition groups and
// rebalance").
const rebalancesPath = "/management/v1/operations/rebalances"

// rebalanceRecord is GET /management/v1/operations/rebalances/{id}.
type rebalanceRecord struct {
	OperationID     string     `json:"operationId"`
	OperationStatus string     `json:"operationStatus"`
	OperationStart  time.Time  `json:"operationStart"`
	OperationEnd    *time.Time `json:"operationEnd"`
	Result          struct {
		StatusMessage    string `json:"statusMessage"`
		PartitionGroups  int    `json:"partitionGroups"`
		BucketsMoved     int    `json:"bucketTransfersCompleted"`
		BytesMoved       int64  `json:"bucketTransferBytes"`
		LeadershipsMoved int    `json:"primaryTransfersCompleted"`
		Millis           int64  `json:"timeInMilliseconds"`
	} `json:"result"`
}

func newRebalanceCmd(a *app) *cobra.Command {
	var wait bool
	start := legacyCommand("rebalance", "Even out buckets, replicas and leaderships over the members", `
Start a rebalance (POST /management/v1/operations/rebalances; permission
CLUSTER:MANAGE), as Geode's "gfsh rebalance": the partition regions'
buckets move between partition groups, online, until each group owns about
as many, and the groups' replicas and leaderships are spread evenly over
the live members. It prints the operation's id; --wait follows it to its
end, printing progress, and fails (exit code 1) if it ends in ERROR.
"kvnode rebalance status" lists the operations.`, cobra.NoArgs, func(cmd *cobra.Command, _ []string) error {
		resp, err := a.call(cmd, request{Method: http.MethodPost, Path: rebalancesPath})
		if err != nil {
			return err
		}
		return a.started(cmd, resp.Body, wait)
	})
	start.Flags().BoolVar(&wait, "wait", false, "follow the rebalance until it ends")

	status := legacyCommand("status [ID]", "Show rebalance operations", `
Show one rebalance operation (GET /management/v1/operations/rebalances/ID)
or, without an id, every one the cluster remembers, oldest first: status
(IN_PROGRESS, SUCCESS, ERROR), when it started and ended, and what it
moved.`, cobra.MaximumNArgs(1), func(cmd *cobra.Command, args []string) error {
		path := rebalancesPath
		if len(args) == 1 {
			path += "/" + seg(args[0])
		}
		resp, err := a.call(cmd, request{Method: http.MethodGet, Path: path})
		if err != nil {
			return err
		}
		p := a.printer(cmd)
		if p.json {
			return p.raw(resp.Body)
		}
		var all struct {
			Result []rebalanceRecord `json:"result"`
		}
		if len(args) == 1 {
			all.Result = make([]rebalanceRecord, 1)
			err = decode(resp.Body, &all.Result[0], "the rebalance")
		} else {
			err = decode(resp.Body, &all, "the rebalances")
		}
		if err != nil {
			return err
		}
		t := render.NewTable(p.out, "ID", "STATUS", "STARTED", "ENDED", "GROUPS", "BUCKETS", "BYTES", "LEADERSHIPS", "TOOK", "MESSAGE")
		for _, r := range all.Result {
			ended, groups := "-", "-"
			if r.OperationEnd != nil {
				ended = r.OperationEnd.Local().Format(time.DateTime)
			}
			if r.Result.PartitionGroups > 0 {
				groups = strconv.Itoa(r.Result.PartitionGroups)
			}
			t.Row(r.OperationID, r.OperationStatus, r.OperationStart.Local().Format(time.DateTime), ended, groups,
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
	set := legacyCommand("set --groups N", "Grow the partition groups of a running cluster", `
Grow the cluster's partition groups to N (PATCH /management/v1/partitions
with {"groups": N}; permission CLUSTER:MANAGE): the new groups are placed
on the members and a rebalance moves buckets into them, online, while the
cluster serves. N is at most 113 (one bucket each); a smaller N than the
cluster has is refused (partition groups are not removed). It prints the
rebalance's id; --wait follows it to its end.`, cobra.NoArgs, func(cmd *cobra.Command, _ []string) error {
		if !cmd.Flags().Changed("groups") {
			return usagef("partitions set: --groups N is required")
		}
		body, err := json.Marshal(map[string]int{"groups": groups})
		if err != nil {
			return err
		}
		resp, err := a.call(cmd, request{Method: http.MethodPatch, Path: "/management/v1/partitions", Body: body})
		if err != nil {
			return err
		}
		return a.started(cmd, resp.Body, wait)
	})
	set.Flags().IntVar(&groups, "groups", 0, "the partition group count wanted")
	set.Flags().BoolVar(&wait, "wait", false, "follow the rebalance that moves buckets into the new groups until it ends")
	return group("partitions", "Manage the cluster's partition groups", set)
}

// started prints a started operation's id (the 202's body), and with wait
// follows it: a line each time it moved more, and its end.
func (a *app) started(cmd *cobra.Command, body []byte, wait bool) error {
	var op struct {
		OperationID string `json:"operationId"`
	}
	if err := decode(body, &op, "the started rebalance"); err != nil {
		return err
	}
	p := a.printer(cmd)
	if !wait {
		if p.json {
			return p.raw(body)
		}
		_, err := fmt.Fprintf(p.out, "rebalance %s started; follow it with: kvnode rebalance status %s\n", op.OperationID, op.OperationID)
		return err
	}
	if !p.json {
		if _, err := fmt.Fprintf(p.out, "rebalance %s started\n", op.OperationID); err != nil {
			return err
		}
	}
	last := -1
	for {
		resp, err := a.call(cmd, request{Method: http.MethodGet, Path: rebalancesPath + "/" + seg(op.OperationID)})
		if err != nil {
			return err
		}
		var r rebalanceRecord
		if err := decode(resp.Body, &r, "the rebalance"); err != nil {
			return err
		}
		if r.OperationStatus != "IN_PROGRESS" {
			if p.json {
				if err := p.raw(resp.Body); err != nil {
					return err
				}
			} else if _, err := fmt.Fprintf(p.out, "rebalance %s: %s after %v: %d buckets (%d bytes) and %d leaderships moved; %s\n",
				r.OperationID, r.OperationStatus, time.Duration(r.Result.Millis)*time.Millisecond,
				r.Result.BucketsMoved, r.Result.BytesMoved, r.Result.LeadershipsMoved, r.Result.StatusMessage); err != nil {
				return err
			}
			if r.OperationStatus == "ERROR" {
				return fmt.Errorf("rebalance %s ended in ERROR: %s", r.OperationID, r.Result.StatusMessage)
			}
			return nil
		}
		if r.Result.BucketsMoved != last && !p.json {
			last = r.Result.BucketsMoved
			if _, err := fmt.Fprintf(p.out, "  %d buckets moved so far\n", last); err != nil {
				return err
			}
		}
		time.Sleep(time.Second) // each call has the connection's timeout
	}
}
