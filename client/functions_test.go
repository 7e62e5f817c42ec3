package client_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/kvnode/kvnode/client"
	"github.com/kvnode/kvnode/node"
)

// TestFunctions runs built-in and deployed functions on every kind of
// target, deploys and removes functions, and checks each error on a real
// 3-member cluster, m1 and m2 in the member group "east".
func TestFunctions(t *testing.T) {
	tc := startCluster(t, 3, func(name string, cfg *node.Config) {
		if name != "m3" {
			cfg.Groups = []string{"east"}
		}
	})
	c, fs := tc.c, tc.c.Functions()
	members := func(t *testing.T, rows []json.RawMessage, err error) []string {
		t.Helper()
		if err != nil {
			t.Fatalf("Run: %v", err)
		}
		var names []string
		for _, r := range rows {
			var info struct{ Name, Member string }
			if err := json.Unmarshal(r, &info); err != nil {
				t.Fatalf("result %s: %v", r, err)
			}
			names = append(names, info.Name+info.Member)
		}
		slices.Sort(names)
		return names
	}

	t.Run("builtins", func(t *testing.T) {
		ids, err := fs.List(ctx(t))
		if err != nil || !slices.Contains(ids, "MemberInfo") || !slices.Contains(ids, "SumField") {
			t.Fatalf("List = %v, %v", ids, err)
		}
		rows, err := fs.Run(ctx(t), "MemberInfo", client.Target{})
		if got := members(t, rows, err); !slices.Equal(got, []string{"m1", "m2", "m3"}) {
			t.Fatalf("MemberInfo on the cluster ran on %v", got)
		}
		rows, err = fs.Run(ctx(t), "MemberInfo", client.Target{Members: []string{"m3", "m1"}})
		if got := members(t, rows, err); !slices.Equal(got, []string{"m1", "m3"}) {
			t.Fatalf("MemberInfo on m3,m1 ran on %v", got)
		}
		rows, err = fs.Run(ctx(t), "MemberInfo", client.Target{Groups: []string{"east"}})
		if got := members(t, rows, err); !slices.Equal(got, []string{"m1", "m2"}) {
			t.Fatalf("MemberInfo on east ran on %v", got)
		}

		if err := c.CreateRegion(ctx(t), client.RegionInfo{Name: "parts", Type: client.Partition}); err != nil {
			t.Fatal(err)
		}
		var entries []client.Entry
		for i := 1; i <= 20; i++ {
			entries = append(entries, client.Entry{Key: fmt.Sprintf("k%02d", i), Value: map[string]int{"price": i}})
		}
		if err := c.Region("parts").PutAll(ctx(t), entries); err != nil {
			t.Fatal(err)
		}
		rows, err = fs.Run(ctx(t), "SumField", client.Target{Region: "parts"}, "price")
		if err != nil || len(rows) != 1 || string(rows[0]) != "210" {
			t.Fatalf("SumField(price) = %s, %v; want [210]", rows, err)
		}
		rows, err = fs.Run(ctx(t), "SumField", client.Target{Region: "parts", Filter: []string{"k03", "k17"}}, client.Typed{Type: "String", Value: "price"})
		if err != nil || len(rows) != 1 || string(rows[0]) != "20" {
			t.Fatalf("SumField(price) over k03,k17 = %s, %v; want [20]", rows, err)
		}
	})

	t.Run("deployed", func(t *testing.T) {
		greet := client.Function{ID: "greet", Permission: "DATA:READ", Description: "says hello",
			Source: `function execute(ctx) { var a = ctx.args[1]; return "hello " + ctx.args[0] + " " + a.name + " " + (ctx.args[2] * 2); }`}
		created, err := fs.Deploy(ctx(t), greet)
		if err != nil || !created {
			t.Fatalf("Deploy = %v, %v; want created", created, err)
		}
		if created, err = fs.Deploy(ctx(t), greet); err != nil || created {
			t.Fatalf("Deploy again = %v, %v; want replaced", created, err)
		}
		rows, err := fs.Run(ctx(t), "greet", client.Target{Members: []string{"m2"}},
			"ann", json.RawMessage(`{"@type":"Person","name":"bob"}`), 21)
		if err != nil || len(rows) != 1 || string(rows[0]) != `"hello ann bob 42"` {
			t.Fatalf("Run(greet) = %s, %v", rows, err)
		}
		type person struct {
			Type string `json:"@type"`
			Name string `json:"name"`
		}
		rows, err = fs.Run(ctx(t), "greet", client.Target{Members: []string{"m2"}}, nil, person{"Person", "cy"}, float64(0.5))
		if err != nil || len(rows) != 1 || string(rows[0]) != `"hello null cy 1"` {
			t.Fatalf("Run(greet) = %s, %v", rows, err)
		}
		got, err := fs.Deployed(ctx(t), "greet")
		if err != nil || got.ID != "greet" || got.Source != greet.Source || got.Permission != "DATA:READ" || got.NoResult || got.Description != "says hello" {
			t.Fatalf("Deployed = %+v, %v", got, err)
		}
		quiet := client.Function{ID: "quiet", Source: `function execute(ctx) { return 1; }`, NoResult: true}
		if _, err := fs.Deploy(ctx(t), quiet); err != nil {
			t.Fatal(err)
		}
		if rows, err := fs.Run(ctx(t), "quiet", client.Target{}); err != nil || rows != nil {
			t.Fatalf("Run(quiet) = %s, %v; want no result", rows, err)
		}
		list, err := fs.ListDeployed(ctx(t))
		if err != nil || len(list) != 2 || list[0].ID != "greet" || list[1].ID != "quiet" || !list[1].NoResult || list[1].Permission != "DATA:WRITE" {
			t.Fatalf("ListDeployed = %+v, %v", list, err)
		}
		if ids, err := fs.List(ctx(t)); err != nil || !slices.Contains(ids, "greet") {
			t.Fatalf("List = %v, %v", ids, err)
		}
		if err := fs.Remove(ctx(t), "quiet"); err != nil {
			t.Fatalf("Remove: %v", err)
		}
		if err := fs.Remove(ctx(t), "quiet"); !errors.Is(err, client.ErrNotFound) {
			t.Fatalf("Remove again = %v, want ErrNotFound", err)
		}
		if _, err := fs.Deployed(ctx(t), "quiet"); !errors.Is(err, client.ErrNotFound) {
			t.Fatalf("Deployed(removed) = %v, want ErrNotFound", err)
		}
	})

	t.Run("errors", func(t *testing.T) {
		for _, tc := range []struct {
			name   string
			id     string
			target client.Target
			args   []any
			want   error
		}{
			{"unknown function", "Nope", client.Target{}, nil, client.ErrNotFound},
			{"unknown region", "RegionSize", client.Target{Region: "nope"}, nil, client.ErrNotFound},
			{"unknown member", "MemberInfo", client.Target{Members: []string{"m1", "zz"}}, nil, client.ErrNotFound},
			{"unknown group", "MemberInfo", client.Target{Groups: []string{"west"}}, nil, client.ErrNotFound},
			{"two targets", "MemberInfo", client.Target{Members: []string{"m1"}, Groups: []string{"east"}}, nil, client.ErrInvalid},
			{"data-aware without a region", "RegionSize", client.Target{}, nil, client.ErrInvalid},
			{"an object without @type", "MemberInfo", client.Target{}, []any{json.RawMessage(`{"a":1}`)}, client.ErrInvalidArgument},
			{"a nested member", "MemberInfo", client.Target{}, []any{map[string]any{"@type": "T", "a": map[string]int{"b": 1}}}, client.ErrInvalid},
			{"not an object", "MemberInfo", client.Target{}, []any{json.RawMessage(`[1]`)}, client.ErrInvalidArgument},
			{"a map without @type", "MemberInfo", client.Target{}, []any{map[string]any{"a": 1}}, client.ErrInvalidArgument},
			{"a comma in a member name", "MemberInfo", client.Target{Members: []string{"a,b"}}, nil, client.ErrInvalidArgument},
		} {
			if _, err := fs.Run(ctx(t), tc.id, tc.target, tc.args...); !errors.Is(err, tc.want) {
				t.Errorf("%s: Run = %v, want %v", tc.name, err, tc.want)
			}
		}
		var e *client.Error
		if _, err := fs.Deploy(ctx(t), client.Function{ID: "throws", Source: `function execute() { throw new Error("no"); }`}); err != nil {
			t.Fatal(err)
		}
		if _, err := fs.Run(ctx(t), "throws", client.Target{}); !errors.As(err, &e) || e.Status != http.StatusInternalServerError || !strings.Contains(e.Message, "no") {
			t.Errorf("Run(throws) = %v, want the API's 500 for a failed function", err)
		}
		if _, err := fs.Deploy(ctx(t), client.Function{ID: "broken", Source: "function execute( {"}); !errors.Is(err, client.ErrInvalid) {
			t.Errorf("Deploy(a script that does not compile) = %v, want ErrInvalid", err)
		}
		if _, err := fs.Deploy(ctx(t), client.Function{ID: "MemberInfo", Source: "function execute() {}"}); !errors.Is(err, client.ErrConflict) {
			t.Errorf("Deploy(a built-in's id) = %v, want ErrConflict", err)
		}
	})

	// A function call whose answer is lost is not sent again: it may have
	// run. A named query's run, a read, is.
	t.Run("outcome unknown", func(t *testing.T) {
		var sent atomic.Int32
		lossy := roundTripFunc(func(req *http.Request) (*http.Response, error) {
			resp, err := http.DefaultTransport.RoundTrip(req)
			if err != nil || !strings.Contains(req.URL.Path, "/functions/") && !strings.Contains(req.URL.Path, "/queries/") {
				return resp, err
			}
			if sent.Add(1) > 1 {
				return resp, err
			}
			resp.Body.Close()
			return nil, errors.New("connection reset by peer (the test's)")
		})
		lc, err := client.New(client.Config{Endpoints: []string{tc.Nodes["m1"].RESTURL()}, Transport: lossy, DisableSingleHop: true})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := lc.Functions().Run(ctx(t), "MemberInfo", client.Target{}); !errors.Is(err, client.ErrOutcomeUnknown) || sent.Load() != 1 {
			t.Fatalf("Run with its answer lost = %v after %d sends; want ErrOutcomeUnknown after 1", err, sent.Load())
		}
		if err := c.Queries().Create(ctx(t), "all", "SELECT * FROM /parts"); err != nil {
			t.Fatal(err)
		}
		sent.Store(0)
		if _, err := lc.Queries().Run(ctx(t), "all"); err != nil || sent.Load() != 2 {
			t.Fatalf("Queries.Run with its first answer lost = %v after %d sends; want it sent again", err, sent.Load())
		}
	})
}

// roundTripFunc is a function as an http.RoundTripper.
type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(req *http.Request) (*http.Response, error) { return f(req) }
