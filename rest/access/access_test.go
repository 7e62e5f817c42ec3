package access

import (
	"reflect"
	"testing"

	"github.com/kvnode/kvnode/auth"
)

func TestNeeds(t *testing.T) {
	read := auth.Permission{Resource: "DATA", Operation: "READ"}
	write := auth.Permission{Resource: "DATA", Operation: "WRITE"}
	at := func(p auth.Permission, region, key string) auth.Permission {
		p.Region, p.Key = region, key
		return p
	}
	for _, tc := range []struct {
		name string
		r    Route
		want []auth.Permission
	}{
		{"management", Route{Method: "POST", Pattern: "/management/v1/regions"}, []auth.Permission{{Resource: "CLUSTER", Operation: "MANAGE"}}},
		{"servers", Route{Method: "GET", Pattern: "/kv/v1/servers"}, []auth.Permission{{Resource: "CLUSTER", Operation: "READ"}}},
		{"metrics", Route{Method: "GET", Pattern: "/metrics"}, []auth.Permission{{Resource: "CLUSTER", Operation: "READ"}}},
		{"routing", Route{Method: "GET", Pattern: "/management/v1/routing"}, []auth.Permission{{Resource: "CLUSTER", Operation: "READ"}}},
		{"regions", Route{Method: "GET", Pattern: "/kv/v1"}, []auth.Permission{read}},
		{"delete a named query", Route{Method: "DELETE", Pattern: "/kv/v1/queries/:id"}, []auth.Permission{write}},
		{"run a named query: its handler", Route{Method: "POST", Pattern: "/kv/v1/queries/:id"}, nil},
		{"ad-hoc query: its handler", Route{Method: "GET", Pattern: "/kv/v1/queries/adhoc"}, nil},
		{"function: its handler", Route{Method: "POST", Pattern: "/kv/v1/functions/:id"}, nil},
		{"watch: its handler", Route{Method: "GET", Pattern: "/kv/v1/watch"}, nil},
		{"read a region", Route{Method: "GET", Pattern: "/kv/v1/:region", Region: "r", RegionOK: true}, []auth.Permission{at(read, "r", "")}},
		{"create at a key", Route{Method: "POST", Pattern: "/kv/v1/:region", Region: "r", RegionOK: true, Key: "k"}, []auth.Permission{at(write, "r", "k")}},
		{"a bad region name: the handler's 400", Route{Method: "GET", Pattern: "/kv/v1/:region"}, nil},
		{"put two keys", Route{Method: "PUT", Pattern: "/kv/v1/:region/:keys", Region: "r", RegionOK: true, Keys: []string{"a", "b"}}, []auth.Permission{at(write, "r", "a"), at(write, "r", "b")}},
		{"keys that do not parse", Route{Method: "GET", Pattern: "/kv/v1/:region/:keys", Region: "r", RegionOK: true}, []auth.Permission{at(read, "r", "")}},
	} {
		if got := Needs(tc.r); !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
	}
	if got := QueryNeeds([]string{"/a", "b"}); !reflect.DeepEqual(got, []auth.Permission{at(read, "a", ""), at(read, "b", "")}) {
		t.Errorf("QueryNeeds: %v", got)
	}
	if got := QueryNeeds(nil); !reflect.DeepEqual(got, []auth.Permission{read}) {
		t.Errorf("QueryNeeds of no region: %v", got)
	}
}
