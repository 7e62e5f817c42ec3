//go:build docker

package dockere2e

import (
	"fmt"
	"os"
	"os/exec"
	"testing"
	"time"

	"github.com/kvnode/kvnode/internal/waitfor"
)

// TestComposeTour runs the README's tour against a fresh compose cluster,
// as a newcomer does after `make image && docker compose up -d`: the root
// package's TestReadmeTour, told by KVNODE_TOUR_ADDR to use the first
// member (the tour's KV=http://localhost:8081, on this test's port).
func TestComposeTour(t *testing.T) {
	if out, err := exec.Command("docker", "info").CombinedOutput(); err != nil {
		t.Fatalf("this test needs a Docker engine (run it only where `docker info` works): %v\n%s", err, out)
	}
	root := repoRoot(t)
	project := fmt.Sprintf("kvnodetour%d", os.Getpid())
	image := buildImage(t, root, project)
	ports := freePorts(t, 3)
	env := []string{"KVNODE_IMAGE=" + image}
	for i, p := range ports {
		env = append(env, fmt.Sprintf("KVNODE_PORT_%d=%d", i, p))
	}
	c := newCompose(t, root, project, env)
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("logs:\n%s", c.run("logs", "--tail", "40"))
		}
		c.run("down", "-v", "--remove-orphans")
	})
	c.run("up", "-d", "--no-build")
	waitfor.Cond(t, 60*time.Second, "three ready members", func() bool {
		for _, p := range ports {
			if r, err := call("GET", fmt.Sprintf("http://127.0.0.1:%d/readyz", p), ""); err != nil || r.status != 200 {
				return false
			}
		}
		return true
	})
	tour := exec.Command("go", "test", "-count=1", "-run", "^TestReadmeTour$", ".")
	tour.Dir = root
	tour.Env = append(os.Environ(), fmt.Sprintf("KVNODE_TOUR_ADDR=localhost:%d", ports[0]))
	if out, err := tour.CombinedOutput(); err != nil {
		t.Fatalf("the README's tour against the compose cluster: %v\n%s", err, out)
	}
}
