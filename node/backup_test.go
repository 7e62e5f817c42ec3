package node_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/kvnode/kvnode/backup/archive"
	"github.com/kvnode/kvnode/internal/waitfor"
	"github.com/kvnode/kvnode/node"
	"github.com/kvnode/kvnode/node/nodetest"
	"github.com/kvnode/kvnode/store/backup"
)

// regionEntries reads every entry of a region on n (linearizable), by the
// "k" member each test value carries.
func regionEntries(t *testing.T, n *node.Node, name string) map[string]string {
	t.Helper()
	r := nodetest.MustCall(t, n, "GET", "/kv/v1/"+name+"?limit=ALL", "", 200)
	var doc map[string][]json.RawMessage
	if err := json.Unmarshal([]byte(r.Body), &doc); err != nil {
		t.Fatalf("listing %s on %s: %v", name, n.Name(), err)
	}
	out := map[string]string{}
	for _, v := range doc[name] {
		var e struct {
			K string `json:"k"`
		}
		if err := json.Unmarshal(v, &e); err != nil || e.K == "" {
			t.Fatalf("listing %s on %s: value %s has no key", name, n.Name(), v)
		}
		out[e.K] = string(v)
	}
	return out
}

// fullyReplicated reports whether n sees the control group with three
// voters and every partition group with three voters, all among members.
func fullyReplicated(t *testing.T, n *node.Node, members []string) bool {
	t.Helper()
	v := nodetest.View(t, n)
	voters := 0
	for _, m := range v.Members {
		if m.Suffrage == "voter" && slices.Contains(members, m.Name) {
			voters++
		}
	}
	if voters != 3 {
		return false
	}
	r := nodetest.Call(t, n, "GET", "/management/v1/partitions", "")
	var pv struct {
		Groups []struct {
			Members   []string `json:"members"`
			Voters    []string `json:"voters"`
			NonVoters []string `json:"nonVoters"`
		} `json:"groups"`
	}
	if r.Status != 200 || json.Unmarshal([]byte(r.Body), &pv) != nil || len(pv.Groups) == 0 {
		return false
	}
	for _, g := range pv.Groups {
		if len(g.Voters) != 3 || len(g.NonVoters) != 0 || len(g.Members) != 3 {
			return false
		}
		for _, m := range g.Voters {
			if !slices.Contains(members, m) {
				return false
			}
		}
	}
	return true
}

// definitions is what must compare equal between a cluster and its
// restored copy besides the entries: regions, indexes, named queries,
// functions, as the API lists them.
func definitions(t *testing.T, n *node.Node) []string {
	t.Helper()
	return []string{
		nodetest.MustCall(t, n, "GET", "/kv/v1", "", 200).Body,
		nodetest.MustCall(t, n, "GET", "/management/v1/regions/par/indexes", "", 200).Body,
		nodetest.MustCall(t, n, "GET", "/kv/v1/queries", "", 200).Body,
		nodetest.MustCall(t, n, "GET", "/management/v1/functions", "", 200).Body,
	}
}

// seedData creates a replicated and a partitioned region, an index, a
// named query and a function, and writes count entries into each region.
func seedData(t *testing.T, n *node.Node, count int) {
	t.Helper()
	nodetest.MustCall(t, n, "POST", "/management/v1/regions", `{"name":"rep","type":"REPLICATE"}`, 201)
	nodetest.MustCall(t, n, "POST", "/management/v1/regions", `{"name":"par","type":"PARTITION"}`, 201)
	nodetest.MustCall(t, n, "POST", "/management/v1/regions/par/indexes", `{"name":"byN","expression":"o.n","from":"/par o"}`, 201)
	nodetest.MustCall(t, n, "POST", "/kv/v1/queries?id=small&q="+url.QueryEscape("SELECT o.k FROM /par o WHERE o.n < $1 ORDER BY o.k"), "", 201)
	nodetest.MustCall(t, n, "PUT", "/management/v1/functions/hello", `{"source":"function execute(ctx, args) { return 'hello'; }"}`, 201)
	for i := range count {
		for _, r := range []string{"rep", "par"} {
			nodetest.MustCall(t, n, "PUT", fmt.Sprintf("/kv/v1/%s/s%d", r, i), fmt.Sprintf(`{"k":"s%d","n":%d}`, i, i), 200)
		}
	}
}

// restoreFresh restores the backup data into r1 of a fresh cluster that
// fresh members r2 and r3 join, and waits until it is fully replicated.
func restoreFresh(t *testing.T, data []byte) (*nodetest.Cluster, *node.Node) {
	t.Helper()
	file := filepath.Join(t.TempDir(), "cluster.backup")
	if err := os.WriteFile(file, data, 0o600); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(t.TempDir(), "r1")
	addr := nodetest.FreeAddr(t)
	if _, err := backup.Restore(backup.RestoreOptions{From: file, DataDir: dir, Name: "r1", InternalAddr: addr}); err != nil {
		t.Fatal(err)
	}
	dst := nodetest.New(t)
	dst.Tune = func(name string, cfg *node.Config) {
		if name == "r1" {
			cfg.DataDir, cfg.InternalAddr = dir, addr
		}
	}
	r1 := dst.Start("r1", 3)
	dst.Start("r2", 3)
	dst.Start("r3", 3)
	waitfor.Cond(t, 90*time.Second, "the restored cluster to be fully replicated", func() bool {
		return fullyReplicated(t, r1, []string{"r1", "r2", "r3"})
	})
	return dst, r1
}

// TestBackupUnderLoadRestoresIntoAFreshCluster takes a backup of a 3-node
// cluster while a writer runs, restores it into one member of a fresh
// cluster that two fresh members join, and compares.
func TestBackupUnderLoadRestoresIntoAFreshCluster(t *testing.T) {
	src := nodetest.New(t)
	for _, name := range []string{"a", "b", "c"} {
		src.Start(name, 3)
	}
	src.Leader()
	a, b := src.Nodes["a"], src.Nodes["b"]
	seedData(t, a, 40)

	// A bounded writer: new keys only, so that the source's state only
	// grows and every restored entry must be in it with the same value.
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var mu sync.Mutex
	acked := map[string]map[string]string{"rep": {}, "par": {}}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	var next atomic.Int64
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ctx.Err() == nil {
				i := next.Add(1)
				if i > 4000 {
					return
				}
				select {
				case <-stop:
					return
				default:
				}
				r := []string{"rep", "par"}[i%2]
				k, v := fmt.Sprintf("w%d", i), fmt.Sprintf(`{"k":"w%d","n":%d}`, i, 1000+i)
				req, _ := http.NewRequestWithContext(ctx, "PUT", "http://"+b.HTTPAddr()+"/kv/v1/"+r+"/"+k, bytes.NewBufferString(v))
				req.Header.Set("Content-Type", "application/json")
				resp, err := http.DefaultClient.Do(req)
				if err != nil {
					continue
				}
				_, _ = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				if resp.StatusCode == 200 {
					mu.Lock()
					acked[r][k] = v
					mu.Unlock()
				}
			}
		}()
	}
	waitfor.Cond(t, 10*time.Second, "the writer to get going", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(acked["par"]) >= 100
	})
	mu.Lock()
	before := map[string]map[string]string{"rep": {}, "par": {}}
	for r, m := range acked {
		for k, v := range m {
			before[r][k] = v
		}
	}
	mu.Unlock()
	resp, err := http.Get("http://" + a.HTTPAddr() + "/management/v1/backup")
	if err != nil {
		t.Fatal(err)
	}
	data, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("GET /management/v1/backup = %d, %v: %s", resp.StatusCode, err, data)
	}
	close(stop)
	wg.Wait()
	m, _, err := archive.Verify(bytes.NewReader(data))
	if err != nil {
		t.Fatalf("the backup does not verify: %v", err)
	}
	if len(m.Groups) != 5 || m.Partitions != 4 || m.Member != "a" || len(m.Indexes) != 1 || !slices.Equal(m.NamedQueries, []string{"small"}) || !slices.Equal(m.Functions, []string{"hello"}) {
		t.Fatalf("manifest %+v: want 5 groups, 4 partitions, 1 index, query small, function hello", m)
	}
	t.Logf("backup: %d bytes, %d entries (%d acknowledged before it, %d by the writer in all); groups %+v",
		len(data), m.Entries(), len(before["rep"])+len(before["par"])+80, len(acked["rep"])+len(acked["par"]), m.Groups)
	counts := map[string]int64{}
	for _, r := range m.Regions {
		counts[r.Name] = r.Entries
	}
	dst, r1 := restoreFresh(t, data)

	for _, region := range []string{"rep", "par"} {
		for _, n := range dst.Nodes {
			got := regionEntries(t, n, region)
			if int64(len(got)) != counts[region] {
				t.Errorf("%s on %s: %d entries, the manifest says %d", region, n.Name(), len(got), counts[region])
			}
			for k, v := range before[region] {
				if got[k] != v {
					t.Errorf("%s on %s: %s = %q, acknowledged before the backup as %q", region, n.Name(), k, got[k], v)
				}
			}
			for i := range 40 {
				if k := fmt.Sprintf("s%d", i); got[k] != fmt.Sprintf(`{"k":"s%d","n":%d}`, i, i) {
					t.Errorf("%s on %s: %s = %q", region, n.Name(), k, got[k])
				}
			}
			// Nothing that the source never had, nor another value.
			source := regionEntries(t, a, region)
			for k, v := range got {
				if source[k] != v {
					t.Errorf("%s on %s: %s = %q, the source has %q", region, n.Name(), k, v, source[k])
				}
			}
		}
	}
	if want, got := definitions(t, a), definitions(t, r1); !slices.Equal(want, got) {
		t.Errorf("definitions after restore:\n%q\nwant (the source's):\n%q", got, want)
	}
	// The restored index and named query serve on a fresh member.
	r := nodetest.MustCall(t, dst.Nodes["r3"], "POST", "/kv/v1/queries/small", `[{"@type":"int","@value":3}]`, 200)
	if r.Body != `["s0","s1","s2"]` {
		t.Errorf("named query small(3) on r3 = %s", r.Body)
	}
}

// TestRecoverAfterLosingTwoOfThree: two members are lost for good; the
// third, stopped, is recovered offline, restarts alone, and two fresh
// members re-grow the cluster to full replication with every
// acknowledged write the survivor had.
func TestRecoverAfterLosingTwoOfThree(t *testing.T) {
	ip := nodetest.New(t)
	base := t.TempDir()
	ip.Tune = func(name string, cfg *node.Config) { cfg.DataDir = filepath.Join(base, name) }
	for _, name := range []string{"a", "b", "c"} {
		ip.Start(name, 3)
	}
	ip.Leader()
	a := ip.Nodes["a"]
	seedData(t, ip.Nodes["b"], 30)
	want := map[string]map[string]string{}
	for _, region := range []string{"rep", "par"} {
		want[region] = regionEntries(t, ip.Nodes["c"], region)
		if len(want[region]) != 30 {
			t.Fatalf("%s: %d entries before the loss, want 30", region, len(want[region]))
		}
	}
	// What the survivor had: its own replicas (stale reads) hold every
	// acknowledged write before the others are lost.
	waitfor.Cond(t, 10*time.Second, "a's replicas to hold every write", func() bool {
		for _, region := range []string{"rep", "par"} {
			r := nodetest.Call(t, a, "HEAD", "/kv/v1/"+region+"?consistency=stale", "")
			if r.Header.Get("Resource-Count") != "30" {
				return false
			}
		}
		return true
	})

	// b and c are lost for good; a is stopped.
	for _, name := range []string{"b", "c"} {
		ip.Stop(name, false)
		if err := os.RemoveAll(filepath.Join(base, name)); err != nil {
			t.Fatal(err)
		}
	}
	// A running member's data dir is refused, before anything changes.
	if _, err := backup.Recover(backup.RecoverOptions{DataDir: filepath.Join(base, "a")}); !errors.Is(err, backup.ErrInUse) {
		t.Fatalf("recover of a running member's data dir = %v, want ErrInUse", err)
	}
	ip.Stop("a", false)

	rep, err := backup.Recover(backup.RecoverOptions{DataDir: filepath.Join(base, "a")})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Member != "a" || len(rep.Held) != 5 || len(rep.Lost) != 0 {
		t.Fatalf("recover report %+v: want a holding 5 groups, none lost", rep)
	}

	a = ip.Start("a", 3)
	for _, region := range []string{"rep", "par"} {
		waitfor.Cond(t, 20*time.Second, "a alone to serve "+region, func() bool {
			return nodetest.Call(t, a, "GET", "/kv/v1/"+region+"/s1", "").Status == 200
		})
	}
	nodetest.MustCall(t, a, "PUT", "/kv/v1/par/alone", `{"k":"alone","n":-1}`, 200)
	ip.Start("d", 3)
	ip.Start("e", 3)
	waitfor.Cond(t, 60*time.Second, "the recovered cluster to be fully replicated", func() bool {
		return fullyReplicated(t, a, []string{"a", "d", "e"})
	})
	want["par"]["alone"] = `{"k":"alone","n":-1}`
	for _, n := range ip.Nodes {
		for _, region := range []string{"rep", "par"} {
			if got := regionEntries(t, n, region); !mapsEqual(got, want[region]) {
				t.Errorf("%s on %s after recovery: %d entries, want the %d acknowledged ones", region, n.Name(), len(got), len(want[region]))
			}
		}
	}
	if v := nodetest.View(t, a); v.Suffrage("b") != "" || v.Suffrage("c") != "" {
		t.Errorf("lost members still in the control group: %+v", v)
	}
}

func mapsEqual(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

// TestRecoverWithLostGroups: with one replica per partition group, the
// survivor holds only some; recover names the others as lost, and the
// cluster starts them over empty: the survivor's groups keep their
// entries, the lost groups' keys read as absent, and every group takes
// writes again.
func TestRecoverWithLostGroups(t *testing.T) {
	ip := nodetest.New(t)
	base := t.TempDir()
	ip.Tune = func(name string, cfg *node.Config) {
		cfg.DataDir = filepath.Join(base, name)
		cfg.ReplicationFactor = 1
	}
	for _, name := range []string{"a", "b", "c"} {
		ip.Start(name, 3)
	}
	ip.Leader()
	a := ip.Nodes["a"]
	nodetest.MustCall(t, a, "POST", "/management/v1/regions", `{"name":"par","type":"PARTITION"}`, 201)
	for i := range 40 {
		nodetest.MustCall(t, a, "PUT", fmt.Sprintf("/kv/v1/par/k%d", i), fmt.Sprintf(`{"k":"k%d"}`, i), 200)
	}
	// Which group each key is in, and which groups a hosts.
	var pv struct {
		Groups []struct {
			Group   uint64   `json:"group"`
			Members []string `json:"members"`
		} `json:"groups"`
	}
	if err := json.Unmarshal([]byte(nodetest.MustCall(t, a, "GET", "/management/v1/partitions", "", 200).Body), &pv); err != nil {
		t.Fatal(err)
	}
	var onA, lostWant []uint64
	for _, g := range pv.Groups {
		if slices.Equal(g.Members, []string{"a"}) {
			onA = append(onA, g.Group)
		} else {
			lostWant = append(lostWant, g.Group)
		}
	}
	if len(onA) == 0 || len(lostWant) == 0 {
		t.Fatalf("a hosts groups %v of %+v: want some, not all", onA, pv.Groups)
	}
	kept := regionEntries(t, a, "par")
	ip.Stop("a", false)
	for _, name := range []string{"b", "c"} {
		ip.Stop(name, false)
		if err := os.RemoveAll(filepath.Join(base, name)); err != nil {
			t.Fatal(err)
		}
	}
	// What a held: its own groups' entries, read from its dir.
	rep, err := backup.Recover(backup.RecoverOptions{DataDir: filepath.Join(base, "a")})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(rep.Lost, lostWant) {
		t.Fatalf("recover reports lost groups %v, want %v", rep.Lost, lostWant)
	}
	var heldEntries int64
	for _, g := range rep.Held {
		heldEntries += g.Entries
	}

	a = ip.Start("a", 3)
	ip.Start("d", 3)
	ip.Start("e", 3)
	waitfor.Cond(t, 60*time.Second, "every partition group to have a leader among a, d, e", func() bool {
		var pv struct {
			Groups []struct {
				Leader string `json:"leader"`
			} `json:"groups"`
		}
		r := nodetest.Call(t, a, "GET", "/management/v1/partitions", "")
		if r.Status != 200 || json.Unmarshal([]byte(r.Body), &pv) != nil || len(pv.Groups) != 4 {
			return false
		}
		for _, g := range pv.Groups {
			if !slices.Contains([]string{"a", "d", "e"}, g.Leader) {
				return false
			}
		}
		return true
	})
	got := regionEntries(t, a, "par")
	if int64(len(got)) != heldEntries || len(got) == 0 || len(got) == len(kept) {
		t.Errorf("after recovery: %d entries, want the %d of a's groups (of %d)", len(got), heldEntries, len(kept))
	}
	for k, v := range got {
		if kept[k] != v {
			t.Errorf("after recovery: %s = %s, before %q", k, v, kept[k])
		}
	}
	for i := range 40 {
		nodetest.MustCall(t, ip.Nodes["d"], "PUT", fmt.Sprintf("/kv/v1/par/k%d", i), fmt.Sprintf(`{"k":"k%d","again":true}`, i), 200)
	}
	if n := len(regionEntries(t, a, "par")); n != 40 {
		t.Errorf("after writing every key again: %d entries, want 40", n)
	}
}

// TestBackupFetchesGroupsFromTheirHosts: with one replica per partition
// group, the member asked hosts only some; the others' snapshots come
// from their hosts over the internal port, and the archive holds every
// entry, as a restored one-member cluster shows.
func TestBackupFetchesGroupsFromTheirHosts(t *testing.T) {
	ip := nodetest.New(t)
	ip.Tune = func(_ string, cfg *node.Config) { cfg.ReplicationFactor = 1 }
	for _, name := range []string{"a", "b", "c"} {
		ip.Start(name, 3)
	}
	ip.Leader()
	a := ip.Nodes["a"]
	nodetest.MustCall(t, a, "POST", "/management/v1/regions", `{"name":"par","type":"PARTITION"}`, 201)
	for i := range 60 {
		nodetest.MustCall(t, a, "PUT", fmt.Sprintf("/kv/v1/par/k%d", i), fmt.Sprintf(`{"k":"k%d"}`, i), 200)
	}
	r := nodetest.MustCall(t, a, "GET", "/management/v1/partitions", "", 200)
	if strings.Count(r.Body, `"members":["a"]`) == 4 {
		t.Fatalf("a hosts every partition group: %s", r.Body)
	}
	resp, err := http.Get("http://" + a.HTTPAddr() + "/management/v1/backup")
	if err != nil {
		t.Fatal(err)
	}
	data, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("backup: %d %v", resp.StatusCode, err)
	}
	m, _, err := archive.Verify(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	if m.Entries() != 60 || len(m.Groups) != 5 {
		t.Fatalf("manifest: %d entries in %d groups, want 60 in 5", m.Entries(), len(m.Groups))
	}
	file := filepath.Join(t.TempDir(), "b")
	if err := os.WriteFile(file, data, 0o600); err != nil {
		t.Fatal(err)
	}
	dir, addr := filepath.Join(t.TempDir(), "solo"), nodetest.FreeAddr(t)
	if _, err := backup.Restore(backup.RestoreOptions{From: file, DataDir: dir, Name: "solo", InternalAddr: addr}); err != nil {
		t.Fatal(err)
	}
	dst := nodetest.New(t)
	dst.Tune = func(_ string, cfg *node.Config) { cfg.DataDir, cfg.InternalAddr = dir, addr }
	solo := dst.Start("solo", 1)
	waitfor.Cond(t, 20*time.Second, "the restored member to serve", func() bool {
		return nodetest.Call(t, solo, "GET", "/kv/v1/par/k1", "").Status == 200
	})
	if got := regionEntries(t, solo, "par"); len(got) != 60 {
		t.Errorf("restored: %d entries, want 60", len(got))
	}
}
