package backend

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"

	"github.com/kvnode/kvnode/client"
)

// ComposeConfig describes the docker-compose cluster of docker-compose.yml.
type ComposeConfig struct {
	Root    string // the repository: docker-compose.yml is here
	Project string // compose project name; containers, network and volumes are named after it
	Image   string // the kvnode image (built beforehand, FROM scratch)
	Ports   []int  // host ports of the members' REST APIs
	Regions []RegionSpec
}

// ComposeCluster is the compose backend: faults are docker kill, docker
// pause and docker network disconnect on the cluster of docker-compose.yml.
// A disconnected member loses its published port too, so clients cannot
// reach it either; and Docker cannot cut one direction of a link, so
// CutOneWay and Slow are not supported.
type ComposeCluster struct {
	cfg        ComposeConfig
	argv       []string // docker compose, or docker-compose
	containers []string
	network    string

	mu           sync.Mutex
	disconnected map[int]bool
}

// StartCompose brings the cluster up, waits until every member is ready
// and creates the regions.
func StartCompose(ctx context.Context, cfg ComposeConfig) (*ComposeCluster, error) {
	c := &ComposeCluster{cfg: cfg, disconnected: map[int]bool{}}
	if exec.Command("docker", "compose", "version").Run() == nil {
		c.argv = []string{"docker", "compose"}
	} else if _, err := exec.LookPath("docker-compose"); err == nil {
		c.argv = []string{"docker-compose"}
	} else {
		return nil, errors.New("neither `docker compose` nor docker-compose is installed")
	}
	if _, err := c.compose("up", "-d", "--no-build"); err != nil {
		_ = c.Close()
		return nil, err
	}
	for i := range cfg.Ports {
		name := fmt.Sprintf("%s_kvnode-%d_1", cfg.Project, i)
		if exec.Command("docker", "inspect", name).Run() != nil {
			name = fmt.Sprintf("%s-kvnode-%d-1", cfg.Project, i)
		}
		c.containers = append(c.containers, name)
	}
	c.network = cfg.Project + "_kvnet"
	for i := range cfg.Ports {
		if err := c.WaitReady(ctx, i); err != nil {
			_ = c.Close()
			return nil, err
		}
	}
	api, err := client.New(client.Config{Endpoints: []string{c.URL(0)}, DisableSingleHop: true})
	if err != nil {
		_ = c.Close()
		return nil, err
	}
	defer api.Close()
	for _, r := range cfg.Regions {
		kind := client.Replicate
		if r.Partitioned {
			kind = client.Partition
		}
		err := api.CreateRegion(ctx, client.RegionInfo{Name: r.Name, Type: kind})
		if err != nil && !errors.Is(err, client.ErrConflict) {
			_ = c.Close()
			return nil, fmt.Errorf("create region %s: %w", r.Name, err)
		}
	}
	return c, nil
}

func (c *ComposeCluster) compose(args ...string) (string, error) {
	argv := append(append([]string{}, c.argv...), append([]string{"-p", c.cfg.Project}, args...)...)
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Dir = c.cfg.Root
	cmd.Env = os.Environ()
	cmd.Env = append(cmd.Env, "KVNODE_IMAGE="+c.cfg.Image)
	for i, p := range c.cfg.Ports {
		cmd.Env = append(cmd.Env, fmt.Sprintf("KVNODE_PORT_%d=%d", i, p))
	}
	out, err := cmd.CombinedOutput()
	if err != nil {
		return string(out), fmt.Errorf("%s: %w\n%s", strings.Join(argv, " "), err, out)
	}
	return string(out), nil
}

func docker(args ...string) error {
	var out bytes.Buffer
	cmd := exec.Command("docker", args...)
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("docker %s: %w: %s", strings.Join(args, " "), err, strings.TrimSpace(out.String()))
	}
	return nil
}

func (c *ComposeCluster) Size() int         { return len(c.cfg.Ports) }
func (c *ComposeCluster) Name(i int) string { return fmt.Sprintf("kvnode-%d", i) }
func (c *ComposeCluster) URL(i int) string  { return fmt.Sprintf("http://127.0.0.1:%d", c.cfg.Ports[i]) }

func (c *ComposeCluster) Kill(i int) error   { return docker("kill", c.containers[i]) }
func (c *ComposeCluster) Stop(i int) error   { return docker("stop", "-t", "30", c.containers[i]) }
func (c *ComposeCluster) Start(i int) error  { return docker("start", c.containers[i]) }
func (c *ComposeCluster) Pause(i int) error  { return docker("pause", c.containers[i]) }
func (c *ComposeCluster) Resume(i int) error { return docker("unpause", c.containers[i]) }

func (c *ComposeCluster) Isolate(i int) error {
	if err := docker("network", "disconnect", c.network, c.containers[i]); err != nil {
		return err
	}
	c.mu.Lock()
	c.disconnected[i] = true
	c.mu.Unlock()
	return nil
}

func (c *ComposeCluster) LinkFaults() bool             { return false }
func (c *ComposeCluster) CutOneWay(from, to int) error { return ErrUnsupported }
func (c *ComposeCluster) Slow(from, to int, ms int) error {
	return ErrUnsupported
}

// PowerFaults is false: a container's volume is a directory of the
// host's file system, whose page cache a container's end does not lose,
// and Docker cannot put a file system of ours under it.
func (c *ComposeCluster) PowerFaults() bool { return false }

func (c *ComposeCluster) PowerCut(members ...int) ([]string, error) { return nil, ErrUnsupported }

// Heal connects disconnected members again, under their service name.
func (c *ComposeCluster) Heal() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	var errs []error
	for i := range c.disconnected {
		if err := docker("network", "connect", "--alias", c.Name(i), c.network, c.containers[i]); err != nil {
			errs = append(errs, err)
			continue
		}
		delete(c.disconnected, i)
	}
	return errors.Join(errs...)
}

func (c *ComposeCluster) WaitReady(ctx context.Context, i int) error {
	return waitReady(ctx, c.URL(i), c.Name(i), nil)
}

// Logs is the members' recent logs.
func (c *ComposeCluster) Logs() string {
	out, _ := c.compose("logs", "--tail", "60")
	return out
}

// Close removes the containers, the network and the volumes.
func (c *ComposeCluster) Close() error {
	for i := range c.containers {
		_ = docker("unpause", c.containers[i]) // a paused container does not stop
	}
	_, err := c.compose("down", "-v", "--remove-orphans", "-t", "5")
	return err
}

var _ Cluster = (*ComposeCluster)(nil)
var _ Cluster = (*ProcCluster)(nil)
