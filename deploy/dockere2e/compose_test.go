//go:build docker

// Package dockere2e tests the image and docker-compose.yml against a real
// Docker engine: `go test -tags docker ./deploy/dockere2e`. It is behind a
// build tag because it needs an engine; .ci/run runs it whenever `docker
// info` answers, and says so when it cannot.
package dockere2e

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/kvnode/kvnode/internal/ports"
	"github.com/kvnode/kvnode/internal/waitfor"
)

// repoRoot is the repository, two levels above this package.
func repoRoot(t *testing.T) string {
	t.Helper()
	_, file, _, _ := runtime.Caller(0)
	return filepath.Clean(filepath.Join(filepath.Dir(file), "..", ".."))
}

// compose runs the Compose tool (docker compose, else docker-compose).
type compose struct {
	t       *testing.T
	root    string
	project string
	env     []string
	argv    []string
}

func newCompose(t *testing.T, root, project string, env []string) *compose {
	c := &compose{t: t, root: root, project: project, env: env}
	if exec.Command("docker", "compose", "version").Run() == nil {
		c.argv = []string{"docker", "compose"}
	} else if _, err := exec.LookPath("docker-compose"); err == nil {
		c.argv = []string{"docker-compose"}
	} else {
		t.Fatal("neither `docker compose` nor docker-compose is installed")
	}
	return c
}

func (c *compose) run(args ...string) string {
	c.t.Helper()
	argv := append(append([]string{}, c.argv...), append([]string{"-p", c.project}, args...)...)
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Dir = c.root
	cmd.Env = append(os.Environ(), c.env...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		c.t.Fatalf("%s: %v\n%s", strings.Join(argv, " "), err, out)
	}
	return string(out)
}

func docker(t *testing.T, args ...string) string {
	t.Helper()
	out, err := exec.Command("docker", args...).CombinedOutput()
	if err != nil {
		t.Fatalf("docker %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return strings.TrimSpace(string(out))
}

// freePorts are the published ports: containers restart on them, so they
// come from below the ephemeral range (package ports says why).
func freePorts(t *testing.T, n int) []int {
	t.Helper()
	ps, err := ports.Stable(n)
	if err != nil {
		t.Fatal(err)
	}
	return ps
}

// buildImage builds the image as `make image` does, tagged after the
// project, and removes it when the test ends.
func buildImage(t *testing.T, root, project string) string {
	t.Helper()
	image := "kvnode:" + project
	build := exec.Command("go", "build", "-trimpath", "-ldflags", "-s -w -X main.version=e2e", "-o", "bin/kvnode", "./cmd/kvnode")
	build.Dir = root
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build: %v\n%s", err, out)
	}
	docker(t, "build", "-q", "-f", filepath.Join(root, "deploy", "Dockerfile"), "-t", image, root)
	t.Cleanup(func() { _ = exec.Command("docker", "rmi", "-f", image).Run() })
	return image
}

type reply struct {
	status int
	body   string
}

func call(method, url, body string) (reply, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, method, url, strings.NewReader(body))
	if err != nil {
		return reply{}, err
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return reply{}, err
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return reply{resp.StatusCode, string(b)}, nil
}

// composeContainers names the project's three members' containers
// (Compose v1 spells them project_kvnode-0_1, v2 project-kvnode-0-1).
func composeContainers(t *testing.T, project string) []string {
	t.Helper()
	var out []string
	for i := 0; i < 3; i++ {
		name := fmt.Sprintf("%s_kvnode-%d_1", project, i)
		if exec.Command("docker", "inspect", name).Run() != nil {
			name = fmt.Sprintf("%s-kvnode-%d-1", project, i)
		}
		out = append(out, name)
	}
	return out
}

// TestComposeCluster builds the image, brings the compose cluster up and
// puts it through a killed member, a member cut off the network, and a
// restart of the whole cluster, checking that no acknowledged write is
// lost; everything it creates is named after its own project and removed.
func TestComposeCluster(t *testing.T) {
	if out, err := exec.Command("docker", "info").CombinedOutput(); err != nil {
		t.Fatalf("this test needs a Docker engine (run it only where `docker info` works): %v\n%s", err, out)
	}
	root := repoRoot(t)
	project := fmt.Sprintf("kvnodee2e%d", os.Getpid())
	image := buildImage(t, root, project)

	ports := freePorts(t, 3)
	env := []string{"KVNODE_IMAGE=" + image}
	urls := make([]string, 3)
	for i, p := range ports {
		env = append(env, fmt.Sprintf("KVNODE_PORT_%d=%d", i, p))
		urls[i] = fmt.Sprintf("http://127.0.0.1:%d", p)
	}
	c := newCompose(t, root, project, env)
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("logs:\n%s", c.run("logs", "--tail", "40"))
		}
		c.run("down", "-v", "--remove-orphans")
	})
	start := time.Now()
	c.run("up", "-d", "--no-build")
	ready := func(u string) bool {
		r, err := call("GET", u+"/readyz", "")
		return err == nil && r.status == 200
	}
	waitfor.Cond(t, 60*time.Second, "three ready members", func() bool {
		return ready(urls[0]) && ready(urls[1]) && ready(urls[2])
	})
	t.Logf("three members ready %v after `up -d`", time.Since(start).Round(100*time.Millisecond))
	if d := time.Since(start); d > 30*time.Second {
		t.Errorf("the cluster took %v to become ready, want under 30s", d)
	}

	// The compose healthcheck (`/kvnode healthcheck` inside the scratch
	// image) reports every member healthy.
	names := composeContainers(t, project)
	waitfor.Cond(t, 60*time.Second, "Docker to report every member healthy", func() bool {
		for _, ctr := range names {
			if docker(t, "inspect", "-f", "{{.State.Health.Status}}", ctr) != "healthy" {
				return false
			}
		}
		return true
	})
	t.Logf("Docker reports all three healthy %v after `up -d`", time.Since(start).Round(100*time.Millisecond))

	if r, err := call("POST", urls[0]+"/management/v1/regions", `{"name":"orders","type":"REPLICATE"}`); err != nil || r.status != 201 {
		t.Fatalf("create region: %v %v", r, err)
	}
	if r, err := call("POST", urls[1]+"/management/v1/regions", `{"name":"events","type":"PARTITION"}`); err != nil || r.status != 201 {
		t.Fatalf("create region: %v %v", r, err)
	}
	acked := map[string]string{}
	// put writes key through member i, retrying while a failover makes it
	// answer 503; only a 200 counts as acknowledged.
	put := func(i int, region, key string) {
		t.Helper()
		val := fmt.Sprintf(`{"k":%q}`, key)
		var last reply
		deadline := time.Now().Add(30 * time.Second)
		for time.Now().Before(deadline) {
			r, err := call("PUT", urls[i]+"/kv/v1/"+region+"/"+key, val)
			if err == nil && r.status == 200 {
				acked[region+"/"+key] = val
				return
			}
			last = r
			time.Sleep(200 * time.Millisecond)
		}
		t.Fatalf("PUT %s/%s via member %d: %v", region, key, i, last)
	}
	var lastMiss string
	checkAll := func(i int, stale bool) bool {
		for rk, val := range acked {
			u := urls[i] + "/kv/v1/" + rk
			if stale {
				u += "?consistency=stale"
			}
			r, err := call("GET", u, "")
			if err != nil || r.status != 200 || r.body != val {
				lastMiss = fmt.Sprintf("member %d: GET %s = %v %v, want %s", i, rk, r, err, val)
				return false
			}
		}
		return true
	}
	for i := 0; i < 30; i++ {
		put(i%3, "orders", fmt.Sprintf("a%d", i))
		put((i+1)%3, "events", fmt.Sprintf("a%d", i))
	}

	// docker kill one member: writes go on through the others.
	victim := names[1]
	docker(t, "kill", victim)
	for i := 0; i < 20; i++ {
		put([]int{0, 2}[i%2], "orders", fmt.Sprintf("b%d", i))
		put([]int{2, 0}[i%2], "events", fmt.Sprintf("b%d", i))
	}
	for _, i := range []int{0, 2} {
		if !checkAll(i, false) {
			t.Fatalf("member %d lost an acknowledged write after the kill: %s", i, lastMiss)
		}
	}
	docker(t, "start", victim)
	waitfor.Cond(t, 60*time.Second, "the killed member to come back and catch up", func() bool {
		return ready(urls[1]) && checkAll(1, true)
	})

	// Cut one member off the network: the others go on; back, it catches up.
	network := project + "_kvnet"
	if exec.Command("docker", "network", "inspect", network).Run() != nil {
		network = project + "-kvnet"
	}
	cut := names[2]
	docker(t, "network", "disconnect", network, cut)
	for i := 0; i < 20; i++ {
		put(i%2, "orders", fmt.Sprintf("c%d", i))
		put((i+1)%2, "events", fmt.Sprintf("c%d", i))
	}
	docker(t, "network", "connect", "--alias", "kvnode-2", network, cut)
	waitfor.Cond(t, 90*time.Second, "the cut-off member to catch up", func() bool {
		return ready(urls[2]) && checkAll(2, true)
	})

	// Restart the whole cluster, the members in reverse order so that they
	// come back at each other's IPs (as pods rescheduled together would):
	// the data survives and every Raft group elects a leader again.
	containers := names
	ips := func() string {
		var out []string
		for _, ctr := range containers {
			out = append(out, docker(t, "inspect", "-f", "{{range .NetworkSettings.Networks}}{{.IPAddress}}{{end}}", ctr))
		}
		return strings.Join(out, " ")
	}
	before := ips()
	c.run("stop")
	for i := len(containers) - 1; i >= 0; i-- {
		docker(t, "start", containers[i])
	}
	t.Logf("member IPs before the restart %s, after %s", before, ips())
	allThere := func(when string) {
		t.Helper()
		waitfor.Cond(t, 90*time.Second, "the cluster to be ready "+when, func() bool {
			return ready(urls[0]) && ready(urls[1]) && ready(urls[2])
		})
		for i := 0; i < 3; i++ {
			deadline := time.Now().Add(60 * time.Second)
			for !checkAll(i, false) {
				if time.Now().After(deadline) {
					t.Fatalf("member %d lost data %s: %s", i, when, lastMiss)
				}
				time.Sleep(500 * time.Millisecond)
			}
		}
	}
	allThere("after a full restart")

	// `down` removes the containers and the network but keeps the volumes:
	// `up` again finds every write.
	c.run("down")
	c.run("up", "-d", "--no-build")
	allThere("after `down` and `up`")
	t.Logf("%d acknowledged writes, all readable on every member after a kill, a partition, a full restart and down/up", len(acked))

	// `down -v` removes the data too (the cleanup runs it again, harmlessly).
	c.run("down", "-v")
	if left := docker(t, "volume", "ls", "-q", "--filter", "name="+project); left != "" {
		t.Errorf("`down -v` left volumes behind: %s", left)
	}
}
