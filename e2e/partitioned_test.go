package e2e

import (
	"bytes"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/kvnode/kvnode/internal/waitfor"
)

// TestPartitionedRegionProcesses: a partitioned region on three kvnode
// processes keeps taking writes when one member is SIGKILLed, and the
// member catches up when it restarts.
func TestPartitionedRegionProcesses(t *testing.T) {
	pc := startCluster(t, clusterSpec{n: 3, regions: "events:PARTITION"})
	leader := pc.leader(30 * time.Second)
	waitfor.Cond(t, 30*time.Second, "the partition table and every group", func() bool {
		var pt struct {
			Groups []struct {
				Leader  string   `json:"leader"`
				Members []string `json:"members"`
			} `json:"groups"`
		}
		r, err := tryDo("GET", leader.httpURL+"/management/v1/partitions", "", "")
		if err != nil || r.status != 200 || json.Unmarshal(r.body, &pt) != nil || len(pt.Groups) != 4 {
			return false
		}
		for _, g := range pt.Groups {
			if g.Leader == "" || len(g.Members) != 3 {
				return false
			}
		}
		return true
	})
	if r := do(t, "GET", leader.httpURL+"/management/v1/regions", "", ""); r.status != 200 ||
		!bytes.Contains(r.body, []byte(`{"name":"events","type":"PARTITION"}`)) {
		t.Fatalf("regions = %d %s, want events as PARTITION", r.status, r.body)
	}

	const n = 120
	put := func(p *proc, i int) response {
		return do(t, "PUT", p.httpURL+fmt.Sprintf("/kv/v1/events/e%03d", i), "application/json", fmt.Sprintf(`{"i":%d}`, i))
	}
	for i := 0; i < n; i++ {
		if r := put(pc.procs[i%3], i); r.status != 200 {
			t.Fatalf("PUT e%03d = %d %s", i, r.status, r.body)
		}
	}
	if r := do(t, "DELETE", pc.procs[0].httpURL+"/kv/v1/events", "", ""); r.status != 405 {
		t.Fatalf("DELETE of a partitioned region = %d %s, want 405", r.status, r.body)
	}

	// SIGKILL one member; writes go on through the others.
	victim := pc.procs[1]
	pc.kill(victim)
	survivors := pc.running()
	for i := n; i < 2*n; i++ {
		// While the victim's groups elect new leaders a write may answer
		// 503 (no leader, or "outcome unknown" when it was forwarded to the
		// victim as it died). A PUT is idempotent, so a client retries it,
		// as this loop does; every key must be stored in the end.
		var r response
		deadline := time.Now().Add(30 * time.Second)
		for r = put(survivors[i%2], i); r.status == 503 && time.Now().Before(deadline); r = put(survivors[i%2], i) {
			time.Sleep(100 * time.Millisecond)
		}
		if r.status != 200 {
			t.Fatalf("PUT e%03d after killing %s = %d %s", i, victim.name, r.status, r.body)
		}
	}
	for _, p := range survivors {
		if r := do(t, "HEAD", p.httpURL+"/kv/v1/events", "", ""); r.header.Get("Resource-Count") != fmt.Sprint(2*n) {
			t.Fatalf("%s counts %q entries, want %d", p.name, r.header.Get("Resource-Count"), 2*n)
		}
		r := do(t, "GET", p.httpURL+"/kv/v1/events/e000,e150,e239", "", "")
		if r.status != 200 || string(r.body) != `{"events":[{"i":0},{"i":150},{"i":239}]}` {
			t.Fatalf("%s multi-get = %d %s", p.name, r.status, r.body)
		}
	}

	// It restarts and catches up with the writes it missed.
	pc.start(victim)
	waitfor.Cond(t, 60*time.Second, victim.name+" to catch up its partition replicas", func() bool {
		r, err := tryDo("HEAD", victim.httpURL+"/kv/v1/events?consistency=stale", "", "")
		return err == nil && r.status == 200 && r.header.Get("Resource-Count") == fmt.Sprint(2*n)
	})
	if r := do(t, "GET", victim.httpURL+"/kv/v1/events/e199", "", ""); r.status != 200 || string(r.body) != `{"i":199}` {
		t.Fatalf("restarted node: GET e199 = %d %s", r.status, r.body)
	}
}
