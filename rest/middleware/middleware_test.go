package middleware

import (
	"bytes"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/kvnode/kvnode/region"
)

// serve runs h behind the middlewares on a real listener, with an error
// handler that answers {"cause"} with the status of an *echo.HTTPError,
// 400 for region.ErrInvalid, 415 for ErrUnsupportedEncoding.
func serve(t *testing.T, h echo.HandlerFunc, m ...echo.MiddlewareFunc) string {
	t.Helper()
	e := echo.New()
	e.HTTPErrorHandler = func(err error, c echo.Context) {
		status := http.StatusInternalServerError
		var he *echo.HTTPError
		switch {
		case errors.As(err, &he):
			status = he.Code
		case errors.Is(err, region.ErrInvalid):
			status = http.StatusBadRequest
		case errors.Is(err, ErrUnsupportedEncoding):
			status = http.StatusUnsupportedMediaType
		}
		_ = c.JSON(status, map[string]string{"cause": err.Error()})
	}
	e.Use(m...)
	e.Any("/*", h)
	srv := httptest.NewServer(e)
	t.Cleanup(srv.Close)
	return srv.URL
}

// exchange sends a request without Go's transparent gzip, so that the
// test sees the wire.
func exchange(t *testing.T, method, url string, header http.Header, body []byte) (*http.Response, []byte) {
	t.Helper()
	req, err := http.NewRequest(method, url, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if body == nil {
		req.Body = http.NoBody
	}
	for k, vs := range header {
		req.Header[k] = vs
	}
	resp, err := (&http.Transport{DisableCompression: true}).RoundTrip(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("read the answer: %v", err)
	}
	return resp, b
}

func gunzip(t *testing.T, b []byte) string {
	t.Helper()
	zr, err := gzip.NewReader(bytes.NewReader(b))
	if err != nil {
		t.Fatalf("not gzip: %v (%q)", err, b)
	}
	out, err := io.ReadAll(zr)
	if err != nil {
		t.Fatalf("bad gzip: %v", err)
	}
	return string(out)
}

func gzipped(s string) []byte {
	var b bytes.Buffer
	zw := gzip.NewWriter(&b)
	_, _ = zw.Write([]byte(s))
	_ = zw.Close()
	return b.Bytes()
}

func TestAcceptsGzip(t *testing.T) {
	for in, want := range map[string]bool{
		"":                       false,
		"identity":               false,
		"gzip":                   true,
		"GZip":                   true,
		"deflate, gzip;q=0.5":    true,
		"x-gzip":                 true,
		"gzip;q=0":               false,
		"gzip; q=0.000":          false,
		"*":                      true,
		"*;q=0":                  false,
		"gzip;q=0, *":            false, // named wins over *
		"br, *;q=0.1":            true,
		"gzip;q=bad":             false,
		"deflate, br":            false,
		" gzip ; q=1 , identity": true,
	} {
		if got := acceptsGzip([]string{in}); got != want {
			t.Errorf("acceptsGzip(%q) = %v, want %v", in, got, want)
		}
	}
	if !acceptsGzip([]string{"br", "gzip"}) {
		t.Errorf("gzip in a second Accept-Encoding header is not seen")
	}
}

// TestCompress: gzip when accepted, the body exactly what it would be
// plain; plain otherwise; never for HEAD, bodiless statuses, an answer
// the handler encoded itself, or one shorter than minGzipBytes (sent as
// it is, with its length), whether written at once or in pieces.
func TestCompress(t *testing.T) {
	body := strings.Repeat(`{"n":1,"name":"order"},`, 500)
	sniffed := "<html><body>" + strings.Repeat("hi ", 400) + "</body></html>"
	url := serve(t, func(c echo.Context) error {
		switch c.Request().URL.Path {
		case "/empty":
			return c.NoContent(http.StatusNoContent)
		case "/created":
			c.Response().Header().Set("Location", "/x")
			return c.NoContent(http.StatusCreated)
		case "/encoded":
			c.Response().Header().Set("Content-Encoding", "gzip")
			return c.Blob(http.StatusOK, "text/plain", gzipped("already"))
		case "/sniff":
			c.Response().WriteHeader(http.StatusOK)
			_, err := c.Response().Write([]byte(sniffed))
			return err
		case "/short":
			return c.Blob(http.StatusOK, "application/json", []byte(`{"short":true}`))
		case "/pieces":
			c.Response().Header().Set("Content-Type", "text/plain")
			c.Response().WriteHeader(http.StatusOK)
			for range 10 { // 1,500 bytes in writes of 150
				if _, err := c.Response().Write([]byte(strings.Repeat("p", 150))); err != nil {
					return err
				}
			}
			return nil
		}
		return c.Blob(http.StatusOK, "application/json", []byte(body))
	}, Compress())
	gz := http.Header{"Accept-Encoding": {"gzip"}}

	resp, b := exchange(t, "GET", url+"/", gz, nil)
	// net/http may add the length of what it sent: the compressed one.
	if cl := resp.Header.Get("Content-Length"); resp.Header.Get("Content-Encoding") != "gzip" || cl != "" && cl != fmt.Sprint(len(b)) || gunzip(t, b) != body {
		t.Errorf("gzip answer: encoding %q, length %q of %d bytes, body ok %v", resp.Header.Get("Content-Encoding"), cl, len(b), gunzip(t, b) == body)
	}
	if resp.Header.Get("Vary") != "Accept-Encoding" || resp.Header.Get("Content-Type") != "application/json" {
		t.Errorf("Vary %q, Content-Type %q", resp.Header.Get("Vary"), resp.Header.Get("Content-Type"))
	}
	t.Logf("%d bytes compressed to %d", len(body), len(b))

	for _, ae := range []string{"", "identity", "gzip;q=0", "br"} {
		resp, b := exchange(t, "GET", url+"/", http.Header{"Accept-Encoding": {ae}}, nil)
		if resp.Header.Get("Content-Encoding") != "" || string(b) != body || resp.Header.Get("Vary") != "Accept-Encoding" {
			t.Errorf("Accept-Encoding %q: encoding %q, plain body %v, Vary %q", ae, resp.Header.Get("Content-Encoding"), string(b) == body, resp.Header.Get("Vary"))
		}
	}
	if resp, b := exchange(t, "HEAD", url+"/", gz, nil); resp.Header.Get("Content-Encoding") != "" || len(b) != 0 {
		t.Errorf("HEAD: encoding %q, %d bytes", resp.Header.Get("Content-Encoding"), len(b))
	}
	if resp, b := exchange(t, "GET", url+"/empty", gz, nil); resp.StatusCode != 204 || resp.Header.Get("Content-Encoding") != "" || len(b) != 0 {
		t.Errorf("204: %d, encoding %q, %d bytes", resp.StatusCode, resp.Header.Get("Content-Encoding"), len(b))
	}
	if resp, b := exchange(t, "POST", url+"/created", gz, nil); resp.StatusCode != 201 || resp.Header.Get("Content-Encoding") != "" || len(b) != 0 || resp.Header.Get("Location") != "/x" {
		t.Errorf("201 without a body: %d, encoding %q, %d bytes, Location %q", resp.StatusCode, resp.Header.Get("Content-Encoding"), len(b), resp.Header.Get("Location"))
	}
	if resp, b := exchange(t, "GET", url+"/encoded", gz, nil); resp.Header.Get("Content-Encoding") != "gzip" || gunzip(t, b) != "already" {
		t.Errorf("an answer the handler encoded was encoded again: %q", b)
	}
	if resp, b := exchange(t, "GET", url+"/sniff", gz, nil); !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/html") || gunzip(t, b) != sniffed {
		t.Errorf("sniffed Content-Type %q (from the compressed bytes?)", resp.Header.Get("Content-Type"))
	}
	if resp, b := exchange(t, "GET", url+"/short", gz, nil); resp.Header.Get("Content-Encoding") != "" || string(b) != `{"short":true}` ||
		resp.Header.Get("Content-Length") != fmt.Sprint(len(b)) || resp.Header.Get("Content-Type") != "application/json" {
		t.Errorf("a short answer: encoding %q, length %q, type %q, body %q; want it as it is", resp.Header.Get("Content-Encoding"),
			resp.Header.Get("Content-Length"), resp.Header.Get("Content-Type"), b)
	}
	if resp, b := exchange(t, "GET", url+"/pieces", gz, nil); resp.Header.Get("Content-Encoding") != "gzip" || gunzip(t, b) != strings.Repeat("p", 1500) {
		t.Errorf("an answer written in short pieces: encoding %q; want it compressed once long enough", resp.Header.Get("Content-Encoding"))
	}
}

// TestCompressStreams: a handler that flushes gets its bytes to the
// client at once, compressed; the answer is not held until it ends.
func TestCompressStreams(t *testing.T) {
	proceed := make(chan struct{})
	url := serve(t, func(c echo.Context) error {
		c.Response().Header().Set("Content-Type", "application/json")
		c.Response().WriteHeader(http.StatusOK)
		_, _ = c.Response().Write([]byte(`{"first":true}`))
		c.Response().Flush()
		select {
		case <-proceed:
		case <-time.After(10 * time.Second):
		}
		_, err := c.Response().Write([]byte(`{"second":true}`))
		return err
	}, Compress())
	req, _ := http.NewRequest("GET", url, nil)
	req.Header.Set("Accept-Encoding", "gzip")
	resp, err := (&http.Transport{DisableCompression: true}).RoundTrip(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	zr, err := gzip.NewReader(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	first := make([]byte, len(`{"first":true}`))
	if _, err := io.ReadFull(zr, first); err != nil || string(first) != `{"first":true}` {
		t.Fatalf("the flushed start did not arrive before the handler went on: %q %v", first, err)
	}
	close(proceed)
	rest, err := io.ReadAll(zr)
	if err != nil || string(rest) != `{"second":true}` {
		t.Fatalf("rest %q %v", rest, err)
	}
}

// TestCompressAbort: an answer aborted mid-body (http.ErrAbortHandler)
// reaches the client as an incomplete gzip stream and an incomplete HTTP
// body: no layer can take it for a whole answer.
func TestCompressAbort(t *testing.T) {
	url := serve(t, func(c echo.Context) error {
		c.Response().Header().Set("Content-Type", "application/json")
		c.Response().WriteHeader(http.StatusOK)
		_, _ = c.Response().Write([]byte(strings.Repeat(`{"n":1},`, 10_000)))
		c.Response().Flush()
		panic(http.ErrAbortHandler)
	}, Compress())
	req, _ := http.NewRequest("GET", url, nil)
	req.Header.Set("Accept-Encoding", "gzip")
	resp, err := (&http.Transport{DisableCompression: true}).RoundTrip(req)
	if err != nil {
		return // cut before the header: incomplete, as it must be
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err == nil {
		t.Errorf("the HTTP body of an aborted answer ended well (%d bytes)", len(raw))
	}
	zr, err := gzip.NewReader(bytes.NewReader(raw))
	if err != nil {
		return
	}
	if _, err := io.ReadAll(zr); err == nil {
		t.Errorf("the gzip stream of an aborted answer is complete")
	}
}

// TestDecompress: a gzip body is read decoded; a corrupt one is the
// client's mistake; another coding is refused; without a body nothing is
// checked. Who reads the body bounds the decoded size.
func TestDecompress(t *testing.T) {
	url := serve(t, func(c echo.Context) error {
		req := c.Request()
		b, err := io.ReadAll(http.MaxBytesReader(c.Response(), req.Body, 1<<20))
		if err != nil {
			var tooBig *http.MaxBytesError
			if errors.As(err, &tooBig) {
				return echo.NewHTTPError(http.StatusRequestEntityTooLarge, err.Error())
			}
			return err
		}
		return c.String(http.StatusOK, fmt.Sprintf("%d %q %q %s", req.ContentLength, req.Header.Get("Content-Encoding"), req.Header.Get("Content-Length"), b))
	}, Decompress())
	gz := http.Header{"Content-Encoding": {"gzip"}}

	resp, b := exchange(t, "PUT", url, gz, gzipped(`{"a":1}`))
	if resp.StatusCode != 200 || string(b) != `-1 "" "" {"a":1}` {
		t.Errorf("gzip body: %d %s", resp.StatusCode, b)
	}
	if resp, b := exchange(t, "PUT", url, http.Header{"Content-Encoding": {"identity"}}, []byte(`{"a":2}`)); resp.StatusCode != 200 || !strings.HasSuffix(string(b), `{"a":2}`) {
		t.Errorf("identity: %d %s", resp.StatusCode, b)
	}
	for name, body := range map[string][]byte{
		"not gzip":  []byte(`{"a":1}`),
		"truncated": gzipped(`{"a":1}`)[:12],
		"corrupt":   append(gzipped(`{"a":1}`)[:10], bytes.Repeat([]byte{0xff}, 20)...),
	} {
		resp, b := exchange(t, "PUT", url, gz, body)
		if resp.StatusCode != 400 || !strings.Contains(string(b), "not valid gzip") {
			t.Errorf("%s: %d %s, want 400 naming gzip", name, resp.StatusCode, b)
		}
	}
	if resp, b := exchange(t, "PUT", url, http.Header{"Content-Encoding": {"br"}}, []byte("x")); resp.StatusCode != 415 || !strings.Contains(string(b), `Content-Encoding \"br\"`) {
		t.Errorf("br: %d %s, want 415", resp.StatusCode, b)
	}
	if resp, b := exchange(t, "PUT", url, http.Header{"Content-Encoding": {"gzip, gzip"}}, gzipped("x")); resp.StatusCode != 415 {
		t.Errorf("two codings: %d %s, want 415", resp.StatusCode, b)
	}
	if resp, b := exchange(t, "GET", url, http.Header{"Content-Encoding": {"br"}}, nil); resp.StatusCode != 200 {
		t.Errorf("no body, Content-Encoding br: %d %s, want it ignored", resp.StatusCode, b)
	}
	// 16 MiB of zeros are 16 KiB of gzip; the reader stops at its limit.
	var bomb bytes.Buffer
	zw := gzip.NewWriter(&bomb)
	_, _ = zw.Write(make([]byte, 16<<20))
	_ = zw.Close()
	if resp, b := exchange(t, "PUT", url, gz, bomb.Bytes()); resp.StatusCode != 413 {
		t.Errorf("a %d-byte body inflating to 16 MiB: %d %s, want 413", bomb.Len(), resp.StatusCode, b)
	}
}

// TestRequestID: a valid X-Request-ID is kept, anything else replaced by
// a fresh random one; the answer carries it, errors included, and the
// handler can read it.
func TestRequestID(t *testing.T) {
	url := serve(t, func(c echo.Context) error {
		if c.Request().URL.Path == "/fail" {
			return echo.ErrNotFound
		}
		return c.String(http.StatusOK, RequestIDOf(c))
	}, RequestID())
	for _, id := range []string{"abc-123", "a", strings.Repeat("x", MaxRequestIDLen), "7f3c9a2e-1d4b-4c6a-9e8f-0123456789ab", "!~"} {
		resp, b := exchange(t, "GET", url, http.Header{"X-Request-Id": {id}}, nil)
		if resp.Header.Get("X-Request-ID") != id || string(b) != id {
			t.Errorf("X-Request-ID %q: answer %q, handler saw %q", id, resp.Header.Get("X-Request-ID"), b)
		}
	}
	seen := map[string]bool{}
	for _, id := range []string{"", "has space", strings.Repeat("x", MaxRequestIDLen+1), "é"} {
		resp, b := exchange(t, "GET", url, http.Header{"X-Request-Id": {id}}, nil)
		got := resp.Header.Get("X-Request-ID")
		if got == id || len(got) != 32 || string(b) != got || seen[got] {
			t.Errorf("X-Request-ID %q: answer %q (handler %q), want a new 32-character ID", id, got, b)
		}
		seen[got] = true
	}
	if resp, _ := exchange(t, "GET", url+"/fail", http.Header{"X-Request-Id": {"e1"}}, nil); resp.StatusCode != 404 || resp.Header.Get("X-Request-ID") != "e1" {
		t.Errorf("error answer: %d, X-Request-ID %q", resp.StatusCode, resp.Header.Get("X-Request-ID"))
	}
	// What Go's client refuses to send, other clients may.
	for _, id := range []string{"tab\there", "a\x7f", "new\nline", "nul\x00"} {
		if validRequestID(id) {
			t.Errorf("validRequestID(%q) = true", id)
		}
	}
}

// TestCORS: an allowed origin gets the headers (its preflight answered
// here, without reaching the handler or its authentication); another
// origin gets none; credentials are never allowed.
func TestCORS(t *testing.T) {
	reached := 0
	url := serve(t, func(c echo.Context) error {
		reached++
		if c.Request().Method == http.MethodOptions {
			return c.NoContent(http.StatusNoContent)
		}
		return c.String(http.StatusOK, "data")
	}, CORS([]string{"https://console.example.com", "http://localhost:3000"}))

	resp, _ := exchange(t, "GET", url, http.Header{"Origin": {"https://console.example.com"}}, nil)
	if resp.Header.Get("Access-Control-Allow-Origin") != "https://console.example.com" ||
		!strings.Contains(resp.Header.Get("Access-Control-Expose-Headers"), "Location") ||
		!strings.Contains(resp.Header.Get("Access-Control-Expose-Headers"), "X-Request-ID") ||
		resp.Header.Get("Access-Control-Allow-Credentials") != "" || resp.Header.Get("Vary") != "Origin" {
		t.Errorf("allowed origin: %v", resp.Header)
	}
	pre := http.Header{"Origin": {"http://localhost:3000"}, "Access-Control-Request-Method": {"PUT"},
		"Access-Control-Request-Headers": {"authorization,content-type"}}
	before := reached
	resp, b := exchange(t, "OPTIONS", url+"/kv/v1/orders/1", pre, nil)
	if resp.StatusCode != 204 || len(b) != 0 || reached != before ||
		resp.Header.Get("Access-Control-Allow-Origin") != "http://localhost:3000" ||
		!strings.Contains(resp.Header.Get("Access-Control-Allow-Methods"), "PUT") ||
		!strings.Contains(resp.Header.Get("Access-Control-Allow-Headers"), "Authorization") ||
		!strings.Contains(resp.Header.Get("Access-Control-Allow-Headers"), "Content-Type") ||
		resp.Header.Get("Access-Control-Max-Age") != "600" {
		t.Errorf("preflight: %d, reached the handler %v, %v", resp.StatusCode, reached != before, resp.Header)
	}
	for _, h := range []http.Header{
		{"Origin": {"https://evil.example.com"}},
		{"Origin": {"https://console.example.com.evil.com"}},
		{"Origin": {"https://evil.example.com"}, "Access-Control-Request-Method": {"PUT"}},
	} {
		method := "GET"
		if h.Get("Access-Control-Request-Method") != "" {
			method = "OPTIONS"
		}
		resp, _ := exchange(t, method, url, h, nil)
		if resp.Header.Get("Access-Control-Allow-Origin") != "" || resp.Header.Get("Access-Control-Allow-Methods") != "" {
			t.Errorf("%s from %s: %v", method, h.Get("Origin"), resp.Header)
		}
	}
	// Without Origin (not a browser's cross-origin call) nothing changes.
	if resp, b := exchange(t, "GET", url, nil, nil); resp.Header.Get("Access-Control-Allow-Origin") != "" || resp.Header.Get("Vary") != "" || string(b) != "data" {
		t.Errorf("no Origin: %v %s", resp.Header, b)
	}

	anyURL := serve(t, func(c echo.Context) error { return c.String(http.StatusOK, "data") }, CORS([]string{"*"}))
	if resp, _ := exchange(t, "GET", anyURL, http.Header{"Origin": {"http://x.test:8080"}}, nil); resp.Header.Get("Access-Control-Allow-Origin") != "http://x.test:8080" {
		t.Errorf(`"*": Access-Control-Allow-Origin %q, want the origin`, resp.Header.Get("Access-Control-Allow-Origin"))
	}
}

func TestValidateOrigins(t *testing.T) {
	if err := ValidateOrigins([]string{"*", "https://console.example.com", "http://localhost:3000", "http://[::1]:8080"}); err != nil {
		t.Errorf("valid origins: %v", err)
	}
	for _, o := range []string{"console.example.com", "https://", "ftp://x.com", "https://x.com/", "https://x.com/app", "https://x.com?a", "https://u@x.com", "https://x.com#f", ""} {
		if err := ValidateOrigins([]string{o}); err == nil || !strings.Contains(err.Error(), "scheme://host[:port]") {
			t.Errorf("ValidateOrigins(%q) = %v, want an error", o, err)
		}
	}
}

// TestAliasPrefix: a path under the alias is routed as the same path
// under the target, and the handler sees the client's URL and which
// prefix it used; anything else is left alone.
func TestAliasPrefix(t *testing.T) {
	e := echo.New()
	e.Pre(AliasPrefix("/geode/v1", "/kv/v1"), func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error { // as rest routes: on the escaped path
			c.Request().URL.RawPath = c.Request().URL.EscapedPath()
			return next(c)
		}
	})
	e.Use(RestoreAliasedURL)
	h := func(c echo.Context) error {
		return c.String(http.StatusOK, fmt.Sprintf("%s %s %s [%s]", c.Path(), c.Param("key"), c.Request().URL.EscapedPath(), AliasUsed(c)))
	}
	e.GET("/kv/v1", h)
	e.GET("/kv/v1/r/:key", h)
	srv := httptest.NewServer(e)
	t.Cleanup(srv.Close)
	for path, want := range map[string]string{
		"/geode/v1/r/a%2Fb": "/kv/v1/r/:key a%2Fb /geode/v1/r/a%2Fb [/geode/v1]",
		"/geode/v1":         "/kv/v1  /geode/v1 [/geode/v1]",
		"/kv/v1/r/k":        "/kv/v1/r/:key k /kv/v1/r/k []",
		"/geode/v10/r/k":    "404",
		"/ge%6Fde/v1/r/k":   "404",
		"/geode/v1r/k":      "404",
	} {
		resp, b := exchange(t, "GET", srv.URL+path, nil, nil)
		got := string(b)
		if resp.StatusCode == 404 {
			got = "404"
		}
		if got != want {
			t.Errorf("GET %s: %q, want %q", path, got, want)
		}
	}
}
