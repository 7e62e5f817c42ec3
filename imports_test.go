package kvnode_test

import (
	"bufio"
	"bytes"
	"os/exec"
	"strings"
	"testing"
)

const module = "github.com/kvnode/kvnode"

const (
	raftPkg       = "github.com/hashicorp/raft"
	memberlistPkg = "github.com/hashicorp/memberlist"
	echoPkg       = "github.com/labstack/echo/v4"
	swguiPkg      = "github.com/swaggest/swgui"
	kinOpenAPIPkg = "github.com/getkin/kin-openapi"
	promPkg       = "github.com/prometheus/client_golang"
	promCommonPkg = "github.com/prometheus/common"
	promModelPkg  = "github.com/prometheus/client_model"
	chromedpPkg   = "github.com/chromedp"
)

// goList runs `go list` with a template over every package of the module.
func goList(t *testing.T, args ...string) map[string][]string {
	t.Helper()
	cmd := exec.Command("go", append([]string{"list"}, args...)...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list %v: %v\n%s", args, err, stderr.String())
	}
	res := map[string][]string{}
	sc := bufio.NewScanner(bytes.NewReader(out))
	sc.Buffer(make([]byte, 1<<20), 1<<24)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) == 0 {
			continue
		}
		res[fields[0]] = fields[1:]
	}
	return res
}

func rel(pkg string) string {
	if pkg == module {
		return "."
	}
	return strings.TrimPrefix(pkg, module+"/")
}

func isStdlib(pkg string) bool {
	first, _, _ := strings.Cut(pkg, "/")
	return !strings.Contains(first, ".")
}

// only marks a forbidden package without its sub-packages: a package
// below store may use store/transport but never store itself.
func only(pkg string) string { return "=" + pkg }

func hasPrefixPkg(pkg, prefix string) bool {
	return pkg == prefix || strings.HasPrefix(pkg, prefix+"/")
}

// TestImportRules keeps design.md §3 true: what each package must not
// depend on (transitively), and which packages alone may import Raft,
// memberlist and Echo directly.
func TestImportRules(t *testing.T) {
	deps := goList(t, "-f", `{{.ImportPath}} {{join .Deps " "}}`, "./...")
	imports := goList(t, "-f", `{{.ImportPath}} {{join .Imports " "}}`, "./...")
	if len(deps) < 5 {
		t.Fatalf("go list found only %d packages: %v", len(deps), deps)
	}

	// The chaos suite tests kvnode from outside, through HTTP and its
	// processes: none of its packages may reach the server's.
	server := []string{module + "/store", module + "/fsm", module + "/rest", module + "/cluster", module + "/node",
		module + "/oql", module + "/index", module + "/function", module + "/auth", raftPkg, memberlistPkg, echoPkg}
	forbidden := map[string][]string{
		"fsm":          {module + "/store", module + "/rest", module + "/cluster", echoPkg},
		"fsm/codec":    {module + "/fsm", module + "/store", module + "/oql", module + "/index", module + "/cluster", module + "/rest", raftPkg, memberlistPkg, echoPkg},
		"fsm/buckets":  {only(module + "/fsm"), module + "/store", module + "/oql", module + "/index", module + "/cluster", module + "/rest", module + "/partition", raftPkg, memberlistPkg, echoPkg},
		"fsm/applied":  {module, raftPkg, memberlistPkg, echoPkg},
		"fsm/snapio":   {module + "/fsm", module + "/store", module + "/oql", module + "/index", module + "/cluster", module + "/rest", module + "/region", raftPkg, memberlistPkg, echoPkg},
		"fsm/indexset": {module + "/fsm", module + "/store", module + "/oql", module + "/cluster", module + "/rest", raftPkg, memberlistPkg, echoPkg},
		"store":        {module + "/rest", module + "/store/regions", module + "/store/query", echoPkg},
		"cluster":      {raftPkg, module + "/store", module + "/fsm"},
		"oql":          {module + "/store", module + "/fsm", module + "/cluster", module + "/rest", raftPkg, memberlistPkg, echoPkg},
		// Finding a member in stored text: JSON and nothing of kvnode's.
		"oql/internal/member": {module, raftPkg, memberlistPkg, echoPkg},
		"index":               {module + "/store", module + "/fsm", module + "/oql", module + "/cluster", module + "/rest", raftPkg, memberlistPkg, echoPkg},
		"function":            {module + "/fsm", module + "/store", module + "/cluster", module + "/rest", raftPkg, memberlistPkg, echoPkg},
		"rest":                {raftPkg, module + "/fsm", memberlistPkg},
		"rest/input":          {echoPkg, "net/http", module + "/rest", module + "/store", module + "/fsm", module + "/cluster", module + "/oql", module + "/function", module + "/auth", raftPkg, memberlistPkg},
		// Which route needs which permission: pure, over auth's vocabulary.
		"rest/operations": {echoPkg, module + "/rest", module + "/store", module + "/fsm", module + "/cluster", module + "/oql", module + "/function", module + "/auth", raftPkg, memberlistPkg},
		"rest/access":     {echoPkg, module + "/rest", module + "/store", module + "/fsm", module + "/cluster", module + "/oql", module + "/function", module + "/region", raftPkg, memberlistPkg},
		"rest/jsonout":    {echoPkg, "net/http", module + "/rest", module + "/store", module + "/fsm", module + "/cluster", module + "/oql", module + "/function", module + "/auth", raftPkg, memberlistPkg},
		// The API's description and Swagger UI: data and a page, nothing
		// of kvnode's behaviour.
		"rest/openapi": {module, echoPkg, raftPkg, memberlistPkg},
		// HTTP conveniences that know nothing of the API's meaning.
		"rest/middleware": {only(module + "/rest"), module + "/store", module + "/fsm", module + "/cluster", module + "/oql", module + "/function", module + "/auth", raftPkg, memberlistPkg},
		// The SSE answer of a watch: plain net/http over region's
		// vocabulary; rest registers it and wraps it in Echo.
		// Streamed listings: plain net/http over region's vocabulary.
		"rest/liststream": {only(module + "/rest"), module + "/store", module + "/fsm", module + "/cluster", raftPkg, memberlistPkg, echoPkg},
		// The single-hop contract: the routing document and its headers.
		"rest/routing":    {only(module + "/rest"), module + "/store", module + "/fsm", module + "/cluster", raftPkg, memberlistPkg},
		"rest/watch":      {only(module + "/rest"), module + "/store", module + "/fsm", module + "/cluster", raftPkg, memberlistPkg, echoPkg},
		"store/catalog":   {module + "/store", module + "/fsm", module + "/rest", module + "/cluster", raftPkg, memberlistPkg, echoPkg},
		"store/listing":   {module + "/store", module + "/rest", module + "/cluster", memberlistPkg, echoPkg},
		"store/placement": {module + "/store", module + "/fsm", module + "/cluster", module + "/rest", memberlistPkg, echoPkg},
		"store/transport": {module + "/store", module + "/fsm", module + "/oql", module + "/cluster", module + "/rest", memberlistPkg, echoPkg},
		"store/regions":   {only(module + "/store"), module + "/store/raftgroup", module + "/store/transport", module + "/store/reconcile", module + "/cluster", module + "/rest", memberlistPkg, echoPkg},
		"store/rebalance": {only(module + "/store"), module + "/store/raftgroup", module + "/store/transport", module + "/store/reconcile", module + "/cluster", module + "/rest", memberlistPkg, echoPkg},
		"store/query":     {only(module + "/store"), module + "/store/raftgroup", module + "/store/transport", module + "/store/reconcile", module + "/cluster", module + "/rest", memberlistPkg, echoPkg},
		"store/forward":   {only(module + "/store"), module + "/cluster", module + "/rest", module + "/oql", memberlistPkg, echoPkg},
		"store/raftlog":   {module + "/store", module + "/fsm", module + "/cluster", module + "/rest", memberlistPkg, echoPkg},
		"store/datadir":   {module + "/store", module + "/fsm", module + "/cluster", module + "/rest", raftPkg, memberlistPkg, echoPkg},
		"store/reconcile": {only(module + "/store"), module + "/rest", module + "/oql", echoPkg},
		// Backups: taken through the Router's interface, restored offline.
		"store/backup": {only(module + "/store"), module + "/store/raftgroup", module + "/store/transport", module + "/store/reconcile", module + "/cluster", module + "/rest", memberlistPkg, echoPkg},
		// The backup file's format: bytes and a manifest, nothing of kvnode.
		"backup/archive":  {module},
		"store/raftgroup": {only(module + "/store"), module + "/cluster", module + "/rest", module + "/oql", module + "/partition", memberlistPkg, echoPkg},
		"partition":       {raftPkg, memberlistPkg, echoPkg, module + "/store", module + "/fsm", module + "/cluster"},
		// The web console: a page and its files, which reach the cluster
		// through the public API, from the browser only.
		"rest/console": {module, echoPkg, raftPkg, memberlistPkg},
		"chaos":        server,
		// The client commands speak REST only, as any client of the API does:
		// no package of the server, not even region's vocabulary.
		"cli": append([]string{module + "/region", module + "/partition", module + "/internal"}, server...),
		// The command line's typed values, as text: nothing of kvnode.
		"cli/scalar": {module},
		// Tables and cells for people: nothing of kvnode.
		"cli/render": {module},
		// The load tool is a client of the API like any other, as cli is:
		// REST only, no package of the server (its kvnode target goes
		// through package client, which hashes keys as the members do).
		// The engine knows its targets only by kvbench.Target: it imports
		// none of them, nor the command line.
		"bench/kvbench": append([]string{module + "/region", module + "/partition", module + "/internal", module + "/cli", module + "/chaos",
			module + "/bench/kvbench/kvrest", module + "/bench/kvbench/etcdjson", module + "/bench/kvbench/command"}, server...),
		"cmd/kvbench": append([]string{module + "/region", module + "/partition", module + "/internal", module + "/cli", module + "/chaos"}, server...),
		// Its targets and its command line too: kvnode's REST API and etcd's
		// JSON gateway are reached over the network (etcd's gRPC target is in
		// bench/etcd36, a module of its own, so that no etcd package enters
		// this module's go.mod).
		"bench/kvbench/kvrest":   append([]string{module + "/region", module + "/partition", module + "/internal", module + "/cli", module + "/chaos"}, server...),
		"bench/kvbench/etcdjson": append([]string{module + "/region", module + "/partition", module + "/internal", module + "/cli", module + "/chaos", module + "/bench/kvbench/kvrest"}, server...),
		"bench/kvbench/command":  append([]string{module + "/region", module + "/partition", module + "/internal", module + "/cli", module + "/chaos"}, server...),
		// The no-op HTTP server that compare.sh measures kvnode's reads
		// against: the standard library only.
		"bench/noophttp": {module},
		// The watch workload is a client of the API as kvbench is.
		"bench/kvbench/watchbench": append([]string{module + "/region", module + "/partition", module + "/internal", module + "/cli", module + "/chaos"}, server...),
		// The bucket move benchmark is a client of the API too.
		"bench/bucketmove": append([]string{module + "/region", module + "/partition", module + "/internal", module + "/cli", module + "/chaos"}, server...),
		// The sweep's chart is pure: points in, an SVG document out.
		"bench/kvbench/svgplot": {module},
		// The model states what the REST API promises, whatever serves it,
		// and is pure: no network, no processes.
		"chaos/model": {module, "net", "os/exec"},
		// The link proxies know members by index and IP, nothing more.
		"chaos/netproxy": {module},
		// A file system that loses what was not fsynced, for any program.
		"chaos/powerfs": {module},
		// The backends start, fault and stop clusters; what a run checks
		// is not theirs.
		"chaos/backend": append([]string{module + "/chaos/model"}, server...),
		// The clients reach members by URL; what runs them is not theirs.
		"chaos/workload": append([]string{module + "/chaos/backend", module + "/chaos/netproxy", module + "/chaos/powerfs"}, server...),
		// A node's metrics know Prometheus and nothing of kvnode: the
		// packages they observe declare the interfaces, node wires them.
		"metrics": {module, raftPkg, memberlistPkg, echoPkg},
		// Files kept in force and the TLS that reads them: files, TLS and
		// slog only; node wires them to listeners, auth and metrics.
		"internal/reload": {module, raftPkg, memberlistPkg, echoPkg, promPkg},
		// Copies and checksums a step at a time: the standard library only.
		"internal/chunked": {module, raftPkg, memberlistPkg, echoPkg, promPkg},
	}
	for pkg, list := range deps {
		r := rel(pkg)
		switch {
		case r == "region":
			for _, d := range list {
				// internal/chunked is standard-library code done a step
				// at a time (and uses only the standard library itself).
				if !isStdlib(d) && d != module+"/internal/chunked" {
					t.Errorf("region depends on %s; it may use only the standard library (and internal/chunked)", d)
				}
			}
		case r == "client" || hasPrefixPkg(r, "client/internal"):
			// The Go client: the standard library only, so that a program
			// importing it pulls in nothing of the server; its own
			// internal packages (the standard library only too) aside.
			for _, d := range list {
				if !isStdlib(d) && !hasPrefixPkg(d, module+"/client/internal") {
					t.Errorf("%s depends on %s; the Go client may use only the standard library (and client/internal)", r, d)
				}
			}
		case forbidden[r] != nil:
			for _, d := range list {
				for _, f := range forbidden[r] {
					if exact, ok := strings.CutPrefix(f, "="); ok && d == exact || !ok && hasPrefixPkg(d, f) {
						t.Errorf("%s depends on %s, which design.md §3 forbids", r, d)
					}
				}
			}
		}
	}

	// partition, oql and index are pure: no I/O, no randomness of their
	// own (oql's context deadlines come from its caller). (fmt reaches os
	// transitively, so this checks their imports.)
	for _, p := range []string{"partition", "oql", "index"} {
		for _, imp := range imports[module+"/"+p] {
			switch {
			case hasPrefixPkg(imp, "net"), hasPrefixPkg(imp, "os"), hasPrefixPkg(imp, "syscall"),
				p == "partition" && imp == "time", hasPrefixPkg(imp, "math/rand"), hasPrefixPkg(imp, "io"), imp == "log", hasPrefixPkg(imp, "log/slog"):
				t.Errorf("%s imports %s; it must stay pure (no I/O or randomness)", p, imp)
			}
		}
		if _, ok := imports[module+"/"+p]; !ok {
			t.Errorf("package %s not found by go list", p)
		}
	}

	// node wires the packages into a running member; only programs
	// (cmd/...) and its own test harness build on it, so that no library
	// package can reach the whole of kvnode. nodetest is for tests only.
	for pkg, list := range imports {
		r := rel(pkg)
		for _, imp := range list {
			switch {
			case imp == module+"/node/nodetest":
				t.Errorf("%s imports node/nodetest; only tests may", r)
			case imp == module+"/internal/golden" || imp == module+"/fsm/codec/codectest" || imp == module+"/internal/oqlspec" || imp == module+"/internal/ports" || imp == module+"/internal/promtest":
				t.Errorf("%s imports %s; only tests may", r, rel(imp))
			case (imp == module+"/internal/waitfor" || imp == module+"/internal/logtap") && r != "node/nodetest":
				t.Errorf("%s imports %s; only tests (and the test harness node/nodetest) may", r, rel(imp))
			case hasPrefixPkg(imp, module+"/node") && !strings.HasPrefix(r, "cmd/") && !strings.HasPrefix(r, "node/"):
				t.Errorf("%s imports %s; only programs (cmd/...) and node's own packages may", r, rel(imp))
			}
		}
	}

	directOnly := map[string][]string{
		raftPkg:       {"store", "fsm"},
		memberlistPkg: {"cluster"},
		echoPkg:       {"rest", "cmd/kvnode"},
		swguiPkg:      {"rest/openapi"},
		// One place builds and serves metrics; tests parse them with
		// internal/promtest.
		promPkg:       {"metrics"},
		promCommonPkg: {"internal/promtest"},
		promModelPkg:  {"internal/promtest"},
	}
	// kin-openapi checks the OpenAPI document in tests, and chromedp
	// drives the console in Chromium in tests; no kvnode binary links
	// them. (.Imports lists non-test imports only.)
	for pkg, list := range imports {
		for _, imp := range list {
			if hasPrefixPkg(imp, kinOpenAPIPkg) || hasPrefixPkg(imp, chromedpPkg) {
				t.Errorf("%s imports %s; only tests may", rel(pkg), imp)
			}
		}
	}
	for pkg, list := range imports {
		r := rel(pkg)
		for _, imp := range list {
			for lib, allowed := range directOnly {
				if !hasPrefixPkg(imp, lib) {
					continue
				}
				ok := false
				for _, a := range allowed {
					if r == a || strings.HasPrefix(r, a+"/") {
						ok = true
					}
				}
				if !ok {
					t.Errorf("%s imports %s; only %v may", r, imp, allowed)
				}
			}
		}
	}
}

// TestNoGrabBagPackages keeps util/common/models packages out.
func TestNoGrabBagPackages(t *testing.T) {
	for pkg := range goList(t, "-f", `{{.ImportPath}}`, "./...") {
		last := pkg[strings.LastIndex(pkg, "/")+1:]
		switch last {
		case "util", "utils", "common", "models", "helpers", "misc":
			t.Errorf("package %s: design.md forbids grab-bag packages", rel(pkg))
		}
	}
}
