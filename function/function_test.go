package function

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http/httptest"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kvnode/kvnode/partition"
	"github.com/kvnode/kvnode/region"
)

func TestParseArgs(t *testing.T) {
	for _, tc := range []struct {
		name, body string
		want       []Arg
		err        string // "" for success
	}{
		{"empty body", "", nil, ""},
		{"int scalar", `[{"@type":"int","@value":5}]`, []Arg{{Type: "int", Value: int64(5)}}, ""},
		{"int as text", `[{"@type":"int","@value":"5"}]`, []Arg{{Type: "int", Value: int64(5)}}, ""},
		{"double and String", `[{"@type":"double","@value":1.5},{"@type":"String","@value":"x"}]`,
			[]Arg{{Type: "double", Value: 1.5}, {Type: "String", Value: "x"}}, ""},
		{"single object is one argument", `{"@type":"long","@value":7}`, []Arg{{Type: "long", Value: int64(7)}}, ""},
		{"unknown scalar type keeps the JSON kind", `[{"@type":"org.Money","@value":2.0}]`, []Arg{{Type: "org.Money", Value: 2.0}}, ""},
		{"object argument", `[{"@type":"org.Order","id":1,"name":"a","ok":true,"none":null}]`,
			[]Arg{{Type: "org.Order", Fields: []Field{{"id", int64(1)}, {"name", "a"}, {"ok", true}, {"none", nil}}}}, ""},
		{"empty object argument", `[{"@type":"org.Empty"}]`, []Arg{{Type: "org.Empty", Fields: []Field{}}}, ""},
		{"not an array", `"x"`, nil, "JSON array"},
		{"a scalar element", `[5]`, nil, "argument 1"},
		{"collection of objects", `[[{"@type":"T"}]]`, nil, "collection"},
		{"nested object", `[{"@type":"T","a":{"b":1}}]`, nil, "nested"},
		{"nested array", `[{"@type":"T","a":[1]}]`, nil, "nested"},
		{"array as @value", `[{"@type":"int","@value":[1]}]`, nil, "nested"},
		{"missing @type", `[{"@value":1}]`, nil, "@type"},
		{"@type not a string", `[{"@type":1,"@value":1}]`, nil, "@type"},
		{"both value and fields", `[{"@type":"T","@value":1,"a":2}]`, nil, "either"},
		{"unparsable int", `[{"@type":"int","@value":"five"}]`, nil, "not a int"},
		{"malformed JSON", `[{"@type":`, nil, "JSON array"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ParseArgs([]byte(tc.body))
			if tc.err != "" {
				if err == nil || !errors.Is(err, region.ErrInvalid) || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("ParseArgs(%s) = %v, %v; want an ErrInvalid mentioning %q", tc.body, got, err, tc.err)
				}
				return
			}
			if err != nil || !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("ParseArgs(%s) = %#v, %v; want %#v", tc.body, got, err, tc.want)
			}
			// The wire form (arguments between members) reads back the same.
			b, err := json.Marshal(got)
			if err != nil {
				t.Fatal(err)
			}
			var back []Arg
			if err := json.Unmarshal(b, &back); err != nil || !reflect.DeepEqual(back, got) && len(got) > 0 {
				t.Fatalf("round trip %s = %#v, %v", b, back, err)
			}
		})
	}
}

// fakeCluster is a Cluster with fixed answers.
type fakeCluster struct {
	members []Member
	regions map[string]bool // name → partitioned
	p       int
	leaders map[uint64]string
}

func (f fakeCluster) Members() []Member { return f.members }
func (f fakeCluster) RegionKind(_ context.Context, name string) (bool, error) {
	part, ok := f.regions[name]
	if !ok {
		return false, fmt.Errorf("region %q: %w", name, region.ErrRegionNotFound)
	}
	return part, nil
}
func (f fakeCluster) PartitionLeaders(context.Context) (partition.Table, map[uint64]string, error) {
	t, err := partition.NewTable(f.p, 1)
	return t, f.leaders, err
}

// loopback runs calls to other members on their own services, recording
// who ran what.
type loopback struct {
	mu       sync.Mutex
	services map[string]*Service
	calls    []string
}

func (l *loopback) CallMember(ctx context.Context, member, path string, body []byte) ([]byte, error) {
	l.mu.Lock()
	l.calls = append(l.calls, member)
	svc := l.services[member]
	l.mu.Unlock()
	if svc == nil || path != RPCPath {
		return nil, fmt.Errorf("no member %s", member)
	}
	var wc wireCall
	if err := json.Unmarshal(body, &wc); err != nil {
		return nil, err
	}
	fn, err := svc.cfg.Registry.Lookup(ctx, wc.ID)
	if err != nil {
		return nil, err
	}
	out, err := svc.runLocal(ctx, fn, wc)
	if err != nil {
		return nil, err
	}
	return json.Marshal(out)
}

// echoCall is a function answering what its member was asked to run.
var echoCall = Function{
	ID: "Echo", HasResult: true,
	Run: func(_ context.Context, c *Call) ([]any, error) {
		return []any{map[string]any{"member": c.Member, "groups": c.Groups, "filter": c.Filter, "partitioned": c.Partitioned, "args": len(c.Args)}}, nil
	},
}

func newTestServices(t *testing.T, cl fakeCluster, fns ...Function) (map[string]*Service, *loopback) {
	t.Helper()
	lb := &loopback{services: map[string]*Service{}}
	for _, m := range cl.members {
		reg, err := NewRegistry(Limits{}, nil, append([]Function{echoCall}, fns...)...)
		if err != nil {
			t.Fatal(err)
		}
		lb.services[m.Name] = NewService(Config{Self: m.Name, Registry: reg, Cluster: cl, Transport: lb})
	}
	return lb.services, lb
}

func TestTargets(t *testing.T) {
	cl := fakeCluster{
		members: []Member{{"c", []string{"west"}}, {"a", []string{"east"}}, {"b", []string{"east", "west"}}},
		regions: map[string]bool{"rep": false, "part": true},
		p:       4,
		leaders: map[uint64]string{1: "a", 2: "b", 3: "a", 4: "c"},
	}
	services, lb := newTestServices(t, cl)
	ctx := context.Background()
	// The keys of each group, to build filters with.
	keyOf := map[uint64]string{}
	for i := 0; len(keyOf) < 4; i++ {
		k := fmt.Sprintf("k%d", i)
		if g := partition.GroupForKey(k, 4); keyOf[g] == "" {
			keyOf[g] = k
		}
	}
	type ran struct {
		Member string   `json:"member"`
		Groups []uint64 `json:"groups"`
		Filter []string `json:"filter"`
	}
	for _, tc := range []struct {
		name string
		req  Request
		want []ran
		err  error
	}{
		{"everywhere", Request{}, []ran{{Member: "a"}, {Member: "b"}, {Member: "c"}}, nil},
		{"members", Request{OnMembers: []string{"c", "a", "c"}}, []ran{{Member: "a"}, {Member: "c"}}, nil},
		{"groups", Request{OnGroups: []string{"west"}}, []ran{{Member: "b"}, {Member: "c"}}, nil},
		{"replicated region: here", Request{OnRegion: "rep"}, []ran{{Member: "b"}}, nil},
		{"partitioned region: every group's leader", Request{OnRegion: "part"},
			[]ran{{Member: "a", Groups: []uint64{1, 3}}, {Member: "b", Groups: []uint64{2}}, {Member: "c", Groups: []uint64{4}}}, nil},
		{"filter: only the keys' owners", Request{OnRegion: "part", Filter: []string{keyOf[4], keyOf[2]}},
			[]ran{{Member: "b", Groups: []uint64{2}, Filter: []string{keyOf[2]}}, {Member: "c", Groups: []uint64{4}, Filter: []string{keyOf[4]}}}, nil},
		{"unknown member", Request{OnMembers: []string{"a", "zz"}}, nil, ErrUnknownTarget},
		{"unknown group", Request{OnGroups: []string{"north"}}, nil, ErrUnknownTarget},
		{"unknown region", Request{OnRegion: "nope"}, nil, ErrUnknownTarget},
		{"two targets", Request{OnRegion: "rep", OnMembers: []string{"a"}}, nil, region.ErrInvalid},
		{"filter without region", Request{Filter: []string{"k"}}, nil, region.ErrInvalid},
		{"filter on a replicated region", Request{OnRegion: "rep", Filter: []string{"k"}}, nil, region.ErrInvalid},
		{"unknown function", Request{ID: "Nope"}, nil, ErrUnknownFunction},
	} {
		t.Run(tc.name, func(t *testing.T) {
			lb.calls = nil
			req := tc.req
			if req.ID == "" {
				req.ID = "Echo"
			}
			res, _, err := services["b"].Execute(ctx, req)
			if tc.err != nil {
				if !errors.Is(err, tc.err) {
					t.Fatalf("Execute = %v, want %v", err, tc.err)
				}
				if len(lb.calls) > 0 {
					t.Fatalf("a refused request still called %v", lb.calls)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var got []ran
			for _, r := range res {
				var x ran
				if err := json.Unmarshal(r, &x); err != nil {
					t.Fatal(err)
				}
				got = append(got, x)
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("ran %+v, want %+v", got, tc.want)
			}
			// b ran its own part; the others were called over the transport.
			var remote []string
			for _, w := range tc.want {
				if w.Member != "b" {
					remote = append(remote, w.Member)
				}
			}
			slices.Sort(lb.calls)
			if !slices.Equal(lb.calls, remote) {
				t.Fatalf("transport calls %v, want %v", lb.calls, remote)
			}
		})
	}
}

func TestAMemberFailureNamesTheMember(t *testing.T) {
	cl := fakeCluster{members: []Member{{Name: "a"}, {Name: "b"}}}
	failing := Function{ID: "FailOnB", HasResult: true, Run: func(_ context.Context, c *Call) ([]any, error) {
		if c.Member == "b" {
			return nil, errors.New("disk on fire")
		}
		return []any{1}, nil
	}}
	services, _ := newTestServices(t, cl, failing)
	_, _, err := services["a"].Execute(context.Background(), Request{ID: "FailOnB"})
	var me *MemberError
	if !errors.As(err, &me) || me.Member != "b" || !strings.Contains(err.Error(), "disk on fire") {
		t.Fatalf("Execute = %v, want a MemberError naming b", err)
	}
}

// memData is Data over a map, for scripts.
type memData struct {
	mu      sync.Mutex
	regions map[string]map[string]json.RawMessage
}

func (m *memData) r(name string) map[string]json.RawMessage {
	if m.regions[name] == nil {
		m.regions[name] = map[string]json.RawMessage{}
	}
	return m.regions[name]
}
func (m *memData) Get(_ context.Context, name, key string) (json.RawMessage, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.r(name)[key], nil
}
func (m *memData) GetMany(ctx context.Context, name string, keys []string) ([]json.RawMessage, error) {
	out := make([]json.RawMessage, len(keys))
	for i, k := range keys {
		out[i], _ = m.Get(ctx, name, k)
	}
	return out, nil
}
func (m *memData) Put(_ context.Context, name, key string, v json.RawMessage) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.r(name)[key] = v
	return nil
}
func (m *memData) PutIfAbsent(_ context.Context, name, key string, v json.RawMessage) (json.RawMessage, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if cur, ok := m.r(name)[key]; ok {
		return cur, nil
	}
	m.r(name)[key] = v
	return nil, nil
}
func (m *memData) Replace(_ context.Context, name, key string, old, v json.RawMessage) (bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if cur, ok := m.r(name)[key]; !ok || string(cur) != string(old) {
		return false, nil
	}
	m.r(name)[key] = v
	return true, nil
}
func (m *memData) Remove(_ context.Context, name, key string) (json.RawMessage, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	old := m.r(name)[key]
	delete(m.r(name), key)
	return old, nil
}
func (m *memData) Count(_ context.Context, name string) (int, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.r(name)), nil
}
func (m *memData) Query(_ context.Context, text string, params []any) (json.RawMessage, error) {
	b, _ := json.Marshal([]any{text, params})
	return b, nil
}
func (m *memData) ScanLocal(context.Context, string, []uint64, func(string, json.RawMessage) bool) error {
	return nil
}
func (m *memData) CountLocal(context.Context, string, []uint64) ([]int, error) { return []int{0}, nil }
func (m *memData) ClearLocal(context.Context, string, []uint64) error          { return nil }
func (m *memData) MemberInfo(context.Context) (any, error)                     { return "me", nil }

func runJS(t *testing.T, source string, limits Limits, c *Call) ([]any, error) {
	t.Helper()
	d := Deployment{ID: "t", Source: source}
	if err := Check(&d); err != nil {
		t.Fatalf("Check: %v", err)
	}
	prog, err := compile(d)
	if err != nil {
		t.Fatal(err)
	}
	limits.setDefaults()
	return d.function(prog, limits).Run(context.Background(), c)
}

func TestScriptAPI(t *testing.T) {
	data := &memData{regions: map[string]map[string]json.RawMessage{}}
	c := &Call{Member: "m1", Region: "orders", Filter: []string{"k1"}, Groups: []uint64{2},
		Args: []Arg{{Type: "int", Value: int64(41)}, {Type: "org.X", Fields: []Field{{"a", "b"}}}}, Data: data}
	res, err := runJS(t, `function execute(ctx) {
		var r = ctx.region;
		r.put("a", {n: ctx.args[0] + 1, t: ctx.args[1]["@type"], f: ctx.args[1].a});
		var first = r.putIfAbsent("b", {n: 1});
		var second = r.putIfAbsent("b", {n: 2});
		var swapped = r.replace("b", {n: 1}, {n: 3});
		var stale = r.replace("b", {n: 1}, {n: 4});
		var removed = ctx.regions("other").remove("none");
		return [ctx.member, ctx.filter, ctx.groups, r.get("a"), first, second, swapped, stale, r.get("b"), removed, r.size(), ctx.query("SELECT 1", 2, "x")];
	}`, Limits{}, c)
	if err != nil {
		t.Fatal(err)
	}
	got, _ := json.Marshal(res)
	want := `["m1",["k1"],[2],{"f":"b","n":42,"t":"org.X"},null,{"n":1},true,false,{"n":3},null,2,["SELECT 1",[2,"x"]]]`
	if string(got) != want {
		t.Fatalf("script saw\n %s\nwant\n %s", got, want)
	}
}

func TestScriptLimitsAndErrors(t *testing.T) {
	data := &memData{regions: map[string]map[string]json.RawMessage{}}
	c := &Call{Member: "m", Data: data}
	start := time.Now()
	_, err := runJS(t, `function execute(ctx) { for (;;) {} }`, Limits{Timeout: 200 * time.Millisecond}, c)
	if err == nil || !strings.Contains(err.Error(), "ran longer than") || time.Since(start) > 3*time.Second {
		t.Fatalf("an endless loop: %v after %v, want it stopped after 200ms", err, time.Since(start))
	}
	_, err = runJS(t, `function execute(ctx) { var a = [], s = "x"; for (;;) { if (s.length < 1048576) { s = s + s; } a.push(s + a.length); } }`, Limits{Timeout: 20 * time.Second, MemoryBytes: 64 << 20}, c)
	if err == nil || !strings.Contains(err.Error(), "heap grew") {
		t.Fatalf("a memory hog: %v, want it stopped by the memory limit", err)
	}
	_, err = runJS(t, `function f() { return f(); } function execute(ctx) { return f(); }`, Limits{}, c)
	if err == nil {
		t.Fatal("endless recursion succeeded, want an error")
	}
	_, err = runJS(t, `function execute(ctx) { throw new Error("nope"); }`, Limits{}, c)
	if err == nil || !strings.Contains(err.Error(), "nope") {
		t.Fatalf("a throwing script: %v", err)
	}
	for _, src := range []string{`require("fs")`, `new XMLHttpRequest()`, `fetch("http://x")`, `process.exit(1)`} {
		if _, err := runJS(t, `function execute(ctx) { return `+src+`; }`, Limits{}, c); err == nil {
			t.Errorf("%s worked inside the sandbox", src)
		}
	}
	res, err := runJS(t, `function execute(ctx) { }`, Limits{}, c)
	if err != nil || res != nil {
		t.Fatalf("a script without a result: %v, %v", res, err)
	}
}

func TestCheck(t *testing.T) {
	for _, tc := range []struct {
		name string
		d    Deployment
		err  string
	}{
		{"ok", Deployment{ID: "f", Source: "function execute(ctx) { return 1; }"}, ""},
		{"syntax", Deployment{ID: "f", Source: "function execute(ctx) { return ( }"}, "does not compile"},
		{"no execute", Deployment{ID: "f", Source: "var x = 1;"}, "execute"},
		{"endless top level", Deployment{ID: "f", Source: "for (;;) {}"}, "longer than 1s"},
		{"empty", Deployment{ID: "f", Source: " "}, "empty"},
		{"bad id", Deployment{ID: "a/b", Source: "function execute(){}"}, "id"},
		{"bad permission", Deployment{ID: "f", Source: "function execute(){}", Permission: "DATA"}, "permission"},
		{"permission with region", Deployment{ID: "f", Source: "function execute(){}", Permission: "DATA:READ:orders"}, ""},
		{"bad timeout", Deployment{ID: "f", Source: "function execute(){}", Timeout: "-1s"}, "timeout"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := tc.d
			err := Check(&d)
			switch {
			case tc.err == "" && err != nil:
				t.Fatalf("Check = %v", err)
			case tc.err != "" && (err == nil || !errors.Is(err, region.ErrInvalid) || !strings.Contains(err.Error(), tc.err)):
				t.Fatalf("Check = %v, want ErrInvalid mentioning %q", err, tc.err)
			case err == nil && d.Permission == "":
				t.Fatal("Check left the permission empty; want the default")
			}
		})
	}
}

// TestRPCHandlerRefusesOverLimitCalls: a call from another member longer
// than the frame limit is refused whole (413), never cut to the limit and
// then decoded (it used to be cut at 64 MiB).
func TestRPCHandlerRefusesOverLimitCalls(t *testing.T) {
	ran := 0
	count := Function{ID: "Count", HasResult: true, Run: func(context.Context, *Call) ([]any, error) { ran++; return []any{ran}, nil }}
	reg, err := NewRegistry(Limits{}, nil, count)
	if err != nil {
		t.Fatal(err)
	}
	svc := NewService(Config{Self: "a", Registry: reg, MaxCallBytes: 1 << 10})
	call := func(pad int) int {
		body, err := json.Marshal(wireCall{ID: "Count", Args: []Arg{{Type: "String", Value: strings.Repeat("x", pad)}}})
		if err != nil {
			t.Fatal(err)
		}
		rec := httptest.NewRecorder()
		svc.RPCHandler().ServeHTTP(rec, httptest.NewRequest("POST", RPCPath, bytes.NewReader(body)))
		return rec.Code
	}
	if code := call(100); code != 200 || ran != 1 {
		t.Fatalf("call under the limit: %d, ran %d times; want 200, once", code, ran)
	}
	if code := call(2 << 10); code != 413 || ran != 1 {
		t.Errorf("call over the limit: %d, ran %d times; want 413 and not run", code, ran)
	}
}
