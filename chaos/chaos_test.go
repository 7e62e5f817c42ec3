//go:build chaos

package chaos

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/kvnode/kvnode/chaos/backend"
	"github.com/kvnode/kvnode/internal/ports"
)

var (
	flagDuration   = flag.Duration("chaos.duration", 20*time.Second, "how long each scenario runs")
	flagRuns       = flag.Int("chaos.runs", 1, "how many times every scenario runs")
	flagScenarios  = flag.String("chaos.scenarios", "", "comma-separated scenarios to run (default: all)")
	flagResults    = flag.String("chaos.results", "", "folder for runs.jsonl and the histories of failed runs (default: a temporary one)")
	flagRunlog     = flag.String("chaos.runlog", "", "file every run's report is appended to, one JSON per line (default: runs.jsonl in -chaos.results)")
	flagDoc        = flag.String("chaos.doc", "", "regenerate this Markdown file (docs/chaos.md) from every run in -chaos.runlog")
	flagBackend    = flag.String("chaos.backend", "proc", "proc (processes on 127.0.0.0/8) or compose")
	flagClients    = flag.Int("chaos.clients", 6, "clients per region")
	flagFirstIP    = flag.String("chaos.first-ip", "127.0.0.11", "proc backend: member i listens on this IP + i")
	flagConcurrent = flag.Int("chaos.concurrent", 1, "chaos clusters running on this host at once, this one included (recorded, so that runs which shared the CPUs are reported apart)")
	flagWatchIdle  = flag.Duration("chaos.watch-idle", 4*time.Second, "the watcher leaves a member from which nothing came for this long (events flow all through the load; a member sends a keep-alive every 15 s), so a paused or cut-off member is left for another")
	flagStale      = flag.Bool("chaos.stale-reads", false, "read with ?consistency=stale, which is not linearizable: a check of the checker, whose runs must fail (they are not recorded in -chaos.runlog)")
)

// chaosRegions are loaded in every run: one of each kind.
var chaosRegions = []backend.RegionSpec{{Name: "chaosr"}, {Name: "chaosp", Partitioned: true}}

// kvnodeFlags are the process members' flags. --watch-history keeps
// enough events per group (the probes write hundreds a second) that the
// watcher's resume after any fault of a run finds its token: a 410 fails
// the run.
func kvnodeFlags() []string {
	return []string{"--regions", "chaosr:REPLICATE,chaosp:PARTITION", "--partition-groups", "3", "--log-level", "info", "--watch-history", "50000"}
}

// TestChaos runs every scenario -chaos.runs times for -chaos.duration
// each, on a fresh cluster every time, and fails on any run that is not
// linearizable, lost an acknowledged write or left replicas apart.
func TestChaos(t *testing.T) {
	results := *flagResults
	if results == "" {
		results = t.TempDir()
	}
	if err := os.MkdirAll(results, 0o755); err != nil {
		t.Fatal(err)
	}
	runlog := *flagRunlog
	if runlog == "" {
		runlog = filepath.Join(results, "runs.jsonl")
	}
	var scenarios []Scenario
	if *flagScenarios == "" {
		scenarios = Scenarios()
	} else {
		for _, name := range strings.Split(*flagScenarios, ",") {
			s, ok := ScenarioNamed(strings.TrimSpace(name))
			if !ok {
				t.Fatalf("no scenario %q", name)
			}
			scenarios = append(scenarios, s)
		}
	}
	bin, err := backend.BuildKvnode(t.Context(), t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	image := ""
	if *flagBackend == "compose" {
		image = buildImage(t, bin)
	}
	for run := 1; run <= *flagRuns; run++ {
		for _, sc := range scenarios {
			t.Run(fmt.Sprintf("%s/%d", sc.Name, run), func(t *testing.T) {
				if sc.NeedsLinkFaults && *flagBackend == "compose" {
					t.Skipf("%s cuts one direction of a link, which Docker networks cannot", sc.Name)
				}
				if sc.NeedsPowerFaults && *flagBackend == "compose" {
					t.Skipf("%s cuts members' power, which needs the file system of the process backend (chaos/powerfs) under their data", sc.Name)
				}
				rep := runScenario(t, bin, image, sc)
				if *flagStale {
					// The checker must have caught the stale reads.
					t.Log(rep.Summary())
					if rep.OK() {
						t.Errorf("stale reads passed as linearizable")
					}
					return
				}
				if err := appendReport(runlog, rep); err != nil {
					t.Errorf("record the run: %v", err)
				}
				t.Log(rep.Summary())
				if !rep.OK() {
					t.Errorf("run failed: %s", strings.Join(rep.Problems(), "; "))
				}
			})
		}
	}
	if *flagDoc != "" {
		writeDoc(t, runlog)
	}
}

// TestChaosDoc only regenerates -chaos.doc from -chaos.runlog.
func TestChaosDoc(t *testing.T) {
	if *flagDoc == "" || *flagRunlog == "" {
		t.Skip("give -chaos.doc and -chaos.runlog")
	}
	writeDoc(t, *flagRunlog)
}

func writeDoc(t *testing.T, runlog string) {
	reports, err := LoadReports(runlog)
	if err != nil {
		t.Fatal(err)
	}
	if err := WriteDoc(*flagDoc, reports); err != nil {
		t.Fatal(err)
	}
	t.Logf("%s rewritten from %d runs in %s", *flagDoc, len(reports), runlog)
}

func runScenario(t *testing.T, bin, image string, sc Scenario) Report {
	dir := t.TempDir()
	var b backend.Cluster
	switch *flagBackend {
	case "proc":
		ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
		defer cancel()
		first, err := netip.ParseAddr(*flagFirstIP)
		if err != nil || !first.Is4() || !first.IsLoopback() {
			t.Fatalf("-chaos.first-ip %q: want an IPv4 address in 127.0.0.0/8", *flagFirstIP)
		}
		pc, err := backend.StartProcCluster(ctx, backend.ProcConfig{Binary: bin, Dir: dir, Flags: kvnodeFlags(), FirstIP: first, PowerFS: true})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			if t.Failed() {
				for i := range pc.Size() {
					keep := filepath.Join(os.TempDir(), fmt.Sprintf("kvnode-chaos-%s-%s.log", sc.Name, pc.Name(i)))
					if data, err := os.ReadFile(pc.LogPath(i)); err == nil && os.WriteFile(keep, data, 0o644) == nil {
						t.Logf("log of %s kept at %s", pc.Name(i), keep)
					}
				}
			}
			if err := pc.Close(); err != nil {
				t.Errorf("close cluster: %v", err)
			}
		})
		b = pc
	case "compose":
		ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
		defer cancel()
		cc, err := backend.StartCompose(ctx, backend.ComposeConfig{
			Root:    repoRoot(),
			Project: fmt.Sprintf("kvchaos%d", os.Getpid()),
			Image:   image,
			Ports:   freePorts(t, 3),
			Regions: chaosRegions,
		})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			if t.Failed() {
				t.Logf("logs:\n%s", cc.Logs())
			}
			if err := cc.Close(); err != nil {
				t.Errorf("compose down: %v", err)
			}
		})
		b = cc
	default:
		t.Fatalf("no backend %q: want proc or compose", *flagBackend)
	}
	return Execute(RunConfig{
		Backend:    b,
		Backends:   *flagBackend,
		Concurrent: *flagConcurrent,
		Scenario:   sc,
		Duration:   *flagDuration,
		Regions:    chaosRegions,
		Clients:    *flagClients,
		ResultsDir: *flagResults,
		Logf:       t.Logf,
		StaleReads: *flagStale,
		WatchIdle:  *flagWatchIdle,
	})
}

// repoRoot is the repository, one level above this package.
func repoRoot() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Clean(filepath.Join(filepath.Dir(file), ".."))
}

// buildImage builds the FROM-scratch image around bin, as `make image`
// does, under a name of this run, removed at the end.
func buildImage(t *testing.T, bin string) string {
	if out, err := exec.Command("docker", "info").CombinedOutput(); err != nil {
		t.Fatalf("-chaos.backend=compose needs a Docker engine: %v\n%s", err, out)
	}
	root := repoRoot()
	// The Dockerfile copies bin/kvnode from the build context.
	if err := os.MkdirAll(filepath.Join(root, "bin"), 0o755); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(bin)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, "bin", "kvnode"), data, 0o755); err != nil {
		t.Fatal(err)
	}
	image := fmt.Sprintf("kvnode:chaos%d", os.Getpid())
	if out, err := exec.Command("docker", "build", "-q", "-f", filepath.Join(root, "deploy", "Dockerfile"), "-t", image, root).CombinedOutput(); err != nil {
		t.Fatalf("docker build: %v\n%s", err, out)
	}
	t.Cleanup(func() { _ = exec.Command("docker", "rmi", "-f", image).Run() })
	return image
}

// freePorts are the compose cluster's published ports: containers restart
// on them, so they come from below the ephemeral range (package ports).
func freePorts(t *testing.T, n int) []int {
	ps, err := ports.Stable(n)
	if err != nil {
		t.Fatal(err)
	}
	return ps
}

func appendReport(path string, rep Report) error {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	defer f.Close()
	line, err := json.Marshal(rep)
	if err != nil {
		return err
	}
	_, err = f.Write(append(line, '\n'))
	return err
}
