package main

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
)

// TestDocument: every GET has the same body of the size asked, a JSON
// document listing the region; other methods are refused.
func TestDocument(t *testing.T) {
	doc, err := document("orders", 218)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(handler(doc))
	defer srv.Close()
	for _, path := range []string{"/kv/v1", "/kv/v1/orders/kvbench-00000001?consistency=stale"} {
		resp, err := http.Get(srv.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		var d struct {
			Regions []struct{ Name, Type string }
		}
		if resp.StatusCode != 200 || len(body) != 218 || json.Unmarshal(body, &d) != nil || len(d.Regions) != 1 || d.Regions[0].Name != "orders" {
			t.Errorf("GET %s: %d, %d bytes: %s", path, resp.StatusCode, len(body), body)
		}
	}
	resp, err := http.Post(srv.URL+"/kv/v1", "application/json", nil)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 405 {
		t.Errorf("POST: %d", resp.StatusCode)
	}
	if _, err := document("orders", 40); err == nil {
		t.Error("a size too small for the document was accepted")
	}
}
