package rest

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers"

	"github.com/kvnode/kvnode/auth"
	"github.com/kvnode/kvnode/rest/openapi"
)

// This file keeps the OpenAPI document (package openapi) true to the
// server: TestOpenAPICoversEveryRoute compares it with the router, and
// validated, which every test server of this package goes through, checks
// each request the tests send and each answer they get against it.

// apiSpec is the document, loaded once per test binary.
var apiSpec = sync.OnceValues(func() (*openapi3.T, error) {
	return openapi3.NewLoader().LoadFromData(openapi.Document())
})

func loadSpec(tb testing.TB) *openapi3.T {
	tb.Helper()
	doc, err := apiSpec()
	if err != nil {
		tb.Fatalf("load the OpenAPI document: %v", err)
	}
	return doc
}

// undocumentedRoutes are served but are no part of the API: Swagger UI's
// and the console's pages and files (wildcards no OpenAPI path can name;
// the document's "/" says where the console is).
var undocumentedRoutes = map[string]bool{docsPath: true, docsPath + "/*": true, consolePath: true, consolePath + "/*": true}

// TestOpenAPICoversEveryRoute walks the router: every method of every
// route is an operation of the document, and every operation of the
// document is routed. The operations that need no credentials are exactly
// the open routes.
func TestOpenAPICoversEveryRoute(t *testing.T) {
	doc := loadSpec(t)
	s := New(Config{}, nil, nil, nil)
	routed := map[string]bool{}
	for _, r := range s.echo.Routes() {
		if undocumentedRoutes[r.Path] {
			continue
		}
		methods, ok := s.allow[r.Path]
		if !ok {
			t.Errorf("route %s %s is not registered through handle or fixed", r.Method, r.Path)
			continue
		}
		if !slices.Contains(methods, r.Method) {
			continue // fixed's catch-all, answering 405
		}
		routed[r.Method+" "+specPath(r.Path)] = true
		op := doc.Paths.Find(specPath(r.Path)).GetOperation(r.Method)
		if op == nil {
			t.Errorf("route %s %s is not in the OpenAPI document", r.Method, specPath(r.Path))
			continue
		}
		if noCredentials := op.Security != nil && len(*op.Security) == 0; noCredentials != open[r.Path] {
			t.Errorf("%s %s: the document says it needs no credentials: %v; the server: %v", r.Method, r.Path, noCredentials, open[r.Path])
		}
	}
	for path, item := range doc.Paths.Map() {
		for method := range item.Operations() {
			if !routed[method+" "+path] {
				t.Errorf("the OpenAPI document has %s %s, which is not routed", method, path)
			}
		}
	}
	if len(routed) < 40 {
		t.Errorf("only %d routes found: %v", len(routed), routed)
	}
}

// specPath writes an Echo route path as an OpenAPI one: /:region → /{region}.
func specPath(echoPath string) string {
	segs := strings.Split(echoPath, "/")
	for i, s := range segs {
		if name, ok := strings.CutPrefix(s, ":"); ok {
			segs[i] = "{" + name + "}"
		}
	}
	return strings.Join(segs, "/")
}

// TestOpenAPIServed: the document at /kv/v1/openapi.json and Swagger UI
// at /docs/ need no credentials even with security on; the UI points at
// the document.
func TestOpenAPIServed(t *testing.T) {
	srv := httptest.NewServer(validated(t, New(Config{Auth: auth.New(securityFile(t))}, nil, nil, nil).Handler()))
	t.Cleanup(srv.Close)
	ts := &testServer{base: srv.URL}
	r := ts.do(t, "GET", "/kv/v1/openapi.json", "", "")
	if r.status != 200 || r.header.Get("Content-Type") != contentTypeJSON || r.body != string(openapi.Document()) {
		t.Fatalf("GET /kv/v1/openapi.json = %d %s, %d bytes; want 200, the document", r.status, r.header.Get("Content-Type"), len(r.body))
	}
	expect{status: 405, cause: "POST", header: map[string]string{"Allow": "OPTIONS, GET"}}.
		check(t, ts, ts.do(t, "POST", "/kv/v1/openapi.json", ctJSON, `{}`))
	page := ts.do(t, "GET", "/docs/", "", "")
	if page.status != 200 || !strings.HasPrefix(page.header.Get("Content-Type"), "text/html") ||
		!strings.Contains(page.body, `"swaggerJsonUrl":"/kv/v1/openapi.json"`) {
		t.Fatalf("GET /docs/ = %d %s %.200s", page.status, page.header.Get("Content-Type"), page.body)
	}
	if css := ts.do(t, "GET", "/docs/swagger-ui.css", "", ""); css.status != 200 || !strings.HasPrefix(css.header.Get("Content-Type"), "text/css") {
		t.Errorf("GET /docs/swagger-ui.css = %d %s", css.status, css.header.Get("Content-Type"))
	}
	client := http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := client.Get(ts.base + "/docs")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusMovedPermanently || resp.Header.Get("Location") != "/docs/" {
		t.Errorf("GET /docs = %d Location %q, want 301 to /docs/", resp.StatusCode, resp.Header.Get("Location"))
	}
	// The API itself still needs credentials.
	fails(401, "credentials").check(t, ts, ts.do(t, "GET", "/kv/v1", "", ""))
}

// validated wraps a handler of this server so that every exchange is
// checked against the OpenAPI document, as a client reading the document
// would expect: a request the document calls valid may still be refused
// (the document cannot say everything a key or a query must be), but a
// request it calls invalid must be refused with a 4xx; and every answer's
// status, headers and body must be ones the document gives its operation.
// A path the document does not have must answer 404 (or 405, or 414).
func validated(tb testing.TB, h http.Handler) http.Handler {
	doc := loadSpec(tb)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ex := newExchange(doc, r)
		rec := &recorder{ResponseWriter: w, method: r.Method}
		aborted := true
		defer func() {
			if !aborted {
				if err := ex.check(rec); err != nil {
					tb.Errorf("OpenAPI: %s %s: %v", r.Method, r.URL.RequestURI(), err)
				}
			}
		}()
		h.ServeHTTP(rec, r)
		aborted = false // a panic (an aborted answer) has no answer to check
	})
}

// maxChecked bounds the bodies the validation keeps: a larger request or
// answer has its status and headers checked, not its body. It is small
// beside the answers of TestListingMemoryDoesNotGrowWithRegion, which
// measures the heap of the whole test process.
const maxChecked = 256 << 10

// exchange is one request, as the document sees it.
type exchange struct {
	doc *openapi3.T
	req *http.Request // a copy whose body is the request's, decoded
	// bodyTooLarge: the body is not checked, only the rest.
	bodyTooLarge bool
	path         string // the document's path; "" when none matches
	params       map[string]string
	// badParams: a path segment that is not validly escaped, which the
	// server refuses (400) before anything else.
	badParams bool
}

// newExchange reads the request's body (up to maxChecked, then puts it
// back for the server) and finds the document's path for its URL.
func newExchange(doc *openapi3.T, r *http.Request) *exchange {
	ex := &exchange{doc: doc}
	head, err := io.ReadAll(io.LimitReader(r.Body, maxChecked+1))
	if err != nil {
		head = nil
	}
	r.Body = struct {
		io.Reader
		io.Closer
	}{io.MultiReader(bytes.NewReader(head), r.Body), r.Body}
	body := head
	if len(head) > maxChecked {
		body = nil
	} else if r.Header.Get("Content-Encoding") == "gzip" {
		if zr, err := gzip.NewReader(bytes.NewReader(head)); err == nil {
			body, _ = io.ReadAll(io.LimitReader(zr, maxChecked+1))
		}
	}
	ex.req = r.Clone(context.Background())
	ex.req.Body = io.NopCloser(bytes.NewReader(body))
	ex.req.Header.Del("Content-Encoding")
	ex.bodyTooLarge = len(head) > maxChecked || len(body) > maxChecked

	// /geode/v1 is /kv/v1 (the document says so in words).
	escaped := r.URL.EscapedPath()
	if rest, ok := strings.CutPrefix(escaped, geodePrefix); ok && (rest == "" || rest[0] == '/') {
		escaped = kvPrefix + rest
	}
	ex.path, ex.params, ex.badParams = matchSpecPath(doc, escaped)
	return ex
}

// matchSpecPath finds the document's path for an escaped request path as
// Echo's router does: a literal segment wins over a parameter, from the
// left. Parameters are decoded once, as the server decodes them.
func matchSpecPath(doc *openapi3.T, escaped string) (path string, params map[string]string, bad bool) {
	segs := strings.Split(escaped, "/")
	var best []bool // literal-ness of each segment of the best match
	for tmpl := range doc.Paths.Map() {
		tsegs := strings.Split(tmpl, "/")
		if len(tsegs) != len(segs) {
			continue
		}
		lit := make([]bool, len(tsegs))
		match := true
		for i, ts := range tsegs {
			if strings.HasPrefix(ts, "{") {
				continue
			}
			lit[i] = true
			if ts != segs[i] {
				match = false
				break
			}
		}
		if match && (best == nil || slices.Compare(boolsToInts(lit), boolsToInts(best)) > 0) {
			best, path = lit, tmpl
		}
	}
	if path == "" {
		return "", nil, false
	}
	params = map[string]string{}
	for i, ts := range strings.Split(path, "/") {
		if name, ok := strings.CutPrefix(ts, "{"); ok {
			v, err := url.PathUnescape(segs[i])
			if err != nil {
				bad = true
			}
			params[strings.TrimSuffix(name, "}")] = v
		}
	}
	return path, params, bad
}

func boolsToInts(bs []bool) []int {
	out := make([]int, len(bs))
	for i, b := range bs {
		if b {
			out[i] = 1
		}
	}
	return out
}

// check validates the exchange once the answer is in rec.
func (ex *exchange) check(rec *recorder) error {
	status := rec.status
	if status == 0 {
		status = http.StatusOK
	}
	if status == statusClientClosedRequest || rec.broken {
		return nil // nobody received the answer
	}
	if status == http.StatusRequestURITooLong {
		return checkErrorBody(ex.doc, rec)
	}
	var op *openapi3.Operation
	var item *openapi3.PathItem
	if ex.path != "" {
		item = ex.doc.Paths.Find(ex.path)
		op = item.GetOperation(ex.req.Method)
	}
	if p := ex.req.URL.Path; op == nil && (p == docsPath || strings.HasPrefix(p, docsPath+"/") ||
		p == consolePath || strings.HasPrefix(p, consolePath+"/")) {
		return nil // Swagger UI and the console (undocumentedRoutes)
	}
	if op == nil {
		// Not an operation of the document: the router's 404, a 405 with
		// Allow, or an OPTIONS request's 204.
		switch {
		case status == http.StatusNotFound:
		case status == http.StatusMethodNotAllowed && rec.Header().Get("Allow") != "":
		case ex.req.Method == http.MethodOptions && status == http.StatusNoContent:
			return nil
		default:
			return fmt.Errorf("%s is not an operation of the document, but the answer is %d", ex.path, status)
		}
		return checkErrorBody(ex.doc, rec)
	}
	route := &routers.Route{Spec: ex.doc, Path: ex.path, PathItem: item, Method: ex.req.Method, Operation: op}
	in := &openapi3filter.RequestValidationInput{Request: ex.req, PathParams: ex.params, Route: route,
		Options: &openapi3filter.Options{AuthenticationFunc: openapi3filter.NoopAuthenticationFunc, ExcludeRequestBody: ex.bodyTooLarge}}
	reqErr := openapi3filter.ValidateRequest(context.Background(), in)
	if ex.badParams {
		reqErr = errors.New("a path segment is not validly escaped")
	}
	if reqErr != nil && (status < 400 || status >= 500) {
		return fmt.Errorf("the document calls the request invalid (%v), but the answer is %d", reqErr, status)
	}
	if op.Responses.Status(status) == nil {
		return fmt.Errorf("the answer's status %d is not one the document gives %s %s", status, route.Method, ex.path)
	}
	body, complete := rec.decodedBody()
	resp := op.Responses.Status(status).Value
	mayBeEmpty, _ := resp.Extensions["x-kvnode-may-be-empty"].(bool)
	// An event stream's body is checked by package watch's tests, with an
	// EventSource's parsing rules; OpenAPI describes it in words.
	events := strings.HasPrefix(rec.Header().Get("Content-Type"), "text/event-stream")
	out := &openapi3filter.ResponseValidationInput{RequestValidationInput: in, Status: status, Header: rec.Header(),
		Options: &openapi3filter.Options{IncludeResponseStatus: true,
			ExcludeResponseBody: !complete || mayBeEmpty && len(body) == 0 || events}}
	out.SetBodyBytes(body)
	if err := openapi3filter.ValidateResponse(context.Background(), out); err != nil {
		return fmt.Errorf("answer %d: %v", status, err)
	}
	if len(body) > 0 && len(resp.Content) == 0 {
		return fmt.Errorf("answer %d has a body, but the document gives it none: %.200s", status, body)
	}
	return nil
}

// checkErrorBody: an answer outside the document's operations is still a
// JSON error body.
func checkErrorBody(doc *openapi3.T, rec *recorder) error {
	body, complete := rec.decodedBody()
	if !complete || rec.method == http.MethodHead {
		return nil
	}
	var v any
	if err := json.Unmarshal(body, &v); err != nil {
		return fmt.Errorf("answer %d: the body is not JSON: %.200s", rec.status, body)
	}
	if err := doc.Components.Schemas["Error"].Value.VisitJSON(v); err != nil {
		return fmt.Errorf("answer %d: not an error body: %v", rec.status, err)
	}
	return nil
}

// recorder passes an answer through and keeps its status and the start of
// its body.
type recorder struct {
	http.ResponseWriter
	method string
	status int
	body   bytes.Buffer
	over   bool // the body is longer than maxChecked: not kept
	broken bool // a write failed: the client did not get the answer
}

func (r *recorder) WriteHeader(code int) {
	if r.status == 0 && code >= 200 {
		r.status = code
	}
	r.ResponseWriter.WriteHeader(code)
}

func (r *recorder) Write(p []byte) (int, error) {
	if r.status == 0 {
		r.status = http.StatusOK
	}
	if !r.over {
		if r.body.Len()+len(p) > maxChecked {
			r.over = true
			r.body = bytes.Buffer{}
		} else {
			r.body.Write(p)
		}
	}
	n, err := r.ResponseWriter.Write(p)
	if err != nil {
		r.broken = true
	}
	return n, err
}

func (r *recorder) Flush() { _ = http.NewResponseController(r.ResponseWriter).Flush() }

func (r *recorder) Unwrap() http.ResponseWriter { return r.ResponseWriter }

// decodedBody is the answer's body as the client reads it (gzip decoded),
// and whether all of it was kept.
func (r *recorder) decodedBody() ([]byte, bool) {
	if r.over {
		return nil, false
	}
	if r.Header().Get("Content-Encoding") != "gzip" {
		return r.body.Bytes(), true
	}
	zr, err := gzip.NewReader(bytes.NewReader(r.body.Bytes()))
	if err != nil {
		return nil, false
	}
	b, err := io.ReadAll(io.LimitReader(zr, maxChecked+1))
	if err != nil || len(b) > maxChecked {
		return nil, false
	}
	return b, true
}
