package command

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/spf13/pflag"

	"github.com/kvnode/kvnode/bench/kvbench"
	"github.com/kvnode/kvnode/bench/kvbench/etcdjson"
	"github.com/kvnode/kvnode/bench/kvbench/kvrest"
	"github.com/kvnode/kvnode/bench/kvbench/watchbench"
)

// Exit codes.
const (
	exitOK      = 0
	exitFailed  = 1 // the run could not be set up, or a point had no successful operation
	exitUsage   = 2
	envPrefix   = "KVNODE_" // the credentials' variables are the kvnode client's
	usageHeader = `kvbench drives load against a kvnode cluster over its REST API (or, with
--target, an etcd cluster) and reports throughput and latency percentiles.

Usage: kvbench [flags]

Examples:
  kvbench --workload put --concurrency 1,16,64 --duration 10s --plot put.svg
  kvbench --workload get --consistency stale --keys 10000 --distribution zipf
  kvbench --workload mixed --read-percent 90 --rate 2000 --concurrency 64
  kvbench --create-region events:PARTITION --workload put --route leader \
          --endpoints http://127.0.0.1:8081,http://127.0.0.1:8082,http://127.0.0.1:8083
  kvbench --workload watch --watchers 1000 --rate 1000 --duration 30s -c 64
  kvbench --workload watch --target etcd --endpoints http://127.0.0.1:23791
  kvbench --target etcd --workload put-if-absent --endpoints http://127.0.0.1:2379

Workloads: put (PUT /kv/v1/{region}/{key}, upsert), get (GET, linearizable or
--consistency stale), put-if-absent (POST ?key=, fresh keys), cas (GET, then
PUT ?op=CAS {"@old","@new"}), mixed (get/put), multi-put (PUT k1,k2,... with an
array body, --batch keys), load (every key of --keys once, in order, by
multi-key PUTs of --batch keys: a bulk load, reported in entries/s), query (GET
/queries/adhoc?q=, or with --named-query POST /queries/{id}), watch (--watchers
SSE streams of GET /kv/v1/watch on the first endpoint, each live before
--rate writes/s (default 1000) flow for --duration over --keys keys to every
endpoint in turn; reports delivery latency, missing events and the watched
member's memory from its /metrics; --target etcd measures etcd the same way
through its v3 JSON gateway, POST /v3/watch and /v3/kv/put, on keys "{region}/...").

Targets (--target): kvnode; etcd, its v3 JSON gateway (/v3/kv/put, range, txn);
and in kvbench-etcd (bench/etcd36) etcd-grpc, its gRPC API through clientv3 with
one connection per client. For etcd, --region is a key prefix ("{region}/{key}"),
a get is linearizable or (--consistency stale) serializable, put-if-absent is a
txn If(CreateRevision(key) == 0) Then(Put), multi-put and load are txns of at
most 128 puts (--batch); cas and query are kvnode's.

Credentials: --user and --password-file (or --password), or KVNODE_USER and
KVNODE_PASSWORD (KVNODE_PASSWORD_FILE); against members started with
--client-cert-auth, --cert and --key (KVNODE_CERT, KVNODE_KEY), whose common
name is the user; --cacert (KVNODE_CACERT). A flag wins over its variable.

Flags:
`
)

// Target is a system kvbench can measure: --target's Name, and its Dial.
type Target struct {
	Name string
	Dial kvbench.Dial
}

// Targets are the targets of kvnode's module: kvnode's REST API, and etcd
// through its JSON gateway.
func Targets() []Target {
	return []Target{{kvbench.DefaultTarget, kvrest.Dial}, {"etcd", etcdjson.Dial}}
}

// Main is a kvbench program over targets: the command line of the
// process, interrupted by SIGTERM or SIGINT; it exits.
func Main(targets []Target) {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	code := Run(ctx, os.Args[1:], os.Environ(), os.Stdout, os.Stderr, targets)
	stop()
	os.Exit(code)
}

// Run is kvbench with a command line and environment: flags into a
// kvbench.Config, the run over the target it names, the plot. It returns
// the exit code.
func Run(ctx context.Context, args, env []string, stdout, stderr io.Writer, targets []Target) int {
	cfg := kvbench.Default()
	fs := pflag.NewFlagSet("kvbench", pflag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprint(stderr, usageHeader)
		fs.PrintDefaults()
	}
	var (
		passwordFile, consistency, distribution, concurrency, createRegion, plot string
		workload, route                                                          string
		jsonOut, quiet                                                           bool
		watch                                                                    = watchbench.Default()
	)
	fs.StringSliceVar(&cfg.Endpoints, "endpoints", cfg.Endpoints, "member base URLs, comma-separated or repeated")
	fs.BoolVar(&cfg.AllowNonLoopback, "allow-nonloopback", false, "allow endpoints that are not loopback addresses")
	fs.StringVar(&route, "route", string(cfg.Route), "round-robin: endpoints in turn; leader: each key to its group's leader (single hop, by the routing document)")
	fs.StringVarP(&cfg.User, "user", "u", "", "user for HTTP Basic authentication (env KVNODE_USER)")
	fs.StringVar(&cfg.Password, "password", "", "password (env KVNODE_PASSWORD); prefer --password-file")
	fs.StringVar(&passwordFile, "password-file", "", "file whose first line is the password (env KVNODE_PASSWORD_FILE)")
	fs.StringVar(&cfg.CACert, "cacert", "", "PEM file of the CA that signed the members' certificates (env KVNODE_CACERT)")
	fs.StringVar(&cfg.Cert, "cert", "", "PEM client certificate, with --key; its common name is the user for members with --client-cert-auth (env KVNODE_CERT)")
	fs.StringVar(&cfg.Key, "key", "", "PEM private key of --cert (env KVNODE_KEY)")
	fs.BoolVar(&cfg.Insecure, "insecure-skip-verify", false, "accept any server certificate (tests only)")
	fs.DurationVar(&cfg.Timeout, "timeout", cfg.Timeout, "bound on each request")
	fs.StringVar(&cfg.Region, "region", cfg.Region, "region to load")
	fs.StringVar(&createRegion, "create-region", "", "create the region first if absent, NAME:REPLICATE or NAME:PARTITION (sets --region)")
	fs.StringVarP(&workload, "workload", "w", string(cfg.Workload), "put, get, put-if-absent, cas, mixed, multi-put, load, query or watch")
	fs.StringVar(&consistency, "consistency", "linearizable", "reads (get, mixed, cas, query): linearizable or stale")
	fs.IntVar(&cfg.ReadPercent, "read-percent", cfg.ReadPercent, "percent of gets in the mixed workload")
	fs.IntVar(&cfg.Batch, "batch", cfg.Batch, "keys per request of multi-put")
	fs.StringVar(&cfg.Query, "query", cfg.Query, "OQL of the query workload; {region} is the region, $1.. a random customer id")
	fs.BoolVar(&cfg.NamedQuery, "named-query", false, "run the query as a named query (stored under --query-id) instead of ad hoc")
	fs.StringVar(&cfg.QueryID, "query-id", cfg.QueryID, "id of the named query")
	fs.IntVar(&cfg.Keys, "keys", cfg.Keys, "size of the key space")
	fs.StringVar(&cfg.KeyPrefix, "key-prefix", cfg.KeyPrefix, "prefix of every key")
	fs.IntVar(&cfg.ValueSize, "value-size", cfg.ValueSize, "bytes per value (an order-shaped JSON object)")
	fs.StringVar(&distribution, "distribution", "uniform", "key choice: uniform or zipf")
	fs.Float64Var(&cfg.ZipfS, "zipf-s", cfg.ZipfS, "zipf exponent s (> 1; larger is more skewed)")
	fs.Float64Var(&cfg.ZipfV, "zipf-v", cfg.ZipfV, "zipf offset v (≥ 1)")
	fs.StringVarP(&concurrency, "concurrency", "c", "16", "clients in flight; a list (1,16,64,256) sweeps them in turn")
	fs.Float64Var(&cfg.Rate, "rate", 0, "fixed rate in ops/s (open loop, latency from each op's due time); 0: closed loop")
	fs.DurationVarP(&cfg.Duration, "duration", "d", cfg.Duration, "measured time of each point")
	fs.DurationVar(&cfg.Warmup, "warmup", 0, "unmeasured load before each point")
	fs.Int64VarP(&cfg.MaxOps, "ops", "n", cfg.MaxOps, "at most this many operations per point (and per warm-up)")
	fs.BoolVar(&cfg.Preload, "preload", true, "write every key before the first point (not for put-if-absent)")
	fs.DurationVar(&cfg.PreloadTimeout, "preload-timeout", cfg.PreloadTimeout, "bound on the preload")
	fs.StringVar(&cfg.Target, "target", cfg.Target, "the system measured: "+targetNames(targets)+" (for etcd, --region is a key prefix)")
	fs.IntVar(&watch.Watchers, "watchers", watch.Watchers, "watch: SSE streams opened on the first endpoint")
	fs.DurationVar(&watch.ReadyTimeout, "ready-timeout", watch.ReadyTimeout, "watch: bound on the wait for every watcher to be live")
	fs.DurationVar(&watch.DrainTimeout, "drain-timeout", watch.DrainTimeout, "watch: bound on the wait, after the last write, for every event to arrive")
	fs.Uint64Var(&cfg.Seed, "seed", cfg.Seed, "random seed")
	fs.StringVar(&cfg.Label, "label", "", "free text echoed in every result")
	fs.BoolVar(&jsonOut, "json", false, "print one JSON object per point instead of the summary")
	fs.StringVar(&plot, "plot", "", "write an SVG of throughput and p99 against concurrency to this file")
	fs.BoolVarP(&quiet, "quiet", "q", false, "no progress lines on standard error")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, pflag.ErrHelp) {
			return exitOK
		}
		fmt.Fprintf(stderr, "kvbench: %v (kvbench --help lists the flags)\n", err)
		return exitUsage
	}
	usage := func(err error) int {
		fmt.Fprintln(stderr, "kvbench:", err)
		return exitUsage
	}
	if fs.NArg() > 0 {
		return usage(fmt.Errorf("unexpected argument %q", fs.Arg(0)))
	}
	fromEnv(fs, env, &cfg, &passwordFile)
	cfg.Workload, cfg.Route = kvbench.Workload(workload), kvbench.Route(route)
	var err error
	if cfg.Concurrency, err = kvbench.ParseConcurrency(concurrency); err != nil {
		return usage(err)
	}
	switch consistency {
	case "linearizable":
	case "stale":
		cfg.Stale = true
	default:
		return usage(fmt.Errorf("--consistency %q: want linearizable or stale", consistency))
	}
	switch distribution {
	case "uniform":
	case "zipf":
		cfg.Zipf = true
	default:
		return usage(fmt.Errorf("--distribution %q: want uniform or zipf", distribution))
	}
	if createRegion != "" {
		name, kind, err := kvbench.ParseRegionSpec(createRegion)
		if err != nil {
			return usage(err)
		}
		if fs.Changed("region") && cfg.Region != name {
			return usage(fmt.Errorf("--region %s and --create-region %s name different regions", cfg.Region, name))
		}
		cfg.Region, cfg.CreateRegion = name, kind
	}
	if passwordFile != "" {
		if cfg.Password != "" {
			return usage(errors.New("give the password once: --password or --password-file"))
		}
		data, err := os.ReadFile(passwordFile)
		if err != nil {
			return usage(fmt.Errorf("--password-file: %w", err))
		}
		line, _, _ := strings.Cut(string(data), "\n")
		cfg.Password = strings.TrimSuffix(line, "\r")
	}
	out := kvbench.Output{Results: stdout, JSON: jsonOut, Progress: stderr}
	if quiet {
		out.Progress = nil
	}
	if cfg.Workload == kvbench.Watch {
		return runWatch(ctx, fs, cfg, watch, out, stderr)
	}
	if err := cfg.Validate(); err != nil {
		return usage(err)
	}
	dial := findTarget(targets, cfg.Target)
	if dial == nil {
		return usage(fmt.Errorf("--target %q: want %s", cfg.Target, targetNames(targets)))
	}
	results, err := kvbench.Run(ctx, cfg, dial, out)
	if errors.Is(err, context.Canceled) {
		fmt.Fprintln(stderr, "kvbench: interrupted")
	} else if err != nil {
		fmt.Fprintln(stderr, "kvbench:", err)
		if len(results) == 0 {
			return exitFailed
		}
	}
	if plot != "" && len(results) > 0 {
		if err := writePlot(plot, results); err != nil {
			fmt.Fprintln(stderr, "kvbench:", err)
			return exitFailed
		}
	}
	for _, r := range results {
		if r.OK == 0 {
			fmt.Fprintf(stderr, "kvbench: no operation succeeded at concurrency %d\n", r.Concurrency)
			return exitFailed
		}
	}
	if err != nil {
		return exitFailed
	}
	return exitOK
}

func findTarget(targets []Target, name string) kvbench.Dial {
	for _, t := range targets {
		if t.Name == name {
			return t.Dial
		}
	}
	return nil
}

func targetNames(targets []Target) string {
	names := make([]string, len(targets))
	for i, t := range targets {
		names[i] = t.Name
	}
	return strings.Join(names, ", ")
}

// runWatch runs the watch workload: kvbench's flags for the connection,
// region, keys and rate (1000 writes/s and values without padding unless
// given), watchbench's for the watchers.
func runWatch(ctx context.Context, fs *pflag.FlagSet, cfg kvbench.Config, watch watchbench.Config, out kvbench.Output, stderr io.Writer) int {
	if !fs.Changed("rate") {
		cfg.Rate = watch.Rate
	}
	if !fs.Changed("value-size") {
		cfg.ValueSize = watch.ValueSize
	}
	cfg.Preload = false
	watch.Config = cfg
	if err := watch.Validate(); err != nil {
		fmt.Fprintln(stderr, "kvbench:", err)
		return exitUsage
	}
	res, err := watchbench.Run(ctx, watch, out)
	switch {
	case errors.Is(err, context.Canceled):
		fmt.Fprintln(stderr, "kvbench: interrupted")
		return exitFailed
	case err != nil:
		fmt.Fprintln(stderr, "kvbench:", err)
		return exitFailed
	case res.WritesOK == 0:
		fmt.Fprintln(stderr, "kvbench: no write succeeded")
		return exitFailed
	case res.Missing > 0:
		fmt.Fprintf(stderr, "kvbench: %d acknowledged writes never reached their watcher (%d watchers)\n", res.Missing, res.WatchersMissing)
		return exitFailed
	}
	return exitOK
}

// fromEnv sets the credentials and TLS files the command line left alone
// from the kvnode client's variables. A password on the command line
// (--password or --password-file) wins over both password variables.
func fromEnv(fs *pflag.FlagSet, env []string, cfg *kvbench.Config, passwordFile *string) {
	vars := map[string]*string{"user": &cfg.User, "password": &cfg.Password, "password-file": passwordFile,
		"cacert": &cfg.CACert, "cert": &cfg.Cert, "key": &cfg.Key}
	passwordFlag := fs.Changed("password") || fs.Changed("password-file")
	for _, kv := range env {
		k, v, _ := strings.Cut(kv, "=")
		for flag, dst := range vars {
			if k != envPrefix+strings.ToUpper(strings.ReplaceAll(flag, "-", "_")) || fs.Changed(flag) {
				continue
			}
			if strings.HasPrefix(flag, "password") && passwordFlag {
				continue
			}
			*dst = v
		}
	}
}

func writePlot(path string, results []kvbench.Result) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := kvbench.WritePlot(f, results); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
