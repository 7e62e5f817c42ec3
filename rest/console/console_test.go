package console

import (
	"io"
	"net/http"
	"net/http/httptest"
	"path"
	"regexp"
	"slices"
	"strings"
	"testing"
)

func get(t *testing.T, h http.Handler, method, target string, header ...string) *http.Response {
	t.Helper()
	req := httptest.NewRequest(method, target, nil)
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return rec.Result()
}

func body(t *testing.T, resp *http.Response) string {
	t.Helper()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestHandlerServesEveryFile: each embedded file under the base path with
// its type, a strong ETag honoured by If-None-Match, no caching without
// revalidation and the security headers; the page at the base path
// itself; unknown files and other methods refused with a JSON cause.
func TestHandlerServesEveryFile(t *testing.T) {
	h := Handler("/console/")
	files := Files()
	for _, want := range []string{"index.html", "app.css", "favicon.svg", "js/app.js", "js/api.js"} {
		if !slices.Contains(files, want) {
			t.Errorf("the console lacks %s (has %v)", want, files)
		}
	}
	types := map[string]string{".html": "text/html; charset=utf-8", ".css": "text/css; charset=utf-8",
		".js": "text/javascript; charset=utf-8", ".svg": "image/svg+xml"}
	for _, name := range files {
		resp := get(t, h, "GET", "/console/"+name)
		b := body(t, resp)
		if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != types[path.Ext(name)] || len(b) == 0 {
			t.Errorf("GET %s = %d %q, %d bytes", name, resp.StatusCode, resp.Header.Get("Content-Type"), len(b))
		}
		for _, hd := range []string{"Content-Security-Policy", "X-Content-Type-Options", "Cache-Control", "ETag"} {
			if resp.Header.Get(hd) == "" {
				t.Errorf("GET %s: no %s", name, hd)
			}
		}
		again := get(t, h, "GET", "/console/"+name, "If-None-Match", resp.Header.Get("ETag"))
		if again.StatusCode != http.StatusNotModified || body(t, again) != "" {
			t.Errorf("GET %s with its ETag = %d, want 304", name, again.StatusCode)
		}
		head := get(t, h, "HEAD", "/console/"+name)
		if head.StatusCode != 200 || body(t, head) != "" || head.Header.Get("Content-Length") != resp.Header.Get("Content-Length") {
			t.Errorf("HEAD %s = %d, Content-Length %s", name, head.StatusCode, head.Header.Get("Content-Length"))
		}
	}
	if page := get(t, h, "GET", "/console/"); page.StatusCode != 200 || !strings.Contains(body(t, page), "<title>kvnode console</title>") {
		t.Errorf("GET /console/ = %d", page.StatusCode)
	}
	for _, c := range []struct {
		method, target string
		status         int
	}{{"GET", "/console/nothing.js", 404}, {"GET", "/elsewhere", 404}, {"POST", "/console/index.html", 405}} {
		resp := get(t, h, c.method, c.target)
		if b := body(t, resp); resp.StatusCode != c.status || !strings.HasPrefix(b, `{"cause":"`) ||
			resp.Header.Get("Content-Type") != "application/json; charset=utf-8" {
			t.Errorf("%s %s = %d %s, want %d with a cause", c.method, c.target, resp.StatusCode, b, c.status)
		}
	}
}

// TestAssetsAreSelfContained: what the page loads is in the binary (every
// src, href and module import resolves to an embedded file, nothing comes
// from the internet), and the page keeps to what its
// Content-Security-Policy allows and to its promise about credentials: no
// inline script or style, no HTML built from strings (values from the
// cluster would become markup), and no storage of any kind.
func TestAssetsAreSelfContained(t *testing.T) {
	files := Files()
	read := func(name string) string {
		b, err := assets.ReadFile("assets/" + name)
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	refs := regexp.MustCompile(`(?:src|href)="([^"#]+)"`)
	imports := regexp.MustCompile(`(?m)^\s*import\s+(?:[^'"]*?\s+from\s+)?'([^']+)'`)
	internet := regexp.MustCompile(`(?i)(?:https?:)?//[a-z0-9.-]+\.[a-z]{2,}`)
	for _, name := range files {
		text := read(name)
		var targets []string
		switch path.Ext(name) {
		case ".html":
			for _, m := range refs.FindAllStringSubmatch(text, -1) {
				if !strings.HasPrefix(m[1], "../") { // ../docs/: Swagger UI, served beside the console
					targets = append(targets, m[1])
				}
			}
			if regexp.MustCompile(`<script(?:\s+type="module")?>`).MatchString(text) || strings.Contains(text, "<style") {
				t.Errorf("%s has an inline script or style, which the policy refuses", name)
			}
		case ".js":
			for _, m := range imports.FindAllStringSubmatch(text, -1) {
				targets = append(targets, m[1])
			}
			for _, banned := range []string{"innerHTML", "outerHTML", "insertAdjacentHTML", "document.write", "eval(", "new Function",
				"localStorage", "sessionStorage", "document.cookie", "indexedDB", "setAttribute('style'"} {
				if strings.Contains(text, banned) {
					t.Errorf("%s uses %s", name, banned)
				}
			}
		}
		for _, target := range targets {
			resolved := path.Join(path.Dir(name), target)
			if !slices.Contains(files, resolved) {
				t.Errorf("%s refers to %s (%s), which is not embedded", name, target, resolved)
			}
		}
		for _, m := range internet.FindAllString(text, -1) {
			if m != "http://www.w3.org" { // an SVG's XML namespace, never fetched
				t.Errorf("%s refers to %s on the internet", name, m)
			}
		}
	}
}
