// Package openapi owns the description of kvnode's HTTP API and its
// browser: the OpenAPI 3 document of every route of /kv/v1,
// /management/v1 and the probes (openapi.json, embedded, served by rest at
// /kv/v1/openapi.json), and Swagger UI (served by rest at /docs/), whose
// assets come embedded in the github.com/swaggest/swgui module: nothing is
// fetched from the internet when a page is shown.
//
// The document is written by hand, as JSON, because it is the contract a
// reader checks: every path, parameter, body, header and status. Package
// rest's tests keep it true: a test walks rest's router and fails on a
// route the document lacks or a path it documents that is not routed, and
// every request and answer of rest's tests is validated against it (with
// kin-openapi, in tests only: nothing of it is linked into kvnode). Edit
// the document with the routes, in the same commit.
//
// It must not import rest (which serves it), Echo, nor any package of
// kvnode: it is data and a page, not behaviour (imports_test.go checks).
package openapi
