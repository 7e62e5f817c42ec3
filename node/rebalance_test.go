package node_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"testing"

	"github.com/kvnode/kvnode/node"
	"github.com/kvnode/kvnode/node/nodetest"
)

// owners is /management/v1/partitions' buckets by group.
func owners(t *testing.T, n *node.Node) (int, map[uint64][]int) {
	t.Helper()
	var doc struct {
		PartitionGroups int `json:"partitionGroups"`
		Groups          []struct {
			Group   uint64 `json:"group"`
			Buckets []int  `json:"buckets"`
		} `json:"groups"`
	}
	r := nodetest.MustCall(t, n, "GET", "/management/v1/partitions", "", 200)
	if err := json.Unmarshal([]byte(r.Body), &doc); err != nil {
		t.Fatalf("/management/v1/partitions on %s: %v", n.Name(), err)
	}
	out := map[uint64][]int{}
	for _, g := range doc.Groups {
		out[g.Group] = slices.Sorted(slices.Values(g.Buckets))
	}
	return doc.PartitionGroups, out
}

// TestBackupAfterARebalanceRestores: a cluster grown from 4 to 6 partition
// groups, whose buckets moved between groups, is backed up and restored
// into a fresh cluster: the restored cluster has the same owners, every
// entry (moved or not), its index and query, and takes new writes of
// moved buckets.
func TestBackupAfterARebalanceRestores(t *testing.T) {
	src := nodetest.New(t)
	for _, name := range []string{"a", "b", "c"} {
		src.Start(name, 3)
	}
	src.Leader()
	a := src.Nodes["a"]
	seedData(t, a, 200)

	growAndWait(t, a, 6)
	groups, moved := owners(t, a)
	if groups != 6 || len(moved[5]) == 0 || len(moved[6]) == 0 {
		t.Fatalf("after the rebalance: %d groups, owners %v; want 6 with buckets in groups 5 and 6", groups, moved)
	}
	for i := range 50 {
		nodetest.MustCall(t, a, "PUT", fmt.Sprintf("/kv/v1/par/after%d", i), fmt.Sprintf(`{"k":"after%d","n":%d}`, i, 500+i), 200)
	}
	source := regionEntries(t, a, "par")

	resp, err := http.Get("http://" + a.HTTPAddr() + "/management/v1/backup")
	if err != nil {
		t.Fatal(err)
	}
	data, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("GET /management/v1/backup = %d, %v: %.300s", resp.StatusCode, err, data)
	}
	dst, r1 := restoreFresh(t, data)
	restoredGroups, restored := owners(t, r1)
	if restoredGroups != 6 {
		t.Errorf("the restored cluster has %d partition groups, want 6", restoredGroups)
	}
	for gid, bs := range moved {
		if !slices.Equal(restored[gid], bs) {
			t.Errorf("group %d owns %v after the restore, %v before", gid, restored[gid], bs)
		}
	}
	for _, n := range dst.Nodes {
		got := regionEntries(t, n, "par")
		if len(got) != len(source) {
			t.Errorf("par on %s: %d entries, the source has %d", n.Name(), len(got), len(source))
		}
		for k, v := range source {
			if got[k] != v {
				t.Errorf("par on %s: %s = %q, the source has %q", n.Name(), k, got[k], v)
			}
		}
	}
	// Reads by key reach the owners, the index serves, and writes of
	// every bucket (moved ones too) are taken.
	for i := range 200 {
		k := fmt.Sprintf("s%d", i)
		if r := nodetest.Call(t, dst.Nodes["r2"], "GET", "/kv/v1/par/"+k, ""); r.Status != 200 || r.Body != fmt.Sprintf(`{"k":"s%d","n":%d}`, i, i) {
			t.Fatalf("GET par/%s on r2 after the restore: %d %s", k, r.Status, r.Body)
		}
	}
	if r := nodetest.MustCall(t, dst.Nodes["r3"], "POST", "/kv/v1/queries/small", `[{"@type":"int","@value":3}]`, 200); r.Body != `["s0","s1","s2"]` {
		t.Errorf("named query small(3) on r3 = %s", r.Body)
	}
	var body bytes.Buffer
	for i := range 100 {
		body.Reset()
		fmt.Fprintf(&body, `{"k":"new%d","n":%d}`, i, 900+i)
		nodetest.MustCall(t, dst.Nodes["r3"], "PUT", fmt.Sprintf("/kv/v1/par/new%d", i), body.String(), 200)
	}
	if got := regionEntries(t, r1, "par"); len(got) != len(source)+100 {
		t.Errorf("after 100 new writes the restored par has %d entries, want %d", len(got), len(source)+100)
	}
}
