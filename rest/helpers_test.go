package rest

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/kvnode/kvnode/region"
)

// testServer is a Server behind a real HTTP listener, so tests see exactly
// what a client sees (status, headers, body).
type testServer struct {
	base  string // http://127.0.0.1:port
	store Store
	// user and password, when set, go with every request (security on).
	user, password string
}

// fixedMembers is a Members with a fixed list.
type fixedMembers []string

func (m fixedMembers) RESTURLs() []string { return slices.Clone(m) }

// newTestServer serves a Server over a fresh newTestStore.
func newTestServer(t *testing.T) *testServer {
	t.Helper()
	return serve(t, Config{}, newTestStore(t), fixedMembers{"http://10.0.0.2:8080", "http://10.0.0.1:8080"})
}

// serve starts a Server over st and members and stops it when the test
// ends. Every exchange is checked against the OpenAPI document
// (validated).
func serve(t *testing.T, cfg Config, st Store, members Members) *testServer {
	t.Helper()
	srv := httptest.NewServer(validated(t, New(cfg, st, members, nil).Handler()))
	t.Cleanup(srv.Close)
	return &testServer{base: srv.URL, store: st}
}

// serveUnchecked is serve without the OpenAPI check, for tests whose fake
// store answers what the real one never does (any error from a read), to
// test the error table rather than an endpoint.
func serveUnchecked(t *testing.T, cfg Config, st Store) *testServer {
	t.Helper()
	srv := httptest.NewServer(New(cfg, st, nil, nil).Handler())
	t.Cleanup(srv.Close)
	return &testServer{base: srv.URL, store: st}
}

// response is what a client got back.
type response struct {
	status int
	header http.Header
	body   string
}

// do sends one request. path may hold escapes (%2F stays %2F on the wire).
func (ts *testServer) do(t *testing.T, method, path, contentType, body string) response {
	t.Helper()
	u, err := url.Parse(ts.base + path)
	if err != nil {
		t.Fatalf("bad test URL %q: %v", path, err)
	}
	return ts.send(t, method, u, contentType, body)
}

// doRaw sends path verbatim as the request target, even when it is not a
// valid URL path, the way a careless client could.
func (ts *testServer) doRaw(t *testing.T, method, path string) response {
	t.Helper()
	u, err := url.Parse(ts.base)
	if err != nil {
		t.Fatal(err)
	}
	u.Opaque = path
	return ts.send(t, method, u, "", "")
}

func (ts *testServer) send(t *testing.T, method string, u *url.URL, contentType, body string) response {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, ts.base, rd)
	if err != nil {
		t.Fatalf("build request: %v", err)
	}
	req.URL = u // as built, even when it is not a valid URL
	if ts.user != "" {
		req.SetBasicAuth(ts.user, ts.password)
	}
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, u, err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("%s %s: read body: %v", method, u, err)
	}
	return response{status: resp.StatusCode, header: resp.Header, body: string(data)}
}

// mkRegion creates a region through the store and fills it; kv alternates
// keys and values.
func (ts *testServer) mkRegion(t *testing.T, name string, kind region.Kind, kv ...string) {
	t.Helper()
	ctx := context.Background()
	if err := ts.store.CreateRegion(ctx, region.Info{Name: name, Kind: kind}); err != nil {
		t.Fatalf("create region %s: %v", name, err)
	}
	if len(kv) == 0 {
		return
	}
	var entries []region.Entry
	for i := 0; i+1 < len(kv); i += 2 {
		entries = append(entries, region.Entry{Key: kv[i], Value: json.RawMessage(kv[i+1])})
	}
	if err := ts.store.Put(ctx, name, entries, region.TTL{}); err != nil {
		t.Fatalf("seed region %s: %v", name, err)
	}
}

// contents is a region's whole content as the API shows it: every value in
// key order and the keys (Content-Location). Tests compare it before and
// after a refused write.
func (ts *testServer) contents(t *testing.T, name string) string {
	t.Helper()
	r := ts.do(t, "GET", "/kv/v1/"+url.PathEscape(name)+"?limit=ALL", "", "")
	if r.status != http.StatusOK {
		t.Fatalf("GET region %s = %d %s, want 200", name, r.status, r.body)
	}
	return r.body + " @ " + r.header.Get("Content-Location")
}

// expect is what a row of an endpoint table wants back.
type expect struct {
	status int
	// body is the exact body. For an error (status ≥ 400) whose body is
	// {"cause":...}, leave it empty and set cause.
	body string
	// cause must appear in the {"cause":...} of an error answer.
	cause string
	// noBody: the answer has no body, even an error (HEAD).
	noBody bool
	// header lists headers and their exact values; "" means absent. {base}
	// in a value stands for the server's base URL.
	header map[string]string
}

// check compares r with e: status, body or error body, Content-Type, and
// the listed headers.
func (e expect) check(t *testing.T, ts *testServer, r response) {
	t.Helper()
	if r.status != e.status {
		t.Fatalf("status = %d, want %d (body %s)", r.status, e.status, r.body)
	}
	switch {
	case e.noBody:
		if r.body != "" {
			t.Errorf("body = %s, want none", r.body)
		}
	case e.status >= 400 && e.body == "":
		checkCause(t, r, e.cause)
	case r.body != e.body:
		t.Errorf("body = %s, want %s", r.body, e.body)
	}
	if r.body != "" {
		if ct := r.header.Get("Content-Type"); ct != contentTypeJSON {
			t.Errorf("Content-Type = %q, want %q", ct, contentTypeJSON)
		}
	}
	for name, want := range e.header {
		want = strings.ReplaceAll(want, "{base}", ts.base)
		got, present := r.header.Get(name), len(r.header.Values(name)) > 0
		if want == "" && present {
			t.Errorf("header %s = %q, want it absent", name, got)
		} else if got != want {
			t.Errorf("header %s = %q, want %q", name, got, want)
		}
	}
}

// checkCause checks an error body: exactly {"cause":"..."} containing want,
// with the JSON Content-Type.
func checkCause(t *testing.T, r response, want string) {
	t.Helper()
	if ct := r.header.Get("Content-Type"); ct != contentTypeJSON {
		t.Errorf("error Content-Type = %q, want %q", ct, contentTypeJSON)
	}
	dec := json.NewDecoder(bytes.NewReader([]byte(r.body)))
	dec.DisallowUnknownFields()
	var doc struct {
		Cause *string `json:"cause"`
	}
	if err := dec.Decode(&doc); err != nil || doc.Cause == nil || dec.More() {
		t.Fatalf(`error body = %s, want {"cause":"..."} (decode error: %v)`, r.body, err)
	}
	if *doc.Cause == "" || !strings.Contains(*doc.Cause, want) {
		t.Errorf("cause = %q, want it to contain %q", *doc.Cause, want)
	}
}

// apiCase is one request against a fresh region {r} and what it must
// answer. {r} in any string of the case stands for the region's name.
type apiCase struct {
	name     string
	kind     region.Kind // kind of {r}; "" is REPLICATE
	noRegion bool        // {r} is not created
	seed     []string    // entries of {r}: keys and values alternating

	method, path, ctype, body string

	want expect
	// refused: the request must leave {r} exactly as it was.
	refused bool
	// then: follow-up requests, e.g. reading back what a write stored.
	then []step
}

// step is a follow-up request and its expected answer.
type step struct {
	method, path string
	want         expect
}

// runCases runs each case in its own region of one server, so that the
// cases stay independent without a store per case (the real store takes a
// moment to start). A case that names no kind runs twice, on a replicated
// and on a partitioned region: every behaviour of rest-details.md that
// applies to both must hold for both.
func runCases(t *testing.T, cases []apiCase) {
	t.Helper()
	ts := newTestServer(t)
	var runs []apiCase
	for _, tc := range cases {
		if tc.kind != "" || tc.noRegion {
			runs = append(runs, tc)
			continue
		}
		for _, kind := range []region.Kind{region.Replicate, region.Partition} {
			c := tc
			c.kind = kind
			c.name = strings.ToLower(string(kind)) + "/" + tc.name
			runs = append(runs, c)
		}
	}
	for i, tc := range runs {
		t.Run(tc.name, func(t *testing.T) {
			name := fmt.Sprintf("r%d", i)
			sub := func(s string) string { return strings.ReplaceAll(s, "{r}", name) }
			if !tc.noRegion {
				ts.mkRegion(t, name, tc.kind, tc.seed...)
			}
			var before string
			if tc.refused {
				before = ts.contents(t, name)
			}
			r := ts.do(t, tc.method, sub(tc.path), tc.ctype, sub(tc.body))
			tc.want.substitute(sub).check(t, ts, r)
			if tc.refused {
				if after := ts.contents(t, name); after != before {
					t.Errorf("region after the refused request = %s, want it unchanged: %s", after, before)
				}
			}
			for _, st := range tc.then {
				r := ts.do(t, st.method, sub(st.path), "", "")
				st.want.substitute(sub).check(t, ts, r)
			}
		})
	}
}

// substitute applies sub to every string an expectation compares.
func (e expect) substitute(sub func(string) string) expect {
	out := e
	out.body = sub(e.body)
	if e.header != nil {
		out.header = map[string]string{}
		for k, v := range e.header {
			out.header[k] = sub(v)
		}
	}
	return out
}
