package node_test

import (
	"bufio"
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/kvnode/kvnode/node/nodetest"
)

// TestShutdownEndsWatches: a graceful shutdown ends every watch at once
// with an error event carrying its token, instead of waiting out
// --shutdown-timeout for streams that never end; the node's metrics count
// the open watch meanwhile.
func TestShutdownEndsWatches(t *testing.T) {
	ip := nodetest.New(t)
	n := ip.Start("a", 1)
	ip.Leader()
	nodetest.MustCall(t, n, "POST", "/management/v1/regions", `{"name":"orders","type":"REPLICATE"}`, 201)

	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, "GET", n.RESTURL()+"/kv/v1/watch?region=orders", nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	r := bufio.NewReader(resp.Body)
	block := func() string {
		t.Helper()
		var b strings.Builder
		for {
			line, err := r.ReadString('\n')
			if err != nil {
				t.Fatalf("read the stream: %v (got %q)", err, b.String())
			}
			if line == "\n" {
				return b.String()
			}
			b.WriteString(line)
		}
	}
	ready := block()
	if !strings.HasPrefix(ready, "event: ready\nid: ") {
		t.Fatalf("got %q, want ready", ready)
	}
	token := strings.TrimPrefix(strings.Split(ready, "\n")[1], "id: ")
	if m := nodetest.MustCall(t, n, "GET", "/metrics", "", 200); !strings.Contains(m.Body, "\nkvnode_watchers 1\n") {
		t.Errorf("the metrics do not count the open watch (kvnode_watchers 1)")
	}

	start := time.Now()
	done := make(chan error, 1)
	go func() { done <- n.Shutdown() }()
	got := block()
	want := "event: error\nid: " + token + "\ndata: {\"type\":\"error\",\"cause\":\"the member is shutting down; resume from token on another member\",\"token\":\"" + token + "\"}\n"
	if got != want {
		t.Errorf("got %q, want %q", got, want)
	}
	if err := <-done; err != nil {
		t.Errorf("shutdown: %v", err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("shutdown took %v with a watch open, want well under --shutdown-timeout (10s)", d)
	}
	delete(ip.Nodes, "a")
}
