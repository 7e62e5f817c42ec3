package node_test

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"time"

	"github.com/kvnode/kvnode/node"
)

// A program embeds a single-node cluster: defaults, a few fields, Start,
// and Shutdown when done.
func ExampleStart() {
	dir, err := os.MkdirTemp("", "kvnode-example")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer os.RemoveAll(dir)

	cfg := node.Default()
	cfg.Name = "embedded"
	cfg.DataDir = filepath.Join(dir, "data")
	cfg.HTTPAddr, cfg.InternalAddr, cfg.GossipAddr = "127.0.0.1:0", "127.0.0.1:0", "127.0.0.1:0"
	cfg.Logger = slog.New(slog.DiscardHandler)
	n, err := node.Start(context.Background(), cfg)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer n.Shutdown()

	// Ready once the node has elected itself.
	for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		resp, err := http.Get("http://" + n.HTTPAddr() + "/readyz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				break
			}
		}
	}
	resp, err := http.Get("http://" + n.HTTPAddr() + "/kv/v1/ping")
	if err != nil {
		fmt.Println(err)
		return
	}
	resp.Body.Close()
	fmt.Println(n.Name(), resp.StatusCode)
	// Output: embedded 200
}
