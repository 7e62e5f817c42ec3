package node_test

import (
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/kvnode/kvnode/internal/waitfor"
	"github.com/kvnode/kvnode/node"
	"github.com/kvnode/kvnode/node/nodetest"
	"github.com/kvnode/kvnode/region"
)

// deploy PUTs a JavaScript function on node n.
func deploy(t *testing.T, n *node.Node, id, source string, extra string, want int) nodetest.Reply {
	t.Helper()
	body, _ := json.Marshal(source)
	return nodetest.MustCall(t, n, "PUT", "/management/v1/functions/"+id, `{"source":`+string(body)+extra+`}`, want)
}

// memberNames reads the "name" or "member" of each result.
func memberNames(t *testing.T, body string) []string {
	t.Helper()
	var results []map[string]any
	if err := json.Unmarshal([]byte(body), &results); err != nil {
		t.Fatalf("results %s: %v", body, err)
	}
	var names []string
	for _, r := range results {
		if n, ok := r["name"].(string); ok {
			names = append(names, n)
		} else if n, ok := r["member"].(string); ok {
			names = append(names, n)
		}
	}
	return names
}

// TestFunctionsOnThreeNodes covers the Functions table of rest-details.md
// through REST on a 3-node cluster, the built-ins, targeting (members,
// member groups, partition group leaders narrowed by filter keys), deployed
// JavaScript with linearizable writes, and a runaway script.
func TestFunctionsOnThreeNodes(t *testing.T) {
	ip := nodetest.New(t)
	memberGroups := map[string][]string{"a": {"east"}, "b": {"east", "west"}, "c": {"west"}}
	ip.Tune = func(name string, cfg *node.Config) {
		cfg.Groups = memberGroups[name]
		cfg.ReplicationFactor = 2
	}
	for _, name := range []string{"a", "b", "c"} {
		ip.Start(name, 3)
	}
	ip.Leader()
	a, b, c := ip.Nodes["a"], ip.Nodes["b"], ip.Nodes["c"]
	nodes := []*node.Node{a, b, c}
	waitfor.Cond(t, 10*time.Second, "every node to see 3 members", func() bool {
		for _, n := range nodes {
			r := nodetest.Call(t, n, "POST", "/kv/v1/functions/MemberInfo", "")
			if r.Status != 200 || len(memberNames(t, r.Body)) != 3 {
				return false
			}
		}
		return true
	})
	nodetest.MustCall(t, a, "POST", "/management/v1/regions", `{"name":"orders","type":"REPLICATE"}`, 201)
	nodetest.MustCall(t, a, "POST", "/management/v1/regions", `{"name":"parts","type":"PARTITION"}`, 201)
	sum := 0
	for i := 0; i < 60; i++ {
		nodetest.MustCall(t, nodes[i%3], "PUT", fmt.Sprintf("/kv/v1/parts/k%02d", i), fmt.Sprintf(`{"id":%d,"price":%d}`, i, i), 200)
		sum += i
	}

	// GET /functions: the built-ins, with Location.
	r := nodetest.MustCall(t, b, "GET", "/kv/v1/functions", "", 200)
	if r.Body != `{"functions":["ClearRegion","GetAll","MemberInfo","RegionSize","SumField"]}` ||
		!strings.HasSuffix(r.Header.Get("Location"), "/kv/v1/functions") {
		t.Fatalf("GET /functions = %s, Location %q", r.Body, r.Header.Get("Location"))
	}

	// Targeting by members and member groups, from any node.
	for _, tc := range []struct{ query, want string }{
		{"", "a,b,c"},
		{"?onMembers=b", "b"},
		{"?onMembers=c,a", "a,c"},
		{"?onGroups=east", "a,b"},
		{"?onGroups=west", "b,c"},
		{"?onGroups=west,east", "a,b,c"},
	} {
		for _, n := range nodes {
			r := nodetest.MustCall(t, n, "POST", "/kv/v1/functions/MemberInfo"+tc.query, "", 200)
			if got := strings.Join(memberNames(t, r.Body), ","); got != tc.want {
				t.Errorf("%s: MemberInfo%s ran on %s, want %s", n.Name(), tc.query, got, tc.want)
			}
			if !strings.HasSuffix(r.Header.Get("Location"), "/kv/v1/functions/MemberInfo") {
				t.Errorf("Location = %q", r.Header.Get("Location"))
			}
		}
	}
	var info []struct {
		Name       string   `json:"name"`
		Groups     []string `json:"groups"`
		RaftGroups []struct {
			Group uint64 `json:"group"`
			Role  string `json:"role"`
		} `json:"raftGroups"`
	}
	_ = json.Unmarshal([]byte(nodetest.MustCall(t, c, "POST", "/kv/v1/functions/MemberInfo?onMembers=b", "", 200).Body), &info)
	if len(info) != 1 || !slices.Equal(info[0].Groups, []string{"east", "west"}) || len(info[0].RaftGroups) == 0 {
		t.Fatalf("MemberInfo of b = %+v", info)
	}

	// Data-aware built-ins on the partitioned region.
	r = nodetest.MustCall(t, c, "POST", "/kv/v1/functions/SumField?onRegion=parts", `[{"@type":"String","@value":"price"}]`, 200)
	if r.Body != fmt.Sprintf("[%d]", sum) {
		t.Errorf("SumField(price) = %s, want [%d]", r.Body, sum)
	}
	r = nodetest.MustCall(t, a, "POST", "/kv/v1/functions/SumField?onRegion=parts&filter=k01,k02,k59", `{"@type":"String","@value":"price"}`, 200)
	if r.Body != "[62]" {
		t.Errorf("SumField(price) over k01,k02,k59 = %s, want [62]", r.Body)
	}
	r = nodetest.MustCall(t, b, "POST", "/kv/v1/functions/RegionSize?onRegion=parts", "", 200)
	if !strings.HasSuffix(r.Body, `{"region":"parts","total":60}]`) {
		t.Errorf("RegionSize(parts) = %s, want a total of 60", r.Body)
	}
	r = nodetest.MustCall(t, b, "POST", "/kv/v1/functions/GetAll?onRegion=parts&filter=k07,nope,k03", "", 200)
	if r.Body != `[{"id":7,"price":7},null,{"id":3,"price":3}]` {
		t.Errorf("GetAll = %s", r.Body)
	}

	// filter routes to the leaders of the keys' groups, and only to them.
	deploy(t, a, "whoami", `function execute(ctx) { return {member: ctx.member, filter: ctx.filter, groups: ctx.groups}; }`, `,"dataAware":true`, 201)
	var parts struct {
		Groups []struct {
			Group   uint64 `json:"group"`
			Buckets []int  `json:"buckets"`
			Leader  string `json:"leader"`
		} `json:"groups"`
	}
	_ = json.Unmarshal([]byte(nodetest.MustCall(t, a, "GET", "/management/v1/partitions", "", 200).Body), &parts)
	leaderOf := map[uint64]string{}
	for _, g := range parts.Groups {
		leaderOf[g.Group] = g.Leader
	}
	keys := []string{"k00", "k11", "k22", "k33"}
	r = nodetest.MustCall(t, c, "POST", "/kv/v1/functions/whoami?onRegion=parts&filter="+strings.Join(keys, ","), "", 200)
	var ran []struct {
		Member string   `json:"member"`
		Filter []string `json:"filter"`
		Groups []uint64 `json:"groups"`
	}
	if err := json.Unmarshal([]byte(r.Body), &ran); err != nil {
		t.Fatalf("whoami = %s: %v", r.Body, err)
	}
	var seen []string
	for _, m := range ran {
		for _, g := range m.Groups {
			if leaderOf[g] != m.Member {
				t.Errorf("%s ran for group %d, which %s leads", m.Member, g, leaderOf[g])
			}
		}
		seen = append(seen, m.Filter...)
	}
	sort.Strings(seen)
	if !slices.Equal(seen, keys) {
		t.Errorf("the members ran for keys %v, want exactly %v (%s)", seen, keys, r.Body)
	}

	// Bad requests and unknown targets.
	for _, tc := range []struct {
		name, path, body string
		status           int
		cause            string
	}{
		{"unknown function", "/kv/v1/functions/Nope", "", 404, "Nope"},
		{"unknown onRegion", "/kv/v1/functions/RegionSize?onRegion=nope", "", 404, "nope"},
		{"unknown member", "/kv/v1/functions/MemberInfo?onMembers=a,zz", "", 404, "zz"},
		{"unknown group", "/kv/v1/functions/MemberInfo?onGroups=north", "", 404, "north"},
		{"two targets", "/kv/v1/functions/MemberInfo?onMembers=a&onGroups=east", "", 400, "at most one"},
		{"region and members", "/kv/v1/functions/RegionSize?onRegion=parts&onMembers=a", "", 400, "at most one"},
		{"filter without onRegion", "/kv/v1/functions/MemberInfo?filter=k1", "", 400, "filter"},
		{"filter on a replicated region", "/kv/v1/functions/GetAll?onRegion=orders&filter=k1", "", 400, "replicated"},
		{"data-aware without onRegion", "/kv/v1/functions/RegionSize", "", 400, "onRegion"},
		{"args not objects", "/kv/v1/functions/MemberInfo", `[1,2]`, 400, "argument 1"},
		{"args not an array", "/kv/v1/functions/MemberInfo", `"x"`, 400, "JSON array"},
		{"a collection of objects", "/kv/v1/functions/MemberInfo", `[[{"@type":"T","a":1}]]`, 400, "collection"},
		{"nested object", "/kv/v1/functions/MemberInfo", `[{"@type":"T","a":{"b":1}}]`, 400, "nested"},
		{"nested array", "/kv/v1/functions/MemberInfo", `[{"@type":"T","a":[1]}]`, 400, "nested"},
		{"no @type", "/kv/v1/functions/MemberInfo", `[{"@value":1}]`, 400, "@type"},
		{"bad SumField argument", "/kv/v1/functions/SumField?onRegion=parts", `[{"@type":"int","@value":1}]`, 500, "member"},
	} {
		r := nodetest.Call(t, b, "POST", tc.path, tc.body)
		if r.Status != tc.status || !strings.Contains(r.Body, tc.cause) || !strings.HasPrefix(r.Body, `{"cause":`) {
			t.Errorf("%s: %d %s, want %d with a cause mentioning %q", tc.name, r.Status, r.Body, tc.status, tc.cause)
		}
	}

	// A failure on one member is a 500 naming it.
	deploy(t, b, "failOnB", `function execute(ctx) { if (ctx.member === "b") { throw new Error("b refuses"); } return 1; }`, "", 201)
	r = nodetest.Call(t, a, "POST", "/kv/v1/functions/failOnB", "")
	if r.Status != 500 || !strings.Contains(r.Body, "member b") || !strings.Contains(r.Body, "b refuses") {
		t.Errorf("failOnB = %d %s, want 500 naming member b", r.Status, r.Body)
	}
	nodetest.MustCall(t, a, "POST", "/kv/v1/functions/failOnB?onMembers=a,c", "", 200)

	// A function without a result answers an empty body.
	deploy(t, c, "noResult", `function execute(ctx) { ctx.regions("orders").put("touched-" + ctx.member, {ok: true}); }`, `,"hasResult":false`, 201)
	r = nodetest.MustCall(t, a, "POST", "/kv/v1/functions/noResult", "", 200)
	if r.Body != "" {
		t.Errorf("a function without a result answered %q, want an empty body", r.Body)
	}
	for _, name := range []string{"a", "b", "c"} {
		nodetest.MustCall(t, b, "GET", "/kv/v1/orders/touched-"+name, "", 200)
	}

	// 100 increments from three nodes at once: every acknowledged one
	// counted exactly once. An increment whose write's outcome is unknown
	// (an election while its replace was committing: a 503-class "outcome
	// unknown", which the store never retries) may or may not have
	// counted; any other failure is a defect.
	deploy(t, a, "inc", `function execute(ctx) {
		for (;;) {
			var cur = ctx.region.get("counter");
			if (cur === null) {
				if (ctx.region.putIfAbsent("counter", {n: 1}) === null) { return 1; }
				continue;
			}
			if (ctx.region.replace("counter", cur, {n: cur.n + 1})) { return cur.n + 1; }
		}
	}`, "", 201)
	var wg sync.WaitGroup
	var acked, unknown atomic.Int64
	errs := make(chan string, 100)
	for i := 0; i < 100; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := nodetest.Call(t, nodes[i%3], "POST", "/kv/v1/functions/inc?onRegion=orders", "")
			switch {
			case r.Status == 200:
				acked.Add(1)
			case strings.Contains(r.Body, region.ErrIndeterminate.Error()):
				unknown.Add(1)
			default:
				errs <- fmt.Sprintf("%d %s", r.Status, r.Body)
			}
		}()
	}
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Errorf("an increment failed: %s", e)
	}
	r = nodetest.MustCall(t, c, "GET", "/kv/v1/orders/counter", "", 200)
	var counter struct{ N int64 }
	if err := json.Unmarshal([]byte(r.Body), &counter); err != nil {
		t.Fatalf("counter = %s: %v", r.Body, err)
	}
	if counter.N < acked.Load() || counter.N > acked.Load()+unknown.Load() {
		t.Errorf("counter after 100 concurrent increments = %d; %d were acknowledged and %d had an unknown outcome", counter.N, acked.Load(), unknown.Load())
	}
	if unknown.Load() > 0 {
		t.Logf("%d increments had an unknown outcome (an election during the run); the counter is %d, %d acknowledged", unknown.Load(), counter.N, acked.Load())
	}

	// A query from a script, with bind values. (A returned array is
	// several results, so the rows come back flat.)
	deploy(t, b, "cheap", `function execute(ctx) { return ctx.query("SELECT p.id FROM /parts p WHERE p.price < $1 ORDER BY p.id", ctx.args[0]); }`, "", 201)
	if r := nodetest.MustCall(t, c, "POST", "/kv/v1/functions/cheap?onMembers=c", `[{"@type":"int","@value":3}]`, 200); r.Body != "[0,1,2]" {
		t.Errorf("cheap(3) = %s, want [0,1,2]", r.Body)
	}
	// A wrong number of bind values is refused as a REST named query's is
	// (oql.md §9): one value per parameter, no fewer and no more.
	deploy(t, b, "binds", `function execute(ctx) { return ctx.query("SELECT p.id FROM /parts p WHERE p.price < $1", 3, 4); }`, "", 201)
	if r := nodetest.Call(t, c, "POST", "/kv/v1/functions/binds?onMembers=c", ""); r.Status != 500 || !strings.Contains(r.Body, "1 parameter(s) (up to $1), 2 bind value(s)") {
		t.Errorf("a script's query with 2 bind values for $1 = %d %s, want 500 naming the counts", r.Status, r.Body)
	}

	// A runaway script is stopped within the limit; the node stays healthy.
	deploy(t, a, "spin", `function execute(ctx) { while (true) {} }`, `,"timeout":"2s"`, 201)
	start := time.Now()
	r = nodetest.Call(t, b, "POST", "/kv/v1/functions/spin?onMembers=b", "")
	if r.Status != 500 || !strings.Contains(r.Body, "ran longer than") {
		t.Errorf("spin = %d %s, want 500 saying it ran too long", r.Status, r.Body)
	}
	if d := time.Since(start); d > 6*time.Second {
		t.Errorf("the runaway script was stopped after %v, want about 2s", d)
	}
	deploy(t, a, "hog", `function execute(ctx) { var a = [], s = "x"; for (;;) { if (s.length < 1048576) { s = s + s; } a.push(s + a.length); } }`, `,"timeout":"20s"`, 201)
	r = nodetest.Call(t, c, "POST", "/kv/v1/functions/hog?onMembers=c", "")
	if r.Status != 500 || !strings.Contains(r.Body, "stopped") {
		t.Errorf("hog = %d %s, want 500 saying it was stopped", r.Status, r.Body)
	}
	t.Logf("hog: %s", r.Body)
	nodetest.MustCall(t, b, "GET", "/kv/v1/ping", "", 200)
	nodetest.MustCall(t, b, "PUT", "/kv/v1/orders/after-spin", `{"ok":1}`, 200)

	// Deployment management.
	for _, tc := range []struct {
		name, id, body string
		status         int
		cause          string
	}{
		{"syntax error", "broken", `{"source":"function execute(ctx) { return ( }"}`, 400, "does not compile"},
		{"no execute", "noexec", `{"source":"var x = 1;"}`, 400, "execute"},
		{"no source", "nosrc", `{"permission":"DATA:READ"}`, 400, "source"},
		{"unknown member", "x", `{"source":"function execute(){}","runtime":"js"}`, 400, "runtime"},
		{"bad permission", "x", `{"source":"function execute(){}","permission":"ALL"}`, 400, "permission"},
		{"bad timeout", "x", `{"source":"function execute(){}","timeout":"soon"}`, 400, "timeout"},
		{"a built-in's id", "MemberInfo", `{"source":"function execute(){}"}`, 409, "built-in"},
	} {
		r := nodetest.Call(t, a, "PUT", "/management/v1/functions/"+tc.id, tc.body)
		if r.Status != tc.status || !strings.Contains(r.Body, tc.cause) {
			t.Errorf("deploy %s: %d %s, want %d mentioning %q", tc.name, r.Status, r.Body, tc.status, tc.cause)
		}
	}
	deploy(t, b, "whoami", `function execute(ctx) { return "v2"; }`, "", 200) // replaced
	if r := nodetest.MustCall(t, c, "POST", "/kv/v1/functions/whoami?onMembers=a", "", 200); r.Body != `["v2"]` {
		t.Errorf("replaced whoami = %s, want [\"v2\"]", r.Body)
	}
	r = nodetest.MustCall(t, c, "GET", "/management/v1/functions/whoami", "", 200)
	if !strings.Contains(r.Body, `"permission":"DATA:WRITE"`) || !strings.Contains(r.Body, `"hasResult":true`) {
		t.Errorf("GET whoami = %s, want the default permission and hasResult", r.Body)
	}
	r = nodetest.MustCall(t, a, "GET", "/kv/v1/functions", "", 200)
	for _, id := range []string{"cheap", "inc", "whoami", "MemberInfo"} {
		if !strings.Contains(r.Body, `"`+id+`"`) {
			t.Errorf("GET /functions = %s, want %s listed", r.Body, id)
		}
	}
	nodetest.MustCall(t, b, "DELETE", "/management/v1/functions/whoami", "", 200)
	nodetest.MustCall(t, c, "POST", "/kv/v1/functions/whoami", "", 404)
	nodetest.MustCall(t, a, "DELETE", "/management/v1/functions/whoami", "", 404)
	nodetest.MustCall(t, a, "GET", "/management/v1/functions", "", 200)

	// ClearRegion clears the partitioned region DELETE refuses.
	nodetest.MustCall(t, a, "DELETE", "/kv/v1/parts", "", 405)
	r = nodetest.MustCall(t, a, "POST", "/kv/v1/functions/ClearRegion?onRegion=parts", "", 200)
	if r.Body != "" {
		t.Errorf("ClearRegion answered %q, want no body", r.Body)
	}
	for _, n := range nodes {
		if r := nodetest.MustCall(t, n, "HEAD", "/kv/v1/parts", "", 200); r.Header.Get("Resource-Count") != "0" {
			t.Errorf("%s: parts holds %s entries after ClearRegion", n.Name(), r.Header.Get("Resource-Count"))
		}
	}
}
