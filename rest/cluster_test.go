package rest

import (
	"context"
	"fmt"
	"net/http/httptest"
	"testing"

	"github.com/kvnode/kvnode/region"
)

func TestPingAndServers(t *testing.T) {
	ts := newTestServer(t)
	for _, tc := range []struct {
		name, method, path string
		want               expect
	}{
		{"ping", "GET", "/kv/v1/ping", expect{status: 200, header: map[string]string{"Content-Type": ""}}},
		{"ping HEAD", "HEAD", "/kv/v1/ping", expect{status: 200, noBody: true}},
		{"ping POST", "POST", "/kv/v1/ping", expect{status: 405, cause: "POST", header: map[string]string{"Allow": "OPTIONS, GET, HEAD"}}},
		{"ping DELETE", "DELETE", "/kv/v1/ping", expect{status: 405, cause: "DELETE", header: map[string]string{"Allow": "OPTIONS, GET, HEAD"}}},
		{"servers sorted", "GET", "/kv/v1/servers",
			ok(`["http://10.0.0.1:8080","http://10.0.0.2:8080"]`, map[string]string{"Location": "{base}/kv/v1/servers"})},
		{"servers POST", "POST", "/kv/v1/servers", expect{status: 405, cause: "POST", header: map[string]string{"Allow": "OPTIONS, GET"}}},
		{"servers HEAD", "HEAD", "/kv/v1/servers", expect{status: 405, noBody: true, header: map[string]string{"Allow": "OPTIONS, GET"}}},
		{"servers DELETE", "DELETE", "/kv/v1/servers", expect{status: 405, cause: "DELETE", header: map[string]string{"Allow": "OPTIONS, GET"}}},
		{"servers OPTIONS", "OPTIONS", "/kv/v1/servers", expect{status: 204, header: map[string]string{"Allow": "OPTIONS, GET"}}},
		{"below servers", "GET", "/kv/v1/servers/x", fails(404, "/kv/v1/servers/x")},
		{"queries is not a region", "GET", "/kv/v1/queries", ok(`{"queries":[]}`, map[string]string{"Location": "{base}/kv/v1/queries"})},
		{"functions is not a region", "GET", "/kv/v1/functions", fails(404, "/kv/v1/functions")},
		{"queries keys is a named query, not a region's keys", "GET", "/kv/v1/queries/keys",
			expect{status: 405, cause: "GET", header: map[string]string{"Allow": "OPTIONS, DELETE, POST, PUT"}}},
		{"readyz", "GET", "/readyz", expect{status: 200, noBody: true}},
		{"readyz HEAD", "HEAD", "/readyz", expect{status: 200, noBody: true}},
		{"livez", "GET", "/livez", expect{status: 200, noBody: true}},
		{"livez HEAD", "HEAD", "/livez", expect{status: 200, noBody: true}},
		{"no route", "GET", "/nothing/here", fails(404, "GET /nothing/here")},
		{"no route HEAD", "HEAD", "/nothing/here", expect{status: 404, noBody: true}},
		{"region with trailing slash", "GET", "/kv/v1/orders/", fails(404, "/kv/v1/orders/")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.want.check(t, ts, ts.do(t, tc.method, tc.path, "", ""))
		})
	}
}

func TestServersEmpty(t *testing.T) {
	for name, members := range map[string]Members{"no members": fixedMembers{}, "nil Members": nil} {
		t.Run(name, func(t *testing.T) {
			ts := serve(t, Config{}, newTestStore(t), members)
			ok(`[]`, map[string]string{"Location": "{base}/kv/v1/servers"}).check(t, ts, ts.do(t, "GET", "/kv/v1/servers", "", ""))
		})
	}
}

// fixedCluster is a ClusterInfo with fixed answers.
type fixedCluster struct {
	view  ClusterView
	parts PartitionsView
	err   error
}

func (f fixedCluster) ClusterView(context.Context) (ClusterView, error) { return f.view, f.err }
func (f fixedCluster) PartitionsView(context.Context) (PartitionsView, error) {
	return f.parts, f.err
}

func TestClusterView(t *testing.T) {
	view := ClusterView{Leader: "n0", Term: 4, Members: []MemberView{
		{Name: "n0", RESTURL: "http://10.0.0.1:8080", Status: "alive", Suffrage: "voter", Groups: []string{"east"}},
		{Name: "n1", Status: "failed", Suffrage: "nonvoter"},
	}}
	st := newTestStore(t)
	srv := httptest.NewServer(validated(t, New(Config{}, st, nil, fixedCluster{view: view}).Handler()))
	t.Cleanup(srv.Close)
	ts := &testServer{base: srv.URL, store: st}
	ok(`{"leader":"n0","term":4,"members":[{"name":"n0","restUrl":"http://10.0.0.1:8080","groups":["east"],"status":"alive","suffrage":"voter"},`+
		`{"name":"n1","groups":[],"status":"failed","suffrage":"nonvoter"}]}`, nil).check(t, ts, ts.do(t, "GET", "/management/v1/cluster", "", ""))

	failing := httptest.NewServer(validated(t, New(Config{}, st, nil, fixedCluster{err: fmt.Errorf("read configuration: %w", region.ErrNoLeader)}).Handler()))
	t.Cleanup(failing.Close)
	fts := &testServer{base: failing.URL, store: st}
	expect{status: 503, cause: "no leader", header: map[string]string{"Retry-After": "1"}}.check(t, fts, fts.do(t, "GET", "/management/v1/cluster", "", ""))

	// Without a ClusterInfo the endpoint does not exist.
	plain := newTestServer(t)
	fails(404, "/management/v1/cluster").check(t, plain, plain.do(t, "GET", "/management/v1/cluster", "", ""))
}

func TestPartitionsView(t *testing.T) {
	parts := PartitionsView{PartitionGroups: 2, ReplicationFactor: 3, Buckets: 113, Groups: []PartitionView{
		{Group: 1, Buckets: []int{0, 2}, Members: []string{"a", "b"}, Leader: "a", Term: 3, AppliedIndex: 7, Voters: []string{"a", "b"}},
		{Group: 2, Buckets: []int{1}, Members: []string{"b"}},
	}}
	st := newTestStore(t)
	srv := httptest.NewServer(validated(t, New(Config{}, st, nil, fixedCluster{parts: parts}).Handler()))
	t.Cleanup(srv.Close)
	ts := &testServer{base: srv.URL, store: st}
	ok(`{"partitionGroups":2,"replicationFactor":3,"buckets":113,"groups":[`+
		`{"group":1,"buckets":[0,2],"members":["a","b"],"leader":"a","term":3,"appliedIndex":7,"voters":["a","b"],"nonVoters":[]},`+
		`{"group":2,"buckets":[1],"members":["b"],"leader":"","term":0,"appliedIndex":0,"voters":[],"nonVoters":[]}]}`, nil).
		check(t, ts, ts.do(t, "GET", "/management/v1/partitions", "", ""))
	plain := newTestServer(t)
	fails(404, "/management/v1/partitions").check(t, plain, plain.do(t, "GET", "/management/v1/partitions", "", ""))
}
