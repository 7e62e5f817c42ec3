package rest

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/kvnode/kvnode/auth"
)

// TestConsoleServed: / leads a browser to the console, whose page and
// files need no credentials even with security on (they are static; the
// calls the page makes need them), and whose unknown files answer 404
// with a cause. Every exchange goes through the OpenAPI check: / is in the
// document, the console's files are not (a wildcard).
func TestConsoleServed(t *testing.T) {
	srv := httptest.NewServer(validated(t, New(Config{Auth: auth.New(securityFile(t))}, nil, nil, nil).Handler()))
	t.Cleanup(srv.Close)
	ts := &testServer{base: srv.URL}
	client := http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	for _, c := range []struct {
		method, path string
		status       int
		location     string
	}{
		{"GET", "/", http.StatusFound, "/console/"},
		{"HEAD", "/", http.StatusFound, "/console/"},
		{"GET", "/console", http.StatusMovedPermanently, "/console/"},
		{"GET", "/console/", http.StatusOK, ""},
		{"HEAD", "/console/", http.StatusOK, ""},
	} {
		req, err := http.NewRequest(c.method, ts.base+c.path, nil)
		if err != nil {
			t.Fatal(err)
		}
		resp, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != c.status || resp.Header.Get("Location") != c.location {
			t.Errorf("%s %s = %d Location %q, want %d %q", c.method, c.path, resp.StatusCode, resp.Header.Get("Location"), c.status, c.location)
		}
	}
	page := ts.do(t, "GET", "/console/", "", "")
	if !strings.HasPrefix(page.header.Get("Content-Type"), "text/html") || !strings.Contains(page.body, `src="js/app.js"`) ||
		!strings.Contains(page.header.Get("Content-Security-Policy"), "script-src 'self'") {
		t.Errorf("GET /console/ = %d %s CSP %q:\n%.300s", page.status, page.header.Get("Content-Type"), page.header.Get("Content-Security-Policy"), page.body)
	}
	if js := ts.do(t, "GET", "/console/js/app.js", "", ""); js.status != 200 || !strings.HasPrefix(js.header.Get("Content-Type"), "text/javascript") {
		t.Errorf("GET /console/js/app.js = %d %s", js.status, js.header.Get("Content-Type"))
	}
	fails(404, "no file").check(t, ts, ts.do(t, "GET", "/console/nothing.js", "", ""))
	expect{status: 405, cause: "POST", header: map[string]string{"Allow": "OPTIONS, GET, HEAD"}}.
		check(t, ts, ts.do(t, "POST", "/console/", ctJSON, `{}`))
	// The API itself still needs credentials.
	fails(401, "credentials").check(t, ts, ts.do(t, "GET", "/kv/v1", "", ""))
}
