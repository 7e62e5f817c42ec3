package e2e

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/kvnode/kvnode/internal/waitfor"
)

// TestThreeProcessCluster runs three kvnode processes on 127.0.0.1 and
// drives them over HTTP only: the API on every node, SIGKILL of the leader
// (no acknowledged write lost, writes resume), restart from the data dir,
// and SIGTERM as a graceful leave (--leave-on-shutdown; without it SIGTERM
// is a restart, TestRollingRestartProcesses).
func TestThreeProcessCluster(t *testing.T) {
	pc := startCluster(t, clusterSpec{n: 3, regions: "orders:REPLICATE", extra: []string{"--leave-on-shutdown"}})
	for _, p := range pc.procs {
		waitfor.Cond(t, 20*time.Second, p.name+" to answer ping", func() bool {
			r, err := tryDo("GET", p.httpURL+"/kv/v1/ping", "", "")
			return err == nil && r.status == 200
		})
	}
	leader := pc.leader(30 * time.Second)
	waitfor.Cond(t, 20*time.Second, "region orders on every node", func() bool {
		for _, p := range pc.procs {
			r, err := tryDo("GET", p.httpURL+"/kv/v1/orders", "", "")
			if err != nil || r.status != 200 {
				return false
			}
		}
		return true
	})

	// /servers lists every member's REST URL.
	var servers []string
	jsonBody(t, do(t, "GET", pc.procs[1].httpURL+"/kv/v1/servers", "", ""), &servers)
	var want []string
	for _, p := range pc.procs {
		want = append(want, p.httpURL)
	}
	slices.Sort(want)
	if !slices.Equal(servers, want) {
		t.Fatalf("/servers = %v, want %v", servers, want)
	}

	// The API on different nodes: create on one, read, replace and CAS on others.
	n0, n1, n2 := pc.procs[0].httpURL, pc.procs[1].httpURL, pc.procs[2].httpURL
	order := `{"@type":"org.example.Order","purchaseOrderNo":1,"totalPrice":10.0,"items":[{"itemNo":1}]}`
	if r := do(t, "POST", n0+"/kv/v1/orders?key=1", "application/json", order); r.status != 201 {
		t.Fatalf("POST = %d %s, want 201", r.status, r.body)
	}
	if r := do(t, "GET", n1+"/kv/v1/orders/1", "", ""); r.status != 200 || string(r.body) != order {
		t.Fatalf("GET via another node = %d %s, want 200 %s", r.status, r.body, order)
	}
	if r := do(t, "POST", n2+"/kv/v1/orders?key=1", "application/json", `{"x":1}`); r.status != 409 || string(r.body) != order {
		t.Fatalf("second POST = %d %s, want 409 with the existing value", r.status, r.body)
	}
	if r := do(t, "PUT", n2+"/kv/v1/orders/1?op=REPLACE", "application/json", `{"v":2}`); r.status != 200 {
		t.Fatalf("REPLACE = %d %s", r.status, r.body)
	}
	if r := do(t, "PUT", n1+"/kv/v1/orders/1?op=CAS", "application/json", `{"@old":{"v":1},"@new":{"v":3}}`); r.status != 409 || string(r.body) != `{"v":2}` {
		t.Fatalf("stale CAS = %d %s, want 409 {\"v\":2}", r.status, r.body)
	}
	if r := do(t, "PUT", n0+"/kv/v1/orders/1?op=CAS", "application/json", `{"@old":{"v":2},"@new":{"v":3}}`); r.status != 200 {
		t.Fatalf("CAS = %d %s", r.status, r.body)
	}
	if r := do(t, "PUT", n1+"/kv/v1/orders/a,b", "application/json", `[{"k":"a"},{"k":"b"}]`); r.status != 200 {
		t.Fatalf("put-all = %d %s", r.status, r.body)
	}
	if r := do(t, "GET", n2+"/kv/v1/orders/a,1,b", "", ""); r.status != 200 || string(r.body) != `{"orders":[{"k":"a"},{"v":3},{"k":"b"}]}` {
		t.Fatalf("multi-get = %d %s", r.status, r.body)
	}
	if r := do(t, "HEAD", n0+"/kv/v1/orders", "", ""); r.status != 200 || r.header.Get("Resource-Count") != "3" {
		t.Fatalf("HEAD = %d, Resource-Count %q, want 200 and 3", r.status, r.header.Get("Resource-Count"))
	}
	if r := do(t, "DELETE", n1+"/kv/v1/orders/a,b", "", ""); r.status != 200 {
		t.Fatalf("DELETE keys = %d %s", r.status, r.body)
	}

	// Acknowledged writes spread over all nodes, then SIGKILL the leader.
	const n = 60
	for i := 0; i < n; i++ {
		url := pc.procs[i%3].httpURL + fmt.Sprintf("/kv/v1/orders/k%d", i)
		if r := do(t, "PUT", url, "application/json", fmt.Sprintf(`{"i":%d}`, i)); r.status != 200 {
			t.Fatalf("PUT k%d = %d %s", i, r.status, r.body)
		}
	}
	killedAt := time.Now()
	pc.kill(leader)
	newLeader := pc.leader(30 * time.Second)
	if newLeader == leader {
		t.Fatalf("killed node %s is still the leader", leader.name)
	}
	// Writes resume through a survivor.
	var survivor *proc
	for _, p := range pc.running() {
		survivor = p
	}
	waitfor.Cond(t, 30*time.Second, "a write to succeed after the leader was killed", func() bool {
		r, err := tryDo("PUT", survivor.httpURL+"/kv/v1/orders/after-kill", "application/json", `{"ok":true}`)
		return err == nil && r.status == 200
	})
	t.Logf("leader %s killed; first acknowledged write %v later; new leader %s", leader.name, time.Since(killedAt).Round(time.Millisecond), newLeader.name)
	for _, p := range pc.running() {
		for i := 0; i < n; i++ {
			r := do(t, "GET", p.httpURL+fmt.Sprintf("/kv/v1/orders/k%d", i), "", "")
			if want := fmt.Sprintf(`{"i":%d}`, i); r.status != 200 || string(r.body) != want {
				t.Fatalf("%s after leader kill: GET k%d = %d %s, want 200 %s", p.name, i, r.status, r.body, want)
			}
		}
	}

	// The killed node restarts from its data dir and serves everything.
	pc.start(leader)
	waitfor.Cond(t, 30*time.Second, "the restarted node to serve the write made while it was down", func() bool {
		r, err := tryDo("GET", leader.httpURL+"/kv/v1/orders/after-kill", "", "")
		return err == nil && r.status == 200 && string(r.body) == `{"ok":true}`
	})
	if r := do(t, "HEAD", leader.httpURL+"/kv/v1/orders?consistency=stale", "", ""); r.header.Get("Resource-Count") != fmt.Sprint(n+2) {
		t.Fatalf("restarted node holds %q entries, want %d", r.header.Get("Resource-Count"), n+2)
	}

	// SIGTERM with --leave-on-shutdown is a graceful leave: the node exits cleanly and the others
	// keep serving without it.
	victim := pc.procs[2]
	if victim == newLeader {
		victim = pc.procs[1]
	}
	took, err := pc.terminate(victim, 30*time.Second)
	if err != nil {
		t.Fatalf("%s exited with %v after SIGTERM, want status 0", victim.name, err)
	}
	t.Logf("%s left gracefully in %v", victim.name, took.Round(time.Millisecond))
	for _, p := range pc.running() {
		waitfor.Cond(t, 20*time.Second, p.name+" to stop listing the departed node", func() bool {
			v, err := pc.view(p)
			if err != nil {
				return false
			}
			for _, m := range v.Members {
				if m.Name == victim.name && m.Suffrage != "" {
					return false
				}
			}
			return true
		})
		if r := do(t, "PUT", p.httpURL+"/kv/v1/orders/after-leave-"+p.name, "application/json", `{}`); r.status != 200 {
			t.Fatalf("write via %s after a graceful leave = %d %s", p.name, r.status, r.body)
		}
	}
}
