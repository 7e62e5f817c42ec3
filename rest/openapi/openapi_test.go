package openapi

import (
	"compress/gzip"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"
)

// TestDocumentIsValidOpenAPI: the document loads, resolves every $ref and
// passes kin-openapi's validation of OpenAPI 3 (its examples included).
func TestDocumentIsValidOpenAPI(t *testing.T) {
	doc, err := openapi3.NewLoader().LoadFromData(Document())
	if err != nil {
		t.Fatalf("load: %v", err)
	}
	if err := doc.Validate(context.Background(), openapi3.EnableExamplesValidation()); err != nil {
		t.Fatalf("validate: %v", err)
	}
	if doc.OpenAPI != "3.0.3" || doc.Info.Title != "kvnode REST API" {
		t.Errorf("openapi %q, title %q", doc.OpenAPI, doc.Info.Title)
	}
	// Every operation names its statuses and has an id, for clients
	// generated from the document.
	for path, item := range doc.Paths.Map() {
		for method, op := range item.Operations() {
			if op.OperationID == "" || op.Responses.Len() == 0 {
				t.Errorf("%s %s: operationId %q, %d responses", method, path, op.OperationID, op.Responses.Len())
			}
		}
	}
}

// TestSwaggerUIServesEmbeddedAssets: the page points at the document and
// loads its scripts and styles from below its own path, which the handler
// serves from the binary (gzip-compressed when the browser accepts it).
func TestSwaggerUIServesEmbeddedAssets(t *testing.T) {
	srv := httptest.NewServer(SwaggerUI("/docs/", "/kv/v1/openapi.json"))
	t.Cleanup(srv.Close)
	page := get(t, srv.URL+"/docs/", "")
	if page.status != 200 || !strings.HasPrefix(page.contentType, "text/html") {
		t.Fatalf("GET /docs/ = %d %s", page.status, page.contentType)
	}
	for _, want := range []string{`"swaggerJsonUrl":"/kv/v1/openapi.json"`, `src="/docs/swagger-ui-bundle.js"`, `href="/docs/swagger-ui.css"`} {
		if !strings.Contains(page.body, want) {
			t.Errorf("the page lacks %s", want)
		}
	}
	if strings.Contains(page.body, "://cdn") || strings.Contains(page.body, "unpkg.com") {
		t.Errorf("the page loads something from the internet:\n%s", page.body)
	}
	for _, asset := range []string{"swagger-ui-bundle.js", "swagger-ui-standalone-preset.js", "swagger-ui.css", "favicon-32x32.png"} {
		plain := get(t, srv.URL+"/docs/"+asset, "")
		if plain.status != 200 || len(plain.body) < 500 {
			t.Errorf("GET /docs/%s = %d, %d bytes", asset, plain.status, len(plain.body))
		}
		if strings.HasSuffix(asset, ".js") {
			zipped := get(t, srv.URL+"/docs/"+asset, "gzip")
			if zipped.status != 200 || zipped.encoding != "gzip" || zipped.body != plain.body {
				t.Errorf("GET /docs/%s with gzip = %d, encoding %q, same body %v", asset, zipped.status, zipped.encoding, zipped.body == plain.body)
			}
		}
	}
}

type answer struct {
	status                      int
	contentType, encoding, body string
}

// get fetches url asking for acceptEncoding ("" for none) and decodes a
// gzip body itself, so the test sees what went over the wire.
func get(t *testing.T, url, acceptEncoding string) answer {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Accept-Encoding", acceptEncoding)
	if acceptEncoding == "" {
		req.Header.Set("Accept-Encoding", "identity")
	}
	resp, err := http.DefaultTransport.RoundTrip(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var r io.Reader = resp.Body
	if resp.Header.Get("Content-Encoding") == "gzip" {
		zr, err := gzip.NewReader(resp.Body)
		if err != nil {
			t.Fatal(err)
		}
		r = zr
	}
	b, err := io.ReadAll(r)
	if err != nil {
		t.Fatal(err)
	}
	return answer{resp.StatusCode, resp.Header.Get("Content-Type"), resp.Header.Get("Content-Encoding"), string(b)}
}
