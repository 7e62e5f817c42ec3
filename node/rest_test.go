package node_test

import (
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/kvnode/kvnode/node"
	"github.com/kvnode/kvnode/node/nodetest"
)

// TestNodeServesIssue20sHTTP: a started node serves what issue 20 adds to
// its REST port, wired from its Config: the OpenAPI document, Swagger UI,
// the /geode/v1 alias, request IDs, and CORS for --cors-origins.
func TestNodeServesIssue20sHTTP(t *testing.T) {
	c := nodetest.New(t)
	c.Tune = func(_ string, cfg *node.Config) { cfg.CORSOrigins = []string{"https://console.example.com"} }
	n := c.Start("a", 1)
	base := "http://" + n.HTTPAddr()
	get := func(path string, header http.Header) (*http.Response, string) {
		t.Helper()
		req, err := http.NewRequest("GET", base+path, nil)
		if err != nil {
			t.Fatal(err)
		}
		req.Header = header
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		if err != nil {
			t.Fatal(err)
		}
		return resp, string(b)
	}
	if resp, body := get("/kv/v1/openapi.json", nil); resp.StatusCode != 200 || !strings.Contains(body, `"openapi": "3.0.3"`) {
		t.Errorf("GET /kv/v1/openapi.json = %d %.80s", resp.StatusCode, body)
	}
	if resp, body := get("/docs/", nil); resp.StatusCode != 200 || !strings.Contains(body, "swagger-ui") {
		t.Errorf("GET /docs/ = %d %.80s", resp.StatusCode, body)
	}
	resp, _ := get("/geode/v1/ping", http.Header{"X-Request-Id": {"r-1"}, "Origin": {"https://console.example.com"}})
	if resp.StatusCode != 200 || resp.Header.Get("X-Request-ID") != "r-1" || resp.Header.Get("Access-Control-Allow-Origin") != "https://console.example.com" {
		t.Errorf("GET /geode/v1/ping = %d, X-Request-ID %q, Access-Control-Allow-Origin %q", resp.StatusCode,
			resp.Header.Get("X-Request-ID"), resp.Header.Get("Access-Control-Allow-Origin"))
	}
	if resp, _ := get("/kv/v1/ping", http.Header{"Origin": {"https://other.example.com"}}); resp.Header.Get("Access-Control-Allow-Origin") != "" {
		t.Errorf("another origin is allowed: %v", resp.Header)
	}
}
