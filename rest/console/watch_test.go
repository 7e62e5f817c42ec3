package console

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestWatchView: the console has the live view, in the navigation, with
// its controls, reading the stream with the credentials (fetch, not
// EventSource) and resuming with Last-Event-ID.
func TestWatchView(t *testing.T) {
	if !slices.Contains(Files(), "js/views/watch.js") {
		t.Fatalf("the console has no js/views/watch.js")
	}
	read := func(name string) string {
		b, err := assets.ReadFile("assets/" + name)
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	for name, wants := range map[string][]string{
		"js/app.js":         {"import * as watch from './views/watch.js'", "watch: { title: 'Watch'"},
		"js/views/watch.js": {"#watch-start", "#watch-stop", "#watch-state", "#watch-rows", "openStream('/kv/v1/watch'", "'ready'", "'error'", "'end'"},
		"js/api.js":         {"'Last-Event-ID'", "headers.Authorization = authorization"},
	} {
		text := read(name)
		for _, w := range wants {
			if !strings.Contains(text, w) {
				t.Errorf("%s lacks %q", name, w)
			}
		}
	}
}

// TestReadEventsInNode runs api.js's Server-Sent Events reader in Node
// (when installed) over a stream cut at awkward places: CRLF, CR, a
// comment, multi-line data, and a keep-alive's id without data.
func TestReadEventsInNode(t *testing.T) {
	node, err := exec.LookPath("node")
	if err != nil {
		t.Skip("node is not installed: the reader is checked by the browser tests only")
	}
	dir := t.TempDir()
	api, _ := assets.ReadFile("assets/js/api.js")
	if err := os.WriteFile(filepath.Join(dir, "api.mjs"), api, 0o600); err != nil {
		t.Fatal(err)
	}
	script := `import { readEvents } from './api.mjs';
const chunks = ['event: create\r', '\nid: 1\r\ndata: {"key":"a"}\r\n\r\n: keep-alive\nid: 2\n\n', 'data: x\rdata: y\r\r'];
const body = new ReadableStream({ start(c) { for (const s of chunks) c.enqueue(new TextEncoder().encode(s)); c.close(); } });
const out = [];
await readEvents(body, (e) => out.push(e), (id) => out.push('id ' + id));
console.log(JSON.stringify(out));
`
	if err := os.WriteFile(filepath.Join(dir, "t.mjs"), []byte(script), 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(node, "t.mjs")
	cmd.Dir = dir
	got, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("node: %v: %s", err, got)
	}
	want := `["id 1",{"type":"create","data":"{\"key\":\"a\"}","id":"1"},"id 2","id 2",{"type":"message","data":"x\ny","id":"2"}]`
	if strings.TrimSpace(string(got)) != want {
		t.Errorf("got %s, want %s", got, want)
	}
}
