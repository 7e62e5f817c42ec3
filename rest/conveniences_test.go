package rest

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"regexp"
	"runtime/debug"
	"strings"
	"testing"
	"time"

	"github.com/kvnode/kvnode/auth"
	"github.com/kvnode/kvnode/region"
)

// The HTTP conveniences of issue 20 as a client sees them: gzip both
// ways, CORS, request IDs.

// wire sends a request with the given headers and returns the answer as
// it came over the wire: Go's client neither asks for gzip nor decodes it.
func (ts *testServer) wire(t *testing.T, method, path string, header http.Header, body []byte) (*http.Response, []byte) {
	t.Helper()
	req, err := http.NewRequest(method, ts.base+path, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if body == nil {
		req.Body = http.NoBody
	}
	for k, vs := range header {
		req.Header[http.CanonicalHeaderKey(k)] = vs
	}
	if ts.user != "" {
		req.SetBasicAuth(ts.user, ts.password)
	}
	resp, err := (&http.Transport{DisableCompression: true}).RoundTrip(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("%s %s: read the body: %v", method, path, err)
	}
	return resp, raw
}

// gunzipped decodes a gzip body, failing the test if it is not one.
func gunzipped(t *testing.T, raw []byte) string {
	t.Helper()
	zr, err := gzip.NewReader(bytes.NewReader(raw))
	if err != nil {
		t.Fatalf("the body is not gzip: %v", err)
	}
	b, err := io.ReadAll(zr)
	if err != nil {
		t.Fatalf("the gzip body is corrupt: %v", err)
	}
	return string(b)
}

func gzipBytes(t *testing.T, s string) []byte {
	t.Helper()
	var b bytes.Buffer
	zw := gzip.NewWriter(&b)
	if _, err := zw.Write([]byte(s)); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

var gzipAccepted = http.Header{"Accept-Encoding": {"gzip"}}

// TestGzipAnswers: with Accept-Encoding: gzip every answer of at least
// 1 KiB is compressed, and decodes to exactly the plain answer (errors
// included); shorter answers (an entry, an error) and answers without a
// body go as they are; without the header nothing changes.
func TestGzipAnswers(t *testing.T) {
	ts := newTestServer(t)
	kv := []string{"1", `{"n":1,"p":10.0}`, "2", `{"n":2,"big":9223372036854775807}`}
	for i := 3; i <= 100; i++ {
		kv = append(kv, fmt.Sprintf("order-key-%03d", i), fmt.Sprintf(`{"n":%d,"name":"order %d"}`, i, i))
	}
	ts.mkRegion(t, "orders", region.Partition, kv...)
	compressed := 0
	for _, path := range []string{"/kv/v1/orders?limit=ALL", "/kv/v1/orders/keys", "/kv/v1/orders/1", "/kv/v1/orders/1,2", "/kv/v1",
		"/management/v1/regions", "/kv/v1/queries/adhoc?q=SELECT+o.n,+o.name+FROM+%2Forders+o+ORDER+BY+o.n", "/kv/v1/nope/1", "/kv/v1/orders/1?consistency=x"} {
		plainResp, plain := ts.wire(t, "GET", path, nil, nil)
		resp, raw := ts.wire(t, "GET", path, gzipAccepted, nil)
		if len(plain) >= 1024 {
			compressed++
			if resp.Header.Get("Content-Encoding") != "gzip" || gunzipped(t, raw) != string(plain) || resp.StatusCode != plainResp.StatusCode {
				t.Errorf("GET %s with gzip (%d bytes plain): %d, Content-Encoding %q, same body as plain: %v", path, len(plain), resp.StatusCode, resp.Header.Get("Content-Encoding"), gunzipped(t, raw) == string(plain))
			}
		} else if resp.Header.Get("Content-Encoding") != "" || string(raw) != string(plain) || resp.StatusCode != plainResp.StatusCode {
			t.Errorf("GET %s with gzip (%d bytes plain): %d, Content-Encoding %q; want it as it is", path, len(plain), resp.StatusCode, resp.Header.Get("Content-Encoding"))
		}
		if plainResp.Header.Get("Content-Encoding") != "" {
			t.Errorf("GET %s without Accept-Encoding: Content-Encoding %q", path, plainResp.Header.Get("Content-Encoding"))
		}
		for _, h := range []string{"Content-Type", "Content-Location", "Location"} {
			if resp.Header.Get(h) != plainResp.Header.Get(h) {
				t.Errorf("GET %s: %s %q with gzip, %q without", path, h, resp.Header.Get(h), plainResp.Header.Get(h))
			}
		}
		if !strings.Contains(strings.Join(resp.Header.Values("Vary"), ","), "Accept-Encoding") {
			t.Errorf("GET %s: Vary %q, want Accept-Encoding in it", path, resp.Header.Values("Vary"))
		}
	}
	if compressed < 3 {
		t.Errorf("only %d of the answers were long enough to be compressed: the test checks too little", compressed)
	}
	if resp, raw := ts.wire(t, "HEAD", "/kv/v1/orders", gzipAccepted, nil); resp.Header.Get("Content-Encoding") != "" || len(raw) != 0 || resp.Header.Get("Resource-Count") != "100" {
		t.Errorf("HEAD with gzip: Content-Encoding %q, %d bytes, Resource-Count %q", resp.Header.Get("Content-Encoding"), len(raw), resp.Header.Get("Resource-Count"))
	}
	resp, raw := ts.wire(t, "POST", "/kv/v1/orders?key=3", http.Header{"Accept-Encoding": {"gzip"}, "Content-Type": {"application/json"}}, []byte(`{"n":3}`))
	if resp.StatusCode != 201 || resp.Header.Get("Content-Encoding") != "" || len(raw) != 0 || resp.Header.Get("Location") != ts.base+"/kv/v1/orders/3" {
		t.Errorf("POST with gzip: %d, Content-Encoding %q, %d bytes, Location %q", resp.StatusCode, resp.Header.Get("Content-Encoding"), len(raw), resp.Header.Get("Location"))
	}
	// A client that refuses gzip gets plain answers.
	if resp, raw := ts.wire(t, "GET", "/kv/v1/orders/1", http.Header{"Accept-Encoding": {"gzip;q=0, identity"}}, nil); resp.Header.Get("Content-Encoding") != "" || string(raw) != `{"n":1,"p":10.0}` {
		t.Errorf("gzip;q=0: Content-Encoding %q, body %s", resp.Header.Get("Content-Encoding"), raw)
	}
}

// TestGzipListingStreams: a large listing asked for with gzip is streamed
// compressed (chunked, no Content-Length) and decodes to the exact
// answer, while the node's heap rises by far less than the answer.
func TestGzipListingStreams(t *testing.T) {
	const n = 200_000
	st := newTestStore(t)
	ts := serve(t, Config{RequestTimeout: 2 * time.Minute}, st, nil)
	keysSize, allSize := bigRegion(t, st, "big", region.Partition, n)
	// A first listing, not measured, so that what the first one sets up
	// once (and the load's aftermath) is not counted.
	if resp, _ := ts.wire(t, "GET", "/kv/v1/big/keys", gzipAccepted, nil); resp.StatusCode != 200 {
		t.Fatalf("warm-up listing: %d", resp.StatusCode)
	}
	defer debug.SetGCPercent(debug.SetGCPercent(1))
	for _, tc := range []struct {
		path string
		want int64
	}{{"/kv/v1/big/keys", keysSize}, {"/kv/v1/big?limit=ALL", allSize}} {
		path, want := tc.path, tc.want
		var got, wire int64
		var encoding string
		var chunked bool
		growth := peakHeap(func() {
			req, _ := http.NewRequest("GET", ts.base+path, nil)
			req.Header.Set("Accept-Encoding", "gzip")
			resp, err := (&http.Transport{DisableCompression: true}).RoundTrip(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			encoding, chunked = resp.Header.Get("Content-Encoding"), resp.ContentLength == -1
			counted := &countingReader{r: resp.Body}
			zr, err := gzip.NewReader(counted)
			if err != nil {
				t.Fatal(err)
			}
			if got, err = io.Copy(io.Discard, zr); err != nil {
				t.Fatalf("GET %s: %v", path, err)
			}
			wire = counted.n
		})
		t.Logf("GET %s: %.1f MiB, %.2f MiB on the wire, heap rose %.2f MiB", path, float64(got)/(1<<20), float64(wire)/(1<<20), float64(growth)/(1<<20))
		if encoding != "gzip" || !chunked || got != want {
			t.Errorf("GET %s: Content-Encoding %q, streamed %v, %d bytes decoded, want gzip, streamed, %d", path, encoding, chunked, got, want)
		}
		if limit := uint64(want / 4); growth > limit {
			t.Errorf("GET %s: the heap rose %.1f MiB for an answer of %.1f MiB", path, float64(growth)/(1<<20), float64(want)/(1<<20))
		}
	}
}

type countingReader struct {
	r io.Reader
	n int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	return n, err
}

// TestGzipListingAbort: a listing that fails after its answer began
// aborts the connection with gzip too: the compressed stream and the HTTP
// body both end incomplete, never as a well-formed answer.
func TestGzipListingAbort(t *testing.T) {
	st := newTestStore(t)
	ctx := context.Background()
	if err := st.CreateRegion(ctx, region.Info{Name: "r", Kind: region.Replicate}); err != nil {
		t.Fatal(err)
	}
	var kv []region.Entry
	for i := range 5000 {
		kv = append(kv, region.Entry{Key: fmt.Sprintf("k%05d", i), Value: json.RawMessage(fmt.Sprintf(`{"i":%d}`, i))})
	}
	if err := st.Put(ctx, "r", kv, region.TTL{}); err != nil {
		t.Fatal(err)
	}
	ts := serve(t, Config{}, brokenListings{Store: st, after: 4000}, nil)
	for _, path := range []string{"/kv/v1/r?limit=ALL", "/kv/v1/r/keys"} {
		req, _ := http.NewRequest("GET", ts.base+path, nil)
		req.Header.Set("Accept-Encoding", "gzip")
		resp, err := (&http.Transport{DisableCompression: true}).RoundTrip(req)
		if err != nil {
			continue // cut before the header: incomplete, as it must be
		}
		raw, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err == nil {
			t.Errorf("GET %s: the HTTP body of %d bytes ended well", path, len(raw))
		}
		if resp.Header.Get("Content-Encoding") != "gzip" {
			t.Errorf("GET %s: Content-Encoding %q", path, resp.Header.Get("Content-Encoding"))
		}
		zr, err := gzip.NewReader(bytes.NewReader(raw))
		if err != nil {
			continue
		}
		data, err := io.ReadAll(zr)
		if err == nil || json.Valid(data) {
			t.Errorf("GET %s: the gzip stream decoded completely (%v) or to valid JSON (%v)", path, err == nil, json.Valid(data))
		}
	}
}

// TestGzipRequestBodies: bodies sent with Content-Encoding: gzip are
// accepted wherever a JSON body is; a corrupt one is a 400, another coding
// a 415, and the body limit applies to the decoded size (a zip bomb is a
// 413): none of them changes anything.
func TestGzipRequestBodies(t *testing.T) {
	st := newTestStore(t)
	ts := serve(t, Config{MaxBodyBytes: 1 << 20}, st, nil)
	ts.mkRegion(t, "r", region.Replicate, "k0", `{"v":0}`)
	gz := func() http.Header {
		return http.Header{"Content-Type": {"application/json"}, "Content-Encoding": {"gzip"}}
	}
	for _, tc := range []struct {
		method, path, body string
		status             int
	}{
		{"PUT", "/kv/v1/r/k1", `{"v":1,"p":10.0}`, 200},
		{"POST", "/kv/v1/r?key=k2", `{"v":2}`, 201},
		{"PUT", "/kv/v1/r/k3,k4", `[{"v":3},{"v":4}]`, 200},
		{"PUT", "/kv/v1/r/k1?op=CAS", `{"@old":{"v":1,"p":10.0},"@new":{"v":11}}`, 200},
		{"POST", "/management/v1/regions", `{"name":"r2","type":"REPLICATE"}`, 201},
	} {
		if resp, raw := ts.wire(t, tc.method, tc.path, gz(), gzipBytes(t, tc.body)); resp.StatusCode != tc.status {
			t.Errorf("%s %s with a gzip body = %d %s, want %d", tc.method, tc.path, resp.StatusCode, raw, tc.status)
		}
	}
	ok(`{"r":[{"v":0},{"v":11},{"v":2},{"v":3},{"v":4}]}`, nil).check(t, ts, ts.do(t, "GET", "/kv/v1/r/k0,k1,k2,k3,k4", "", ""))

	before := ts.contents(t, "r")
	// Nearly 1 MiB decoded is within the limit; 4 MiB is not, though it
	// is 4 KiB on the wire.
	within := `{"pad":"` + strings.Repeat("a", 1<<20-100) + `"}`
	bomb := `{"pad":"` + strings.Repeat("a", 4<<20) + `"}`
	if b := gzipBytes(t, bomb); len(b) > 64<<10 {
		t.Fatalf("the bomb is %d bytes compressed", len(b))
	}
	for _, tc := range []struct {
		name   string
		header http.Header
		body   []byte
		status int
		cause  string
	}{
		{"corrupt", gz(), []byte("not gzip at all"), 400, "not valid gzip"},
		{"truncated", gz(), gzipBytes(t, `{"v":9}`)[:15], 400, "not valid gzip"},
		{"zip bomb", gz(), gzipBytes(t, bomb), 413, "larger than 1048576 bytes"},
		{"brotli", http.Header{"Content-Type": {"application/json"}, "Content-Encoding": {"br"}}, []byte(`{"v":9}`), 415, `Content-Encoding "br"`},
		{"gzip, not JSON", http.Header{"Content-Type": {"text/plain"}, "Content-Encoding": {"gzip"}}, gzipBytes(t, `{"v":9}`), 415, "text/plain"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp, raw := ts.wire(t, "PUT", "/kv/v1/r/k9", tc.header, tc.body)
			checkCause(t, response{status: resp.StatusCode, header: resp.Header, body: string(raw)}, tc.cause)
			if resp.StatusCode != tc.status {
				t.Errorf("status %d, want %d (%s)", resp.StatusCode, tc.status, raw)
			}
		})
	}
	if after := ts.contents(t, "r"); after != before {
		t.Errorf("refused gzip bodies changed the region: %s", after)
	}
	if resp, raw := ts.wire(t, "PUT", "/kv/v1/r/kw", gz(), gzipBytes(t, within)); resp.StatusCode != 200 {
		t.Errorf("a gzip body within the limit once decoded = %d %s", resp.StatusCode, raw)
	}
}

// TestCORS: off by default; with --cors-origins a page from a listed
// origin can call the API (its preflight needs no credentials, its
// answers, errors included, carry the CORS headers and expose Location
// and X-Request-ID); a page from another origin cannot.
func TestCORS(t *testing.T) {
	st := newTestStore(t)
	const origin = "https://console.example.com"
	off := serve(t, Config{}, st, nil)
	off.mkRegion(t, "orders", region.Replicate, "1", `{"n":1}`)
	if resp, _ := off.wire(t, "GET", "/kv/v1/orders/1", http.Header{"Origin": {origin}}, nil); resp.Header.Get("Access-Control-Allow-Origin") != "" {
		t.Errorf("CORS is on by default: %v", resp.Header)
	}
	if resp, _ := off.wire(t, "OPTIONS", "/kv/v1/orders/1", http.Header{"Origin": {origin}, "Access-Control-Request-Method": {"PUT"}}, nil); resp.Header.Get("Access-Control-Allow-Origin") != "" || resp.Header.Get("Allow") == "" {
		t.Errorf("a preflight with CORS off: %v, want the plain OPTIONS answer", resp.Header)
	}

	a := auth.New(securityFile(t))
	srv := httptest.NewServer(validated(t, New(Config{Auth: a, CORSOrigins: []string{origin}}, st, nil, nil).Handler()))
	t.Cleanup(srv.Close)
	anon := &testServer{base: srv.URL, store: st}
	admin := &testServer{base: srv.URL, store: st, user: "admin", password: "admin-pw"}

	pre := http.Header{"Origin": {origin}, "Access-Control-Request-Method": {"PUT"}, "Access-Control-Request-Headers": {"authorization, content-type"}}
	resp, raw := anon.wire(t, "OPTIONS", "/kv/v1/orders/1", pre, nil)
	if resp.StatusCode != 204 || len(raw) != 0 || resp.Header.Get("Access-Control-Allow-Origin") != origin ||
		!strings.Contains(resp.Header.Get("Access-Control-Allow-Methods"), "PUT") ||
		!strings.Contains(resp.Header.Get("Access-Control-Allow-Headers"), "Authorization") {
		t.Errorf("preflight without credentials: %d %v", resp.StatusCode, resp.Header)
	}
	resp, raw = admin.wire(t, "PUT", "/kv/v1/orders/1", http.Header{"Origin": {origin}, "Content-Type": {"application/json"}}, []byte(`{"n":2}`))
	if resp.StatusCode != 200 || resp.Header.Get("Access-Control-Allow-Origin") != origin {
		t.Errorf("PUT from the origin: %d %s %v", resp.StatusCode, raw, resp.Header)
	}
	resp, _ = admin.wire(t, "POST", "/kv/v1/orders?key=2", http.Header{"Origin": {origin}, "Content-Type": {"application/json"}}, []byte(`{"n":2}`))
	expose := resp.Header.Get("Access-Control-Expose-Headers")
	if resp.StatusCode != 201 || !strings.Contains(expose, "Location") || !strings.Contains(expose, "X-Request-ID") || resp.Header.Get("Access-Control-Allow-Credentials") != "" {
		t.Errorf("POST from the origin: %d, expose %q, %v", resp.StatusCode, expose, resp.Header)
	}
	// The page can read why it was refused.
	resp, raw = anon.wire(t, "GET", "/kv/v1/orders/1", http.Header{"Origin": {origin}}, nil)
	if resp.StatusCode != 401 || resp.Header.Get("Access-Control-Allow-Origin") != origin {
		t.Errorf("401 from the origin: %d %s %v", resp.StatusCode, raw, resp.Header)
	}
	resp, _ = anon.wire(t, "GET", "/kv/v1/orders/"+strings.Repeat("k", MaxURLBytes), http.Header{"Origin": {origin}}, nil)
	if resp.StatusCode != 414 || resp.Header.Get("Access-Control-Allow-Origin") != origin {
		t.Errorf("414 from the origin: %d %v", resp.StatusCode, resp.Header)
	}
	for _, method := range []string{"GET", "OPTIONS"} {
		h := http.Header{"Origin": {"https://evil.example.com"}, "Access-Control-Request-Method": {"GET"}}
		if resp, _ := admin.wire(t, method, "/kv/v1/orders/1", h, nil); resp.Header.Get("Access-Control-Allow-Origin") != "" {
			t.Errorf("%s from another origin: %v", method, resp.Header)
		}
	}
}

// TestRequestIDs: a client's X-Request-ID comes back and is in the log
// lines of its request; without one (or with one that is not 1 to 128
// visible characters) the node makes one.
func TestRequestIDs(t *testing.T) {
	var logs syncBuffer
	logger := slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	st := fakeStore{get: func(context.Context) ([]json.RawMessage, error) {
		return nil, errors.New("disk on fire")
	}}
	ts := serve(t, Config{Logger: logger}, st, nil)

	resp, _ := ts.wire(t, "GET", "/kv/v1/orders/k", http.Header{"X-Request-ID": {"trace-42.a"}}, nil)
	if resp.StatusCode != 500 || resp.Header.Get("X-Request-ID") != "trace-42.a" {
		t.Fatalf("answer %d, X-Request-ID %q", resp.StatusCode, resp.Header.Get("X-Request-ID"))
	}
	log := logs.String()
	for _, line := range []string{`level=WARN msg="request failed"`, `level=DEBUG msg=request method=GET path=/kv/v1/orders/k status=500`} {
		if !regexp.MustCompile(regexp.QuoteMeta(line) + `.* request_id=trace-42\.a\n`).MatchString(log) {
			t.Errorf("no log line %s ... request_id=trace-42.a in:\n%s", line, log)
		}
	}

	ids := map[string]bool{}
	for _, sent := range []string{"", "", "two words", strings.Repeat("x", 129)} {
		resp, _ := ts.wire(t, "GET", "/kv/v1/ping", http.Header{"X-Request-ID": {sent}}, nil)
		id := resp.Header.Get("X-Request-ID")
		if len(id) != 32 || ids[id] || !strings.Contains(logs.String(), "request_id="+id) {
			t.Errorf("sent %q: X-Request-ID %q, want a new 32-character ID, logged", sent, id)
		}
		ids[id] = true
	}
	for _, path := range []string{"/nothing/here", "/kv/v1/" + strings.Repeat("k", MaxURLBytes)} {
		if resp, _ := ts.wire(t, "GET", path, nil, nil); len(resp.Header.Get("X-Request-ID")) != 32 {
			t.Errorf("GET %.40s: %d without X-Request-ID", path, resp.StatusCode)
		}
	}
}
