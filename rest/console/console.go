package console

import (
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io/fs"
	"net/http"
	"path"
	"strconv"
	"strings"
)

//go:embed assets
var assets embed.FS

// Headers of every file the console serves. The policy allows the page's
// own files and calls to its own origin, nothing inline, no framing: the
// page shows values read from the cluster, and a value must never run as
// script.
var securityHeaders = map[string]string{
	"Content-Security-Policy": "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; " +
		"connect-src 'self'; font-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'",
	"X-Content-Type-Options": "nosniff",
	"Referrer-Policy":        "no-referrer",
	"Cache-Control":          "no-cache",
}

// contentTypes are the types of the console's files by extension: a
// table of its own, so that the answer does not depend on the machine's
// mime.types.
var contentTypes = map[string]string{
	".html": "text/html; charset=utf-8",
	".css":  "text/css; charset=utf-8",
	".js":   "text/javascript; charset=utf-8",
	".svg":  "image/svg+xml",
}

// asset is one embedded file, ready to serve.
type asset struct {
	body        []byte
	contentType string
	etag        string
}

// Handler serves the console under basePath (e.g. "/console/", with its
// trailing slash): the page at basePath itself and its files below it.
// It answers GET and HEAD; another method is a 405, an unknown file a
// 404, both with a JSON {"cause"} as the API's errors are.
func Handler(basePath string) http.Handler {
	files, err := load()
	if err != nil {
		panic(err) // the embedded tree is part of the binary: a bug
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		name, ok := strings.CutPrefix(r.URL.Path, basePath)
		if !ok {
			fail(w, http.StatusNotFound, fmt.Sprintf("%s is not under %s", r.URL.Path, basePath))
			return
		}
		if name == "" {
			name = "index.html"
		}
		a, ok := files[name]
		if !ok {
			fail(w, http.StatusNotFound, fmt.Sprintf("the console has no file %q", name))
			return
		}
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			w.Header().Set("Allow", "GET, HEAD")
			fail(w, http.StatusMethodNotAllowed, r.Method+" is not allowed on the console's files")
			return
		}
		h := w.Header()
		for k, v := range securityHeaders {
			h.Set(k, v)
		}
		h.Set("ETag", a.etag)
		if etagMatches(r.Header.Get("If-None-Match"), a.etag) {
			w.WriteHeader(http.StatusNotModified)
			return
		}
		h.Set("Content-Type", a.contentType)
		h.Set("Content-Length", strconv.Itoa(len(a.body)))
		w.WriteHeader(http.StatusOK)
		if r.Method == http.MethodGet {
			_, _ = w.Write(a.body)
		}
	})
}

// Files lists the names of the console's files (index.html, app.js, ...),
// for tests.
func Files() []string {
	files, err := load()
	if err != nil {
		panic(err)
	}
	names := make([]string, 0, len(files))
	for n := range files {
		names = append(names, n)
	}
	return names
}

// load reads the embedded tree into assets keyed by their path below
// assets/.
func load() (map[string]asset, error) {
	files := map[string]asset{}
	err := fs.WalkDir(assets, "assets", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		body, err := assets.ReadFile(p)
		if err != nil {
			return err
		}
		ct := contentTypes[path.Ext(p)]
		if ct == "" {
			return fmt.Errorf("console asset %s: no content type for its extension", p)
		}
		sum := sha256.Sum256(body)
		files[strings.TrimPrefix(p, "assets/")] = asset{body: body, contentType: ct, etag: `"` + hex.EncodeToString(sum[:12]) + `"`}
		return nil
	})
	return files, err
}

// etagMatches reads If-None-Match: "*" or a list of entity tags (weak
// ones compare by their opaque part, as RFC 9110 §13.1.2 says).
func etagMatches(header, etag string) bool {
	for _, t := range strings.Split(header, ",") {
		t = strings.TrimPrefix(strings.TrimSpace(t), "W/")
		if t == "*" || t == etag {
			return true
		}
	}
	return false
}

// fail answers status with a JSON {"cause"} body.
func fail(w http.ResponseWriter, status int, cause string) {
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(status)
	body, _ := json.Marshal(struct {
		Cause string `json:"cause"`
	}{cause})
	_, _ = w.Write(body)
}
