// Package access says which permissions each route of the API needs
// before its handler runs (docs/spec/rest-details.md, Security): a route
// and its parameters in, Geode's permissions out. It is pure: package rest
// reads the request and asks it.
//
// The permissions that depend on more than the route (the regions an OQL
// query reads, the one a function declares, the watched region) are the
// handlers' to check: for those routes Needs returns none.
//
// access must not import Echo, net/http's server side or any kvnode
// package but auth.
package access

import (
	"net/http"
	"strings"

	"github.com/kvnode/kvnode/auth"
)

// The APIs' path prefixes and the metrics' path, as routes are named.
const (
	KVPrefix         = "/kv/v1"
	ManagementPrefix = "/management/v1"
	MetricsPath      = "/metrics"
	// RoutingPath is the single-hop routing document (rest/routing).
	RoutingPath = ManagementPrefix + "/routing"
)

// Route is a request as far as its permissions depend on it.
type Route struct {
	Method string
	// Pattern is the route matched, as the router names it
	// ("/kv/v1/:region/:keys").
	Pattern string
	// Region is the :region parameter; RegionOK is false when it is
	// missing or not a valid name (the handler answers 400).
	Region   string
	RegionOK bool
	// Keys are the :keys parameter's keys, nil when they do not parse
	// (the region's permission is then asked, and the handler answers).
	Keys []string
	// Key is the ?key= of a POST that creates the entry at a given key.
	Key string
}

// Needs is what r needs before its handler runs.
func Needs(r Route) []auth.Permission {
	if r.Pattern == RoutingPath {
		// Who leads which group: what /kv/v1/servers shows, and more.
		return []auth.Permission{{Resource: "CLUSTER", Operation: "READ"}}
	}
	if strings.HasPrefix(r.Pattern, ManagementPrefix) {
		return []auth.Permission{{Resource: "CLUSTER", Operation: "MANAGE"}}
	}
	read := auth.Permission{Resource: "DATA", Operation: "READ"}
	write := auth.Permission{Resource: "DATA", Operation: "WRITE"}
	switch r.Pattern {
	case KVPrefix, KVPrefix + "/":
		return []auth.Permission{read}
	case KVPrefix + "/servers", MetricsPath:
		return []auth.Permission{{Resource: "CLUSTER", Operation: "READ"}}
	case KVPrefix + "/queries":
		return []auth.Permission{read}
	case KVPrefix + "/queries/adhoc":
		return nil // read on each region the query reads, in its handler
	case KVPrefix + "/queries/:id":
		switch r.Method {
		case http.MethodDelete:
			return []auth.Permission{write}
		case http.MethodPost:
			return nil // read on each region the query reads, in its handler
		}
		return []auth.Permission{read}
	case KVPrefix + "/functions":
		return []auth.Permission{read}
	case KVPrefix + "/functions/:id":
		return nil // the function's own permission, in its handler
	case KVPrefix + "/watch":
		return nil // read on the watched region, in its handler
	}
	if !r.RegionOK {
		return nil // the handler answers 400
	}
	op := read
	switch r.Method {
	case http.MethodPost, http.MethodPut, http.MethodDelete:
		op = write
	}
	op.Region = r.Region
	switch r.Pattern {
	case KVPrefix + "/:region":
		if r.Method == http.MethodPost && r.Key != "" {
			op.Key = r.Key
		}
		return []auth.Permission{op}
	case KVPrefix + "/:region/keys":
		return []auth.Permission{op}
	case KVPrefix + "/:region/:keys":
		if r.Keys == nil {
			return []auth.Permission{op}
		}
		out := make([]auth.Permission, len(r.Keys))
		for i, k := range r.Keys {
			out[i] = op
			out[i].Key = k
		}
		return out
	}
	return nil
}

// QueryNeeds is what a query that reads regions needs: read on each of
// them (DATA:READ itself for a query that names none).
func QueryNeeds(regions []string) []auth.Permission {
	if len(regions) == 0 {
		return []auth.Permission{{Resource: "DATA", Operation: "READ"}}
	}
	out := make([]auth.Permission, len(regions))
	for i, p := range regions {
		out[i] = auth.Permission{Resource: "DATA", Operation: "READ", Region: strings.TrimPrefix(p, "/")}
	}
	return out
}
