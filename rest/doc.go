// Package rest is kvnode's HTTP API: Apache Geode's developer REST API under
// /kv/v1 (regions, entries, /servers, /ping), also served as /geode/v1, and
// region management under /management/v1/regions, served with Echo, with
// its OpenAPI document at /kv/v1/openapi.json and Swagger UI at /docs/.
//
// It owns the routes (all in routes.go), the handlers per resource
// (entries.go, management.go, cluster.go), the reading of paths, query
// parameters and bodies off the request (request.go), the way answers are
// written (response.go), and the one table that maps errors to HTTP
// statuses (errors.go). What a key list, a parameter's value or a body
// means, and which are refused, is decided by package rest/input, which
// knows no HTTP. The OpenAPI document and Swagger UI are package
// rest/openapi's; gzip both ways, CORS, request IDs and the /geode/v1
// alias are package rest/middleware's, which knows nothing of the API.
// rest declares the interfaces it calls, Store and Members
// (store.go); package store and package cluster implement them. Handlers
// are thin: parse and validate, make one Store call, write the answer. The
// semantics of put-if-absent, REPLACE, CAS and all-or-nothing multi-key
// writes belong to the store, which decides them inside the replicated
// state machine.
//
// Decisions worth knowing, beyond spec/rest-details.md:
//
//   - Routing uses the escaped path and decodes each path parameter exactly
//     once, so every key can be addressed: "a/b" as a%2Fb, "100%" as 100%25.
//     Decoding twice would make %2525 the key "%" instead of "%25".
//   - Stored values are raw JSON and go out byte for byte; answers that hold
//     several values are built by concatenation, never by re-marshalling, so
//     member order, 10.0 and 2^63−1 survive.
//   - Every JSON answer is "application/json; charset=utf-8" and every error
//     answer is {"cause":"..."}, including the router's own 404 and 405. A
//     500's cause is the chain of wrapped messages; a panic becomes a 500
//     whose stack goes to the log only.
//   - Every request carries a deadline (Config.RequestTimeout); when it
//     passes while the cluster has no leader, the answer is 503 with
//     Retry-After, never a hang.
//   - Names the API reserves under /kv/v1 (queries, functions, servers,
//     ping, watch) are never served as regions, even for methods their
//     fixed route lacks: such a request answers 405 or 404, not a region
//     operation.
//   - GET /kv/v1/watch (change streams) is package rest/watch's, in plain
//     net/http: rest routes it, checks DATA:READ on the region it watches,
//     and exempts it from the request deadline.
//   - GET /kv/v1/{region} sends Content-Location only when it returns at
//     least one value; an empty list has no keys to name.
//   - Region listings (GET /kv/v1/{region}?limit= and GET
//     /kv/v1/{region}/keys) are streamed from copy-on-write snapshots of the
//     groups' B-trees, merged in key order, through a 32 KiB buffer: a
//     node's memory does not grow with the region (package liststream). The bytes
//     are those of the whole answer built at once.
//   - Departure from rest-details.md: Content-Location names the listed
//     keys only while that URL's path (/kv/v1/{region}/k1,k2,...) is at
//     most MaxURLBytes (96 KiB), the longest request target this server
//     accepts; a longer one is left out. It is exact whenever present.
//     Naming a million keys would be a header of megabytes, which clients
//     refuse (curl stops at 100 KiB, Go at 10 MiB), and a URL no server
//     would serve. Deciding needs the keys before the body: the store peeks
//     at most 96 KiB of them from the same snapshots the body comes from.
//   - A listing that fails after its 200 and part of its body were sent (a
//     member serving part of a partitioned region dies, the deadline
//     passes) aborts the connection: the chunked body ends without its last
//     chunk, so the client sees an incomplete answer, never a well-formed
//     one that lacks entries. A listing, like every request, must finish
//     within the request deadline (--request-timeout): raise it to list
//     very large regions over slow links.
//   - GET /kv/v1/{region}/keys answers with Geode's Location:
//     <base>/kv/v1/{region}/keys.
//   - /geode/v1 is /kv/v1 under Geode's name: the path is rewritten before
//     routing, so routes, permissions and answers are /kv/v1's; the URLs
//     an answer names (Location, Content-Location) and the causes that
//     quote the path use the prefix the request used, so a Geode client
//     follows them without learning of /kv/v1. /management/v1 is Geode's
//     path too and has no alias.
//   - The OpenAPI document is the contract of every route: a test walks
//     the router against it, and every exchange of this package's tests
//     is validated against it (openapi_test.go). Change both together.
//     It and Swagger UI's page and assets need no credentials (they are
//     static); the calls Swagger UI makes need them like any other.
//   - The order of the middleware chain matters (New): the request ID is
//     given first and CORS answered next, before anything that can
//     answer, so that every answer, a 414 included, carries both;
//     compression wraps every writer of answers, error answers included;
//     request bodies are decoded (gzip) only for authenticated requests,
//     and the body size limit applies to the decoded bytes.
//   - Every log line this package writes for a request ends with its
//     request_id (X-Request-ID), so that a client's report can be found.
//   - GET /metrics serves the node's metrics (Config.Metrics, built by
//     package metrics) and needs CLUSTER:READ. Every routed request and
//     every refused login is reported to Config.Observer, which rest
//     declares and package metrics implements: requests under their route
//     template (c.Path(), never the path sent), so a key never becomes a
//     label.
package rest
