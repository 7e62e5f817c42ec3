package node_test

import (
	"encoding/json"
	"slices"
	"testing"
	"time"

	"github.com/kvnode/kvnode/internal/waitfor"
	"github.com/kvnode/kvnode/node/nodetest"
)

// TestRemoveMember: a member gone for good (a scaled-away pod, which now
// stays a member on SIGTERM) is removed at once by
// DELETE /management/v1/members/{name}, not after the dead-member
// timeout: it leaves the control group, and every partition group it held
// is back to three replicas on the members that remain, with its data.
// A live member, the member asked and an unknown name are refused, and
// nothing changes.
func TestRemoveMember(t *testing.T) {
	ip := nodetest.New(t)
	for _, name := range []string{"a", "b", "c"} {
		ip.Start(name, 3)
	}
	a := ip.Leader()
	ip.Start("d", 3)
	nodetest.MustCall(t, a, "POST", "/management/v1/regions", `{"name":"events","type":"PARTITION"}`, 201)
	const n = 40
	for i := range n {
		nodetest.MustCall(t, a, "PUT", "/kv/v1/events/k"+string(rune('A'+i%26))+string(rune('a'+i/26)), `{"i":1}`, 200)
	}
	hosts := func(name string) bool {
		var view struct {
			Groups []struct {
				Members, Voters []string
			} `json:"groups"`
		}
		r := nodetest.MustCall(t, a, "GET", "/management/v1/partitions", "", 200)
		if err := json.Unmarshal([]byte(r.Body), &view); err != nil {
			t.Fatalf("partitions: %v", err)
		}
		for _, g := range view.Groups {
			if slices.Contains(g.Members, name) || slices.Contains(g.Voters, name) {
				return true
			}
		}
		return false
	}
	waitfor.Cond(t, 30*time.Second, "d to be a member hosting partition replicas", func() bool {
		return nodetest.View(t, a).Suffrage("d") != "" && hosts("d")
	})

	self := a.Name()
	nodetest.MustCall(t, a, "DELETE", "/management/v1/members/"+self, "", 400)
	nodetest.MustCall(t, a, "DELETE", "/management/v1/members/d", "", 409) // alive
	nodetest.MustCall(t, a, "DELETE", "/management/v1/members/nobody", "", 404)
	if nodetest.View(t, a).Suffrage("d") == "" {
		t.Fatal("a refused removal changed the cluster")
	}

	ip.Stop("d", false) // gone, as a scaled-away pod: no leave
	var status int
	waitfor.Cond(t, 30*time.Second, "gossip to see d failed and the removal to be accepted", func() bool {
		status = nodetest.Call(t, a, "DELETE", "/management/v1/members/d", "").Status
		return status == 200
	})
	waitfor.Cond(t, 60*time.Second, "d gone from the control group and every partition group back to 3 replicas without it", func() bool {
		if nodetest.View(t, a).Suffrage("d") != "" || hosts("d") {
			return false
		}
		var view struct {
			Groups []struct{ Voters []string } `json:"groups"`
		}
		r := nodetest.Call(t, a, "GET", "/management/v1/partitions", "")
		if r.Status != 200 || json.Unmarshal([]byte(r.Body), &view) != nil {
			return false
		}
		for _, g := range view.Groups {
			if len(g.Voters) != 3 {
				return false
			}
		}
		return true
	})
	r := nodetest.MustCall(t, a, "HEAD", "/kv/v1/events", "", 200)
	if got := r.Header.Get("Resource-Count"); got != "40" {
		t.Fatalf("events has %s entries after the removal, want %d", got, n)
	}
	nodetest.MustCall(t, a, "DELETE", "/management/v1/members/d", "", 404) // already gone
}
