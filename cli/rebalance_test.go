package cli_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/kvnode/kvnode/cli"
)

// TestRebalanceCommands: "kvnode partitions set --groups N --wait" grows a
// running cluster's partition groups and follows the rebalance to its end,
// "kvnode rebalance --wait" runs one more, "kvnode rebalance status" lists
// both; every entry is still there, now in the grown table; shrinking and
// a missing --groups are refused.
func TestRebalanceCommands(t *testing.T) {
	c := startCluster(t, 3, "http", nil)
	env := c.env
	waitReady(t, env)
	run := func(args ...string) result { return kvnode(t, env, "", args...) }
	must(t, env, "", "region", "create", "events", "--type", "partition")
	var keys []string
	for i := range 60 {
		k := fmt.Sprint("e", i)
		keys = append(keys, k)
		must(t, env, "", "put", "events", k, fmt.Sprintf(`{"i":%d}`, i))
	}
	groupsNow := func() int {
		var st struct {
			Partitions struct {
				PartitionGroups int `json:"partitionGroups"`
				Groups          []struct {
					Buckets []int `json:"buckets"`
				} `json:"groups"`
			} `json:"partitions"`
		}
		out := must(t, env, "", "status", "-o", "json")
		if err := json.Unmarshal([]byte(out), &st); err != nil {
			t.Fatalf("status -o json: %v: %s", err, out)
		}
		if n := len(st.Partitions.Groups); n != st.Partitions.PartitionGroups {
			t.Errorf("status lists %d partition groups, and says there are %d", n, st.Partitions.PartitionGroups)
		}
		for _, g := range st.Partitions.Groups {
			if len(g.Buckets) == 0 {
				t.Errorf("a partition group owns no bucket: %s", out)
			}
		}
		return st.Partitions.PartitionGroups
	}
	before := groupsNow()

	r := run("partitions", "set", "--groups", fmt.Sprint(before+2), "--wait")
	if r.code != 0 || !strings.Contains(r.out, ": SUCCESS after ") {
		t.Fatalf("partitions set --groups %d --wait: exit %d\n%s%s", before+2, r.code, r.out, r.err)
	}
	t.Logf("partitions set:\n%s", r.out)
	if got := groupsNow(); got != before+2 {
		t.Errorf("after partitions set --groups %d, status shows %d partition groups", before+2, got)
	}
	r = run("rebalance", "--wait")
	if r.code != 0 || !strings.Contains(r.out, ": SUCCESS after ") {
		t.Fatalf("rebalance --wait: exit %d\n%s%s", r.code, r.out, r.err)
	}
	r = run("rebalance", "status")
	if r.code != 0 || strings.Count(r.out, "SUCCESS") != 2 || !strings.HasPrefix(r.out, "ID ") {
		t.Errorf("rebalance status: exit %d\n%s%s", r.code, r.out, r.err)
	}
	id := strings.Fields(strings.Split(r.out, "\n")[1])[0]
	r = run("rebalance", "status", id, "-o", "json")
	if r.code != 0 || !strings.Contains(r.out, `"operationStatus":"SUCCESS"`) || !strings.Contains(r.out, `"operationId":"`+id+`"`) {
		t.Errorf("rebalance status %s -o json: exit %d %s%s", id, r.code, r.out, r.err)
	}
	expect(t, run("rebalance", "status", "no-such-operation"), cli.ExitNotFound, "")

	out := must(t, env, "", "get", "events", strings.Join(keys, ","), "-o", "json")
	for i := range 60 {
		if !strings.Contains(out, fmt.Sprintf(`{"i":%d}`, i)) {
			t.Fatalf("entry e%d is missing after the rebalances: %s", i, out)
		}
	}

	r = run("partitions", "set", "--groups", "2")
	if r.code != cli.ExitBadInput || !strings.Contains(r.err, "partition groups are not removed") {
		t.Errorf("partitions set --groups 2: exit %d, %s; want %d saying groups are not removed", r.code, r.err, cli.ExitBadInput)
	}
	if r = run("partitions", "set"); r.code != cli.ExitBadInput {
		t.Errorf("partitions set without --groups: exit %d, %s", r.code, r.err)
	}
}
