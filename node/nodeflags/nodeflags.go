package nodeflags

import (
	"flag"
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"

	"github.com/kvnode/kvnode/node"
	"github.com/kvnode/kvnode/region"
	"github.com/kvnode/kvnode/store/raftgroup"
)

// EnvPrefix starts every environment variable that sets a flag:
// --http-addr is KVNODE_HTTP_ADDR.
const EnvPrefix = "KVNODE_"

// listValue is a comma-separated flag.
type listValue struct{ p *[]string }

func (l listValue) String() string {
	if l.p == nil {
		return ""
	}
	return strings.Join(*l.p, ",")
}

func (l listValue) Set(s string) error {
	*l.p = splitList(s)
	return nil
}

func splitList(s string) []string {
	var out []string
	for _, part := range strings.Split(s, ",") {
		if part = strings.TrimSpace(part); part != "" {
			out = append(out, part)
		}
	}
	return out
}

// regionsValue parses --regions name:TYPE,...
type regionsValue struct{ p *[]region.Info }

func (r regionsValue) String() string {
	if r.p == nil {
		return ""
	}
	parts := make([]string, 0, len(*r.p))
	for _, info := range *r.p {
		parts = append(parts, info.Name+":"+string(info.Kind))
	}
	return strings.Join(parts, ",")
}

func (r regionsValue) Set(s string) error {
	var out []region.Info
	seen := map[string]bool{}
	for _, spec := range splitList(s) {
		name, kind, ok := strings.Cut(spec, ":")
		if !ok {
			kind = string(region.Replicate)
		}
		k, err := region.ParseKind(kind)
		if err != nil {
			return fmt.Errorf("region %q: %w", spec, err)
		}
		if err := region.ValidateName(name); err != nil {
			return err
		}
		if seen[name] {
			return fmt.Errorf("region %q is listed twice", name)
		}
		seen[name] = true
		out = append(out, region.Info{Name: name, Kind: k})
	}
	*r.p = out
	return nil
}

// sizeValue parses byte sizes: 1048576, 512KiB, 16MiB, 1GiB.
// groupsValue is --partition-groups: a count, or "auto".
type groupsValue struct{ cfg *node.Config }

func (v groupsValue) String() string {
	if v.cfg == nil {
		return ""
	}
	if v.cfg.PartitionGroupsAuto {
		return "auto"
	}
	return strconv.Itoa(v.cfg.PartitionGroups)
}

func (v groupsValue) Set(s string) error {
	if strings.TrimSpace(s) == "auto" {
		v.cfg.PartitionGroupsAuto = true
		return nil
	}
	n, err := strconv.Atoi(strings.TrimSpace(s))
	if err != nil {
		return fmt.Errorf("want a number of partition groups, or auto")
	}
	v.cfg.PartitionGroups, v.cfg.PartitionGroupsAuto = n, false
	return nil
}

type sizeValue struct{ p *int64 }

func (v sizeValue) String() string {
	if v.p == nil {
		return ""
	}
	return strconv.FormatInt(*v.p, 10)
}

func (v sizeValue) Set(s string) error {
	n, err := ParseSize(s)
	if err != nil {
		return err
	}
	*v.p = n
	return nil
}

// ParseSize reads a byte size: 1048576, 512KiB, 16MiB, 1GiB.
func ParseSize(s string) (int64, error) {
	s = strings.TrimSpace(s)
	mult := int64(1)
	for _, u := range []struct {
		suffix string
		mult   int64
	}{{"GiB", 1 << 30}, {"MiB", 1 << 20}, {"KiB", 1 << 10}, {"B", 1}} {
		if strings.HasSuffix(s, u.suffix) {
			s, mult = strings.TrimSpace(strings.TrimSuffix(s, u.suffix)), u.mult
			break
		}
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n <= 0 || n > (1<<40)/mult {
		return 0, fmt.Errorf("size %q: want a positive number of bytes, optionally with KiB, MiB or GiB", s)
	}
	return n * mult, nil
}

// FlagSet declares every flag of the node; the flag names are the contract
// of design.md §4 plus a few operational knobs.
func FlagSet(cfg *node.Config, out io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet("kvnode", flag.ContinueOnError)
	fs.SetOutput(out)
	fs.StringVar(&cfg.Name, "name", cfg.Name, "node name, unique in the cluster (default: the host name)")
	fs.StringVar(&cfg.DataDir, "data-dir", cfg.DataDir, "directory for Raft logs and snapshots")
	fs.StringVar(&cfg.HTTPAddr, "http-addr", cfg.HTTPAddr, "address of the REST API")
	fs.StringVar(&cfg.AdvertiseHTTP, "advertise-http", cfg.AdvertiseHTTP, "REST base URL other members and /servers use (default: derived from --http-addr)")
	fs.StringVar(&cfg.InternalAddr, "internal-addr", cfg.InternalAddr, "address for Raft and node-to-node RPC")
	fs.StringVar(&cfg.AdvertiseInternal, "advertise-internal", cfg.AdvertiseInternal, "host:port other members dial for --internal-addr, when it differs (NAT, a proxy) (default: derived from --internal-addr)")
	fs.StringVar(&cfg.GossipAddr, "gossip-addr", cfg.GossipAddr, "address for gossip (TCP and UDP)")
	fs.StringVar(&cfg.AdvertiseGossip, "advertise-gossip", cfg.AdvertiseGossip, "ip:port other members gossip with, when it differs from --gossip-addr (NAT, a proxy) (default: derived)")
	fs.Var(listValue{&cfg.Join}, "join", "gossip addresses of members to join, host[:port],... (DNS names allowed; may include this node)")
	fs.IntVar(&cfg.BootstrapExpect, "bootstrap-expect", cfg.BootstrapExpect, "number of members to wait for before bootstrapping a new cluster")
	fs.Var(listValue{&cfg.Groups}, "groups", "member groups of this node, g1,g2,...")
	fs.Var(regionsValue{&cfg.Regions}, "regions", "regions to create at start if absent, name:REPLICATE|PARTITION,...")
	fs.Var(groupsValue{cfg}, "partition-groups", "partition groups of a new cluster (more are added online: PATCH /management/v1/partitions), or auto: at least as many as members, added as members join")
	fs.BoolVar(&cfg.AutoRebalance, "auto-rebalance", cfg.AutoRebalance, "even the buckets out over the partition groups on its own, whenever they are uneven (after groups are added)")
	fs.Var(sizeValue{&cfg.RebalanceRate}, "rebalance-rate", "bytes the bucket moves copy a second, together, so that a rebalance leaves the members to the clients' writes (bytes, or with KiB/MiB/GiB; 0: no bound; default 4MiB)")
	fs.IntVar(&cfg.RebalanceMoves, "rebalance-moves", cfg.RebalanceMoves, "bucket moves a rebalance runs at once, each between partition groups no other running move uses")
	fs.IntVar(&cfg.ReplicationFactor, "replication-factor", cfg.ReplicationFactor, "replicas per partition group (fixed at bootstrap)")
	fs.StringVar(&cfg.LogLevel, "log-level", cfg.LogLevel, "debug, info, warn or error")
	fs.StringVar(&cfg.LogFormat, "log-format", cfg.LogFormat, "text or json")
	fs.DurationVar(&cfg.DeadMemberTimeout, "dead-member-timeout", cfg.DeadMemberTimeout, "how long a failed member stays in the cluster before it is removed")
	fs.DurationVar(&cfg.CatchUpTimeout, "catch-up-timeout", cfg.CatchUpTimeout, "how long a member added to the cluster may take to catch up before it is removed again (and kept out as long); raise it when replicated regions hold much data")
	fs.DurationVar(&cfg.RequestTimeout, "request-timeout", cfg.RequestTimeout, "server-side deadline of every REST request")
	fs.DurationVar(&cfg.ShutdownTimeout, "shutdown-timeout", cfg.ShutdownTimeout, "how long a graceful shutdown (SIGTERM) may take")
	fs.BoolVar(&cfg.LeaveOnShutdown, "leave-on-shutdown", cfg.LeaveOnShutdown, "make SIGTERM a leave (gossip, Raft, partition replicas moved away: a scale-down) instead of a restart (leadership handed over, the member stays)")
	fs.Var(sizeValue{&cfg.MaxBodySize}, "max-body-size", "largest accepted request body (bytes, or with KiB/MiB/GiB; default 16MiB)")
	fs.DurationVar(&cfg.MaxQueryTime, "max-query-time", cfg.MaxQueryTime, "longest a query may run before it is cancelled (500)")
	fs.IntVar(&cfg.MaxQueryRows, "max-query-rows", cfg.MaxQueryRows, "largest query result, in rows (larger → 500)")
	fs.IntVar(&cfg.MaxWatchers, "max-watchers", cfg.MaxWatchers, "watches (GET /kv/v1/watch) this member serves at once (more → 503)")
	fs.IntVar(&cfg.WatchBuffer, "watch-buffer", cfg.WatchBuffer, "events a watch may fall behind before it is disconnected as a slow consumer")
	fs.StringVar(&cfg.SecurityFile, "security-file", cfg.SecurityFile, "JSON file of users (bcrypt hashes) and roles; turns authentication on; re-read when it changes and on SIGHUP")
	fs.StringVar(&cfg.TLSCert, "tls-cert", cfg.TLSCert, "PEM certificate: HTTPS on the REST port, and this node's identity on the internal port with --tls-ca; re-read when it changes and on SIGHUP")
	fs.StringVar(&cfg.TLSKey, "tls-key", cfg.TLSKey, "PEM private key of --tls-cert")
	fs.StringVar(&cfg.TLSCA, "tls-ca", cfg.TLSCA, "PEM CA: mutual TLS on the internal port (Raft and RPC); peers need a certificate it signed")
	fs.Var(listValue{&cfg.PeerNames}, "peer-names", "DNS names or patterns (*.kvnode-peers.default.svc.cluster.local), name,...: a peer's certificate on the internal port must carry one as a DNS name (needs --tls-ca)")
	fs.BoolVar(&cfg.ClientCertAuth, "client-cert-auth", cfg.ClientCertAuth, "the REST port's TLS handshake requires a client certificate --client-ca (or --tls-ca) signed; with --security-file its common name is the user when no Basic credentials come (needs --tls-cert)")
	fs.StringVar(&cfg.ClientCA, "client-ca", cfg.ClientCA, "PEM CA of the REST clients' certificates under --client-cert-auth, when not --tls-ca; re-read when it changes and on SIGHUP")
	fs.StringVar(&cfg.GossipKey, "gossip-key", cfg.GossipKey, "base64 key (16, 24 or 32 bytes) that encrypts gossip; every member needs the same")
	fs.Uint64Var(&cfg.Raft.SnapshotThreshold, "snapshot-threshold", orDefault(cfg.Raft.SnapshotThreshold, raftgroup.DefaultConfig().SnapshotThreshold), "Raft log entries since a group's last snapshot that make it take the next one (like etcd's --snapshot-count)")
	fs.IntVar(&cfg.Raft.WatchHistory, "watch-history", orDefault(cfg.Raft.WatchHistory, raftgroup.DefaultConfig().WatchHistory), "change events each Raft group keeps for watches to resume from (GET /kv/v1/watch); a token older than that gets 410 Gone")
	fs.DurationVar(&cfg.Raft.SnapshotInterval, "snapshot-interval", orDefault(cfg.Raft.SnapshotInterval, raftgroup.DefaultConfig().SnapshotInterval), "how often each group checks --snapshot-threshold (it waits between this and twice this)")
	fs.StringVar(&cfg.PprofAddr, "pprof-addr", cfg.PprofAddr, "address of a debug listener serving Go's profiles at /debug/pprof/ (off when empty; no authentication: keep it on loopback)")
	fs.StringVar(&cfg.MetricsAddr, "metrics-addr", cfg.MetricsAddr, "address of a plain listener serving /metrics, /livez and /readyz without authentication or TLS, for Prometheus and probes (off when empty; the REST port's /metrics needs CLUSTER:READ with security on)")
	fs.DurationVar(&cfg.FunctionTimeout, "function-timeout", cfg.FunctionTimeout, "longest a function call may run; a deployed script past it is stopped (500)")
	// Not a field of node.Config: Parse reads the file before anything else.
	fs.String(ConfigFlag, "", "YAML file of flag values, keyed by flag name (http-addr: :9000); precedence: flag > KVNODE_* > file > default")
	fs.Var(listValue{&cfg.CORSOrigins}, "cors-origins", "origins whose browser pages may call the REST API, scheme://host[:port],... or * for any (default: none, cross-origin access off)")
	return fs
}

// EnvName is the environment variable of a flag: --http-addr is
// KVNODE_HTTP_ADDR.
func EnvName(flagName string) string {
	return EnvPrefix + strings.ToUpper(strings.ReplaceAll(flagName, "-", "_"))
}

// Parse builds the configuration from defaults, the config file, env and
// args. It returns the names of KVNODE_* variables that match no flag, for
// a warning (Kubernetes injects KVNODE_SERVICE_HOST and friends for a
// service named kvnode, so they must not be fatal).
//
// The file --config (or KVNODE_CONFIG) names comes first, so that the
// environment and the command line override it.
func Parse(args, env []string, out io.Writer) (node.Config, []string, error) {
	cfg := node.Default()
	fs := FlagSet(&cfg, out)
	if path := configFile(args, env); path != "" {
		if err := applyFile(fs, path); err != nil {
			return cfg, nil, err
		}
	}
	known := map[string]string{}
	fs.VisitAll(func(f *flag.Flag) { known[EnvName(f.Name)] = f.Name })
	var unknown []string
	for _, kv := range env {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || !strings.HasPrefix(k, EnvPrefix) {
			continue
		}
		name, ok := known[k]
		if !ok {
			unknown = append(unknown, k)
			continue
		}
		if err := fs.Set(name, v); err != nil {
			return cfg, unknown, fmt.Errorf("environment %s: %w", k, err)
		}
	}
	if err := fs.Parse(args); err != nil {
		return cfg, unknown, err
	}
	if fs.NArg() > 0 {
		return cfg, unknown, fmt.Errorf("unexpected arguments: %q", fs.Args())
	}
	sort.Strings(unknown)
	return cfg, unknown, cfg.Validate()
}

// orDefault is v, or d when v is the zero value.
func orDefault[T comparable](v, d T) T {
	var zero T
	if v == zero {
		return d
	}
	return v
}
