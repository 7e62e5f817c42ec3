package node_test

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/kvnode/kvnode/internal/promtest"
	"github.com/kvnode/kvnode/internal/waitfor"
	"github.com/kvnode/kvnode/node"
	"github.com/kvnode/kvnode/node/nodetest"
	"github.com/kvnode/kvnode/region"
	"github.com/kvnode/kvnode/store/datadir"
)

// Golden data dirs: the data dirs of a stopped 3-member cluster, one set
// per data dir format (testdata/golden-datadir/v<format>/), each with the
// manifest of what it holds. TestGoldenDataDirs starts today's code on
// every set, so a change that leaves a member unable to open a data dir an
// older release wrote fails here. A new data dir format (datadir.Format
// raised) adds a set with -update-golden and keeps the old ones (command
// and snapshot versions have their own golden files, in fsm/codec and fsm):
//
//	go test ./node -run TestWriteGoldenDataDir -update-golden
var updateGolden = flag.Bool("update-golden", false, "write the golden data dirs of the current format (testdata/golden-datadir/v<format>)")

const goldenDataDirs = "testdata/golden-datadir"

// goldenManifest is what a set of golden data dirs holds, written by the
// generator from what it put in and what the cluster answered.
type goldenManifest struct {
	// Format is the data dir format the set was written in.
	Format int `json:"format"`
	// Members are the member names, in the order they were started; each
	// one's data dir is the archive's dir of that name.
	Members []string `json:"members"`
	// Regions are the regions by name, with their type.
	Regions map[string]string `json:"regions"`
	// Entries are every entry of each region.
	Entries map[string]map[string]json.RawMessage `json:"entries"`
	// Indexes are the index definitions by region.
	Indexes map[string][]goldenIndex `json:"indexes"`
	// Queries are the named queries' ids; Functions the deployed functions'.
	Queries   []string `json:"queries"`
	Functions []string `json:"functions"`
	// Answers are requests and what the cluster answered before it was
	// stopped: today's code must answer them the same.
	Answers []goldenAnswer `json:"answers"`
}

type goldenIndex struct {
	Name       string `json:"name"`
	Expression string `json:"expression"`
	From       string `json:"from"`
	// Path is the member the index holds, to count the entries it must
	// cover.
	Path string `json:"path"`
}

type goldenAnswer struct {
	Method string          `json:"method"`
	Path   string          `json:"path"`
	Body   string          `json:"body,omitempty"`
	Status int             `json:"status"`
	Answer json.RawMessage `json:"answer"`
}

// goldenArchive is the name of a set's archive: the data dirs, tarred and
// gzipped (bbolt files are mostly zeroes).
const goldenArchive = "datadirs.tar.gz"

// TestWriteGoldenDataDir writes the golden data dirs of the current
// format. It runs only with -update-golden: it is the generator, not a
// test.
//
// What it writes exercises both ways a member rebuilds its state when it
// opens: the control group takes a snapshot (a low snapshot threshold) and
// then receives writes that stay only in its log (an update, a delete and
// new entries), and the partition groups, with fewer entries than the
// threshold, have only their logs.
func TestWriteGoldenDataDir(t *testing.T) {
	if !*updateGolden {
		t.Skip("the generator of testdata/golden-datadir: run with -update-golden")
	}
	out := filepath.Join(goldenDataDirs, fmt.Sprintf("v%d", datadir.Format))
	if _, err := os.Stat(out); err == nil {
		t.Fatalf("%s exists: a set of golden data dirs is never rewritten (it is what that format's release wrote); a new format gets a new set", out)
	}
	const snapshotThreshold = 100
	ip := nodetest.New(t)
	ip.Tune = func(name string, cfg *node.Config) {
		cfg.Raft.SnapshotThreshold = snapshotThreshold
		cfg.Raft.SnapshotInterval = 200 * time.Millisecond
		cfg.Raft.TrailingLogs = 8
	}
	m := goldenManifest{
		Format:  datadir.Format,
		Members: []string{"a", "b", "c"},
		Regions: map[string]string{"customers": "REPLICATE", "orders": "PARTITION"},
		Entries: map[string]map[string]json.RawMessage{"customers": {}, "orders": {}},
		Indexes: map[string][]goldenIndex{
			"customers": {{Name: "byTier", Expression: "c.tier", From: "/customers c", Path: "tier"}},
			"orders":    {{Name: "byTotal", Expression: "o.total", From: "/orders o", Path: "total"}},
		},
		Queries:   []string{"customersOfTier", "bigOrders"},
		Functions: []string{"customerName"},
	}
	for _, name := range m.Members {
		ip.Start(name, len(m.Members))
	}
	leader := ip.Leader()
	nodes := []*node.Node{ip.Nodes["a"], ip.Nodes["b"], ip.Nodes["c"]}
	for _, r := range []string{"customers", "orders"} {
		nodetest.MustCall(t, leader, "POST", "/management/v1/regions", fmt.Sprintf(`{"name":%q,"type":%q}`, r, m.Regions[r]), 201)
		for _, ix := range m.Indexes[r] {
			nodetest.MustCall(t, leader, "POST", "/management/v1/regions/"+r+"/indexes",
				fmt.Sprintf(`{"name":%q,"expression":%q,"from":%q}`, ix.Name, ix.Expression, ix.From), 201)
		}
	}
	nodetest.MustCall(t, leader, "POST", "/kv/v1/queries?id=customersOfTier&q="+
		url.QueryEscape("SELECT c.name FROM /customers c WHERE c.tier = $1 ORDER BY c.name"), "", 201)
	nodetest.MustCall(t, leader, "POST", "/kv/v1/queries?id=bigOrders&q="+
		url.QueryEscape("SELECT o.id, o.total FROM /orders o WHERE o.total >= $1 ORDER BY o.total DESC, o.id"), "", 201)
	deploy(t, leader, "customerName", `function execute(ctx) {
		var c = ctx.regions("customers").get(ctx.args[0]);
		return c === null ? null : c.name;
	}`, "", 201)

	put := func(i int, r, key string, value any) {
		t.Helper()
		data, err := json.Marshal(value)
		if err != nil {
			t.Fatal(err)
		}
		nodetest.MustCall(t, nodes[i%len(nodes)], "PUT", "/kv/v1/"+r+"/"+url.PathEscape(key), string(data), 200)
		m.Entries[r][key] = data
	}
	customer := func(i int, name string) map[string]any {
		return map[string]any{
			"name": name, "tier": i % 3,
			"address": map[string]any{"city": []string{"Zürich", "東京", "São Paulo", "Reykjavík"}[i%4], "zip": fmt.Sprintf("%05d", i*37)},
			"tags":    []any{"t" + strconv.Itoa(i%5), map[string]any{"since": 2000 + i%20, "vip": i%7 == 0}},
		}
	}
	i := 0
	for ; i < 150; i++ {
		put(i, "customers", fmt.Sprintf("c%03d", i), customer(i, fmt.Sprintf("customer %d", i)))
	}
	for _, key := range []string{"Zürich", "東京/本社", "naïve café", "emoji 🙂", "ключ"} {
		put(i, "customers", key, customer(i, "unicode "+key))
		i++
	}
	for j := 0; j < 40; j++ {
		put(j, "orders", fmt.Sprintf("o%02d", j), map[string]any{
			"id": j, "total": (j * 53) % 1000, "customer": fmt.Sprintf("c%03d", j),
			"lines": []any{map[string]any{"sku": "sku-" + strconv.Itoa(j%6), "qty": 1 + j%4}},
		})
	}
	for j, key := range []string{"Ωmega", "größe", "順序", "🙂🙃"} {
		put(j, "orders", key, map[string]any{"id": 100 + j, "total": 900 + j, "customer": key, "lines": []any{}})
	}

	// Every member's control group takes a snapshot.
	waitfor.Cond(t, 30*time.Second, "every member's control group to take a snapshot", func() bool {
		for _, n := range nodes {
			if len(snapshotsOf(t, datadir.GroupDir(n.Config().DataDir, 0))) == 0 {
				return false
			}
		}
		return true
	})
	// Then writes that only the log holds: an update, a delete, new entries.
	put(1, "customers", "c000", map[string]any{"name": "customer 0, renamed", "tier": 2, "address": map[string]any{"city": "Zürich"}})
	nodetest.MustCall(t, nodes[2], "DELETE", "/kv/v1/customers/c149", "", 200)
	delete(m.Entries["customers"], "c149")
	for j := 0; j < 10; j++ {
		put(j, "customers", fmt.Sprintf("late-%d", j), customer(j, fmt.Sprintf("late customer %d", j)))
	}

	// Every member has applied everything before the cluster stops.
	for r, entries := range m.Entries {
		waitfor.Cond(t, 20*time.Second, "every member to hold every entry of "+r, func() bool {
			for _, n := range nodes {
				resp := nodetest.Call(t, n, "HEAD", "/kv/v1/"+r+"?consistency=stale", "")
				if resp.Status != 200 || resp.Header.Get("Resource-Count") != strconv.Itoa(len(entries)) {
					return false
				}
			}
			return true
		})
	}
	for _, r := range []string{"customers", "orders"} {
		for _, ix := range m.Indexes[r] {
			waitIndexBuilt(t, nodes, r, ix, countWithPath(m.Entries[r], ix.Path))
		}
	}

	// What the cluster answers now, today's code must answer the same.
	for _, req := range []goldenAnswer{
		{Method: "GET", Path: "/management/v1/regions"},
		{Method: "GET", Path: "/management/v1/regions/customers/indexes"},
		{Method: "GET", Path: "/management/v1/regions/orders/indexes"},
		{Method: "POST", Path: "/kv/v1/queries/customersOfTier", Body: `[{"@type":"int","@value":1}]`},
		{Method: "POST", Path: "/kv/v1/queries/bigOrders", Body: `[{"@type":"int","@value":800}]`},
		{Method: "GET", Path: "/kv/v1/queries/adhoc?q=" + url.QueryEscape("SELECT c.address.city AS city, COUNT(*) AS n FROM /customers c WHERE c.tier = 0 GROUP BY c.address.city ORDER BY city")},
		{Method: "GET", Path: "/kv/v1/queries/adhoc?q=" + url.QueryEscape("SELECT COUNT(*) AS n, SUM(o.total) AS total FROM /orders o")},
		{Method: "POST", Path: "/kv/v1/functions/customerName?onMembers=a", Body: `[{"@type":"String","@value":"東京/本社"}]`},
		{Method: "GET", Path: "/kv/v1/customers/" + url.PathEscape("naïve café") + "," + url.PathEscape("c000")},
	} {
		r := nodetest.MustCall(t, leader, req.Method, req.Path, req.Body, 200)
		req.Status, req.Answer = r.Status, json.RawMessage(r.Body)
		if !json.Valid(req.Answer) {
			t.Fatalf("%s %s answered %q, not JSON", req.Method, req.Path, r.Body)
		}
		m.Answers = append(m.Answers, req)
	}

	// The members stop without leaving (as for a whole-cluster upgrade);
	// their files are closed cleanly.
	for _, name := range m.Members {
		ip.Stop(name, false)
	}
	dirs := map[string]string{}
	for _, n := range nodes {
		dirs[n.Name()] = n.Config().DataDir
	}
	checkGoldenShape(t, dirs)

	if err := os.MkdirAll(out, 0o755); err != nil {
		t.Fatal(err)
	}
	var archive bytes.Buffer
	writeGoldenArchive(t, &archive, m.Members, dirs)
	if err := os.WriteFile(filepath.Join(out, goldenArchive), archive.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	manifest, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(out, "manifest.json"), append(manifest, '\n'), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("wrote %s: archive %d bytes", out, archive.Len())
}

// TestGoldenDataDirs starts a cluster of today's code on each set of
// golden data dirs (fresh ports, the recorded member names) and checks
// that it serves everything the set holds and takes new writes.
func TestGoldenDataDirs(t *testing.T) {
	sets, err := filepath.Glob(filepath.Join(goldenDataDirs, "v*"))
	if err != nil {
		t.Fatal(err)
	}
	if len(sets) == 0 {
		t.Fatalf("no golden data dirs in %s", goldenDataDirs)
	}
	current := filepath.Join(goldenDataDirs, fmt.Sprintf("v%d", datadir.Format))
	if !slices.Contains(sets, current) {
		t.Errorf("no golden data dirs of the current format %d (%s): run go test ./node -run TestWriteGoldenDataDir -update-golden", datadir.Format, current)
	}
	for _, set := range sets {
		t.Run(filepath.Base(set), func(t *testing.T) { checkGoldenSet(t, set) })
	}
}

func checkGoldenSet(t *testing.T, set string) {
	var m goldenManifest
	data, err := os.ReadFile(filepath.Join(set, "manifest.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(data, &m); err != nil {
		t.Fatalf("%s/manifest.json: %v", set, err)
	}
	base := t.TempDir()
	dirs := extractGoldenArchive(t, filepath.Join(set, goldenArchive), base, m.Members)
	// Both ways of rebuilding a group's state are exercised: from a
	// snapshot and its log, and from a log alone.
	checkGoldenShape(t, dirs)

	ip := nodetest.New(t)
	ip.Tune = func(name string, cfg *node.Config) { cfg.DataDir = dirs[name] }
	for _, name := range m.Members {
		ip.Start(name, len(m.Members))
	}
	leader := ip.Leader()
	var nodes []*node.Node
	for _, name := range m.Members {
		nodes = append(nodes, ip.Nodes[name])
	}
	// Every member rebuilt its control group from the snapshot, and its
	// partition groups from their logs alone.
	for _, n := range nodes {
		s := promtest.Parse(t, scrape(t, n))
		if v, _ := s.Get("kvnode_raft_snapshot_restores_total", map[string]string{"group": "0"}); v != 1 {
			t.Errorf("%s: the control group was restored from a snapshot %v times at start, want 1", n.Name(), v)
		}
		if v := s.Sum("kvnode_raft_snapshot_restores_total", nil); v != 1 {
			t.Errorf("%s: %v snapshot restores in all, want 1 (the partition groups have none)", n.Name(), v)
		}
	}
	// The data dir was upgraded in place to today's format.
	for name, dir := range dirs {
		if v, _, err := datadir.CheckFormat(dir); err != nil || v != datadir.Format {
			t.Errorf("%s's data dir after start: format %d, %v; want %d", name, v, err, datadir.Format)
		}
	}

	// Regions, with their types, on every member.
	waitfor.Cond(t, 30*time.Second, "every member to list the regions", func() bool {
		for _, n := range nodes {
			r := nodetest.Call(t, n, "GET", "/management/v1/regions", "")
			if r.Status != 200 || !sameRegions(r.Body, m.Regions) {
				return false
			}
		}
		return true
	})
	// Every entry, read from every member in turn.
	for r, entries := range m.Entries {
		keys := slices.Sorted(mapKeys(entries))
		for i, key := range keys {
			n := nodes[i%len(nodes)]
			got := nodetest.Call(t, n, "GET", "/kv/v1/"+r+"/"+url.PathEscape(key), "")
			if got.Status != 200 || !jsonEqual([]byte(got.Body), entries[key]) {
				t.Errorf("%s: GET %s/%s = %d %s, want %s", n.Name(), r, key, got.Status, got.Body, entries[key])
			}
		}
		for _, n := range nodes {
			got := nodetest.MustCall(t, n, "GET", "/kv/v1/"+r+"/keys", "", 200)
			var listed struct{ Keys []string }
			if err := json.Unmarshal([]byte(got.Body), &listed); err != nil {
				t.Fatalf("%s: keys of %s: %v in %s", n.Name(), r, err, got.Body)
			}
			slices.Sort(listed.Keys)
			if !slices.Equal(listed.Keys, keys) {
				t.Errorf("%s: keys of %s = %d keys %v, want %d", n.Name(), r, len(listed.Keys), listed.Keys, len(keys))
			}
		}
	}
	// Indexes, rebuilt on every replica from what was restored.
	for r, ixs := range m.Indexes {
		for _, ix := range ixs {
			waitIndexBuilt(t, nodes, r, ix, countWithPath(m.Entries[r], ix.Path))
		}
	}
	// Named queries and functions are listed.
	for _, n := range nodes {
		if got := listedIDs(t, n, "/kv/v1/queries", "queries"); !containsAll(got, m.Queries) {
			t.Errorf("%s: named queries %v, want %v among them", n.Name(), got, m.Queries)
		}
		if got := listedIDs(t, n, "/kv/v1/functions", "functions"); !containsAll(got, m.Functions) {
			t.Errorf("%s: functions %v, want %v among them", n.Name(), got, m.Functions)
		}
	}
	// The recorded answers: queries over the indexes, named queries, the
	// deployed function, definitions, a multi-key read.
	for _, a := range m.Answers {
		for _, n := range nodes {
			got := nodetest.Call(t, n, a.Method, a.Path, a.Body)
			if got.Status != a.Status || !jsonEqual([]byte(got.Body), a.Answer) {
				t.Errorf("%s: %s %s = %d %s, want %d %s", n.Name(), a.Method, a.Path, got.Status, got.Body, a.Status, a.Answer)
			}
		}
	}
	// New writes work, in every region, from every member.
	for _, n := range nodes {
		for r := range m.Regions {
			path := "/kv/v1/" + r + "/" + url.PathEscape("after upgrade "+n.Name())
			nodetest.MustCall(t, n, "PUT", path, `{"by":"`+n.Name()+`","n":{"deep":[1,2]}}`, 200)
			if got := nodetest.MustCall(t, leader, "GET", path, "", 200); !jsonEqual([]byte(got.Body), []byte(`{"by":"`+n.Name()+`","n":{"deep":[1,2]}}`)) {
				t.Errorf("read back %s: %s", path, got.Body)
			}
		}
	}
}

// TestNewerDataDirRefused: a member does not start on a data dir a newer
// kvnode wrote, and says why; the dir is left as it was.
func TestNewerDataDirRefused(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, datadir.FormatFile)
	newer := []byte(strconv.Itoa(datadir.Format+1) + "\n")
	if err := os.WriteFile(path, newer, 0o640); err != nil {
		t.Fatal(err)
	}
	cfg := node.Default()
	cfg.Name = "a"
	cfg.DataDir = dir
	cfg.HTTPAddr, cfg.InternalAddr, cfg.GossipAddr = "127.0.0.1:0", "127.0.0.1:0", "127.0.0.1:0"
	cfg.Logger = nodetest.Logger("a")
	n, err := node.Start(t.Context(), cfg)
	if err == nil {
		_ = n.Close()
		t.Fatal("a member started on a data dir of a newer format")
	}
	if !errors.Is(err, datadir.ErrNewerFormat) || !strings.Contains(err.Error(), "downgrade is not supported") {
		t.Fatalf("start on a newer data dir: %v; want it to say downgrade is not supported", err)
	}
	if data, _ := os.ReadFile(path); !bytes.Equal(data, newer) {
		t.Errorf("format file is %q after the refusal, want %q", data, newer)
	}
	if _, err := os.Stat(filepath.Join(dir, datadir.NodeNameFile)); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("the refused data dir was claimed: %v", err)
	}
}

// checkGoldenShape checks that the control group of every member has a
// snapshot and that some partition group has none (its state is its log
// alone), and that every member's log holds records.
func checkGoldenShape(t *testing.T, dirs map[string]string) {
	t.Helper()
	logOnly := 0
	for name, dir := range dirs {
		if len(snapshotsOf(t, datadir.GroupDir(dir, 0))) == 0 {
			t.Errorf("%s: the control group has no snapshot", name)
		}
		gids, _, err := datadir.PartitionDirs(dir)
		if err != nil {
			t.Fatal(err)
		}
		for _, gid := range gids {
			if len(snapshotsOf(t, datadir.GroupDir(dir, gid))) == 0 {
				logOnly++
			}
		}
		segs, err := filepath.Glob(filepath.Join(datadir.WALPath(dir), "*.wal"))
		if err != nil || len(segs) == 0 {
			t.Errorf("%s: no log segments (%v)", name, err)
		}
	}
	if logOnly == 0 {
		t.Errorf("every partition group has a snapshot: none is rebuilt from its log alone")
	}
}

// snapshotsOf lists the finished snapshots in a group's dir.
func snapshotsOf(t *testing.T, groupDir string) []string {
	t.Helper()
	ents, err := os.ReadDir(filepath.Join(groupDir, "snapshots"))
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		t.Fatal(err)
	}
	var out []string
	for _, e := range ents {
		if e.IsDir() && !strings.HasSuffix(e.Name(), ".tmp") {
			out = append(out, e.Name())
		}
	}
	return out
}

// waitIndexBuilt waits until index ix of region r covers want entries on
// every member: listed by the API and built on the replicas the member
// holds (the control group's for a replicated region).
func waitIndexBuilt(t *testing.T, nodes []*node.Node, r string, ix goldenIndex, want int) {
	t.Helper()
	waitfor.Cond(t, 30*time.Second, fmt.Sprintf("index %s of %s on every member", ix.Name, r), func() bool {
		for _, n := range nodes {
			got := nodetest.Call(t, n, "GET", "/management/v1/regions/"+r+"/indexes/"+ix.Name, "")
			if got.Status != 200 || !strings.Contains(got.Body, ix.Expression) {
				return false
			}
		}
		return true
	})
	if want == 0 {
		return
	}
	for _, n := range nodes {
		control, err := n.Store().Router().ControlState()
		if err != nil {
			t.Fatal(err)
		}
		info, ok := control.Region(r)
		if !ok {
			t.Fatalf("%s: region %s is not defined", n.Name(), r)
		}
		if info.Kind == region.Replicate {
			id, _ := control.RegionID(r)
			waitfor.Cond(t, 30*time.Second, fmt.Sprintf("%s: index %s to cover %d entries", n.Name(), ix.Name, want), func() bool {
				return control.Indexes().Len(r, id, ix.Name) == want
			})
			continue
		}
		// A partitioned region's index lives in each partition group: the
		// replicas this member hosts cover their groups' entries, and every
		// group is hosted somewhere.
		table, err := n.Store().Router().Placement(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		p := table.P()
		waitfor.Cond(t, 30*time.Second, fmt.Sprintf("index %s to cover %d entries over the partition groups", ix.Name, want), func() bool {
			covered := 0
			for gid := uint64(1); gid <= uint64(p); gid++ {
				var part int
				found := false
				for _, m := range nodes {
					f, err := m.Store().Router().LocalPart(t.Context(), gid, region.Stale)
					if err != nil {
						continue
					}
					id, ok := f.RegionID(r)
					if !ok {
						return false
					}
					part, found = f.Indexes().Len(r, id, ix.Name), true
					break
				}
				if !found {
					return false
				}
				covered += part
			}
			return covered == want
		})
		return // the groups were checked wherever they are hosted
	}
}

func countWithPath(entries map[string]json.RawMessage, path string) int {
	n := 0
	for _, v := range entries {
		var obj map[string]json.RawMessage
		if json.Unmarshal(v, &obj) == nil && obj[path] != nil {
			n++
		}
	}
	return n
}

func sameRegions(body string, want map[string]string) bool {
	var got struct {
		Result []struct{ Name, Type string }
	}
	if err := json.Unmarshal([]byte(body), &got); err != nil || len(got.Result) != len(want) {
		return false
	}
	for _, r := range got.Result {
		if want[r.Name] != r.Type {
			return false
		}
	}
	return true
}

func listedIDs(t *testing.T, n *node.Node, path, field string) []string {
	t.Helper()
	r := nodetest.MustCall(t, n, "GET", path, "", 200)
	var got map[string]json.RawMessage
	if err := json.Unmarshal([]byte(r.Body), &got); err != nil {
		t.Fatalf("%s: GET %s: %v in %s", n.Name(), path, err, r.Body)
	}
	var ids []string
	if err := json.Unmarshal(got[field], &ids); err != nil {
		// A list of objects with an id.
		var objs []struct{ ID string }
		if err := json.Unmarshal(got[field], &objs); err != nil {
			t.Fatalf("%s: GET %s: %v in %s", n.Name(), path, err, r.Body)
		}
		for _, o := range objs {
			ids = append(ids, o.ID)
		}
	}
	return ids
}

func containsAll(have, want []string) bool {
	for _, w := range want {
		if !slices.Contains(have, w) {
			return false
		}
	}
	return true
}

func mapKeys[V any](m map[string]V) func(func(string) bool) {
	return func(yield func(string) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}

func jsonEqual(a, b []byte) bool {
	var x, y any
	if json.Unmarshal(a, &x) != nil || json.Unmarshal(b, &y) != nil {
		return false
	}
	ca, _ := json.Marshal(x)
	cb, _ := json.Marshal(y)
	return bytes.Equal(ca, cb)
}

// writeGoldenArchive tars and gzips each member's data dir under its name,
// in a reproducible order and without times or owners.
func writeGoldenArchive(t *testing.T, w io.Writer, members []string, dirs map[string]string) {
	t.Helper()
	zw, err := gzip.NewWriterLevel(w, gzip.BestCompression)
	if err != nil {
		t.Fatal(err)
	}
	tw := tar.NewWriter(zw)
	for _, name := range members {
		root := dirs[name]
		err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			rel, err := filepath.Rel(root, path)
			if err != nil {
				return err
			}
			hdr := &tar.Header{Name: filepath.ToSlash(filepath.Join(name, rel)), Mode: 0o644, Format: tar.FormatPAX}
			if d.IsDir() {
				hdr.Typeflag, hdr.Name, hdr.Mode = tar.TypeDir, hdr.Name+"/", 0o755
				return tw.WriteHeader(hdr)
			}
			if !d.Type().IsRegular() {
				return fmt.Errorf("%s is not a regular file", path)
			}
			data, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			hdr.Typeflag, hdr.Size = tar.TypeReg, int64(len(data))
			if err := tw.WriteHeader(hdr); err != nil {
				return err
			}
			_, err = tw.Write(data)
			return err
		})
		if err != nil {
			t.Fatalf("archive %s's data dir: %v", name, err)
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
}

// extractGoldenArchive unpacks archive into base and returns each
// member's data dir.
func extractGoldenArchive(t *testing.T, archive, base string, members []string) map[string]string {
	t.Helper()
	f, err := os.Open(archive)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	tr := tar.NewReader(zr)
	for {
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if !filepath.IsLocal(hdr.Name) {
			t.Fatalf("%s: entry %q is outside the archive's root", archive, hdr.Name)
		}
		path := filepath.Join(base, filepath.FromSlash(hdr.Name))
		switch hdr.Typeflag {
		case tar.TypeDir:
			if err := os.MkdirAll(path, 0o750); err != nil {
				t.Fatal(err)
			}
		case tar.TypeReg:
			if err := os.MkdirAll(filepath.Dir(path), 0o750); err != nil {
				t.Fatal(err)
			}
			data, err := io.ReadAll(tr)
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(path, data, 0o640); err != nil {
				t.Fatal(err)
			}
		default:
			t.Fatalf("%s: entry %q of type %c", archive, hdr.Name, hdr.Typeflag)
		}
	}
	dirs := map[string]string{}
	for _, name := range members {
		dirs[name] = filepath.Join(base, name)
		if _, err := os.Stat(filepath.Join(dirs[name], datadir.NodeNameFile)); err != nil {
			t.Fatalf("%s: no data dir for member %s: %v", archive, name, err)
		}
	}
	return dirs
}

// TestDataDirWithoutFormatFile: data dirs of releases before the format
// file existed have none; a member opens one with its data, records
// today's format and says so once (and nothing of the kind at a first
// start).
func TestDataDirWithoutFormatFile(t *testing.T) {
	logs := &nodetest.LogTap{}
	ip := nodetest.New(t)
	ip.Logger = logs.Logger
	n := ip.Start("a", 1)
	ip.Leader()
	nodetest.MustCall(t, n, "POST", "/management/v1/regions", `{"name":"r","type":"REPLICATE"}`, 201)
	nodetest.MustCall(t, n, "PUT", "/kv/v1/r/k", `{"v":"before"}`, 200)
	dir := n.Config().DataDir
	ip.Stop("a", false)
	if err := os.Remove(filepath.Join(dir, datadir.FormatFile)); err != nil {
		t.Fatal(err)
	}

	n = ip.Start("a", 1)
	ip.Leader()
	if got := nodetest.MustCall(t, n, "GET", "/kv/v1/r/k", "", 200); got.Body != `{"v":"before"}` {
		t.Errorf("after the upgrade: k = %s", got.Body)
	}
	if v, _, err := datadir.CheckFormat(dir); err != nil || v != datadir.Format {
		t.Errorf("format after the start: %d, %v; want %d", v, err, datadir.Format)
	}
	want := fmt.Sprintf("from=0 to=%d", datadir.Format)
	if got := logs.Matching("a", "data dir upgraded in place"); len(got) != 1 || !strings.Contains(got[0], want) {
		t.Errorf("lines about the upgrade: %q, want one saying %s (none for the first start)", got, want)
	}
}
