package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/netip"
	"net/url"
	"os"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/kvnode/kvnode/region"
	"github.com/kvnode/kvnode/store"
)

// envPrefix starts every environment variable that sets a flag:
// --http-addr is KVNODE_HTTP_ADDR.
const envPrefix = "KVNODE_"

// Config is everything a node is started with. Fields are filled from
// defaults, then KVNODE_* environment variables, then command-line flags
// (the last wins), and checked by Validate.
type Config struct {
	Name              string
	DataDir           string
	HTTPAddr          string
	AdvertiseHTTP     string
	InternalAddr      string
	AdvertiseInternal string
	GossipAddr        string
	AdvertiseGossip   string
	Join              []string
	BootstrapExpect   int
	Groups            []string
	Regions           []region.Info
	PartitionGroups   int
	ReplicationFactor int
	LogLevel          string
	LogFormat         string

	DeadMemberTimeout time.Duration
	RequestTimeout    time.Duration
	ShutdownTimeout   time.Duration
	MaxBodySize       int64
	MaxQueryTime      time.Duration
	MaxQueryRows      int
	FunctionTimeout   time.Duration
	SecurityFile      string
	TLSCert           string
	TLSKey            string
	TLSCA             string
	GossipKey         string
}

// defaultConfig is a working single-node cluster in ./kvdata on :8080.
func defaultConfig() Config {
	host, err := os.Hostname()
	if err != nil || host == "" {
		host = "kvnode"
	}
	return Config{
		Name:              host,
		DataDir:           "./kvdata",
		HTTPAddr:          ":8080",
		InternalAddr:      ":7070",
		GossipAddr:        ":7946",
		BootstrapExpect:   1,
		PartitionGroups:   4,
		ReplicationFactor: 3,
		LogLevel:          "info",
		LogFormat:         "text",
		DeadMemberTimeout: 72 * time.Hour,
		RequestTimeout:    10 * time.Second,
		ShutdownTimeout:   20 * time.Second,
		MaxBodySize:       16 << 20,
		MaxQueryTime:      30 * time.Second,
		MaxQueryRows:      100_000,
		FunctionTimeout:   30 * time.Second,
	}
}

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
type sizeValue struct{ p *int64 }

func (v sizeValue) String() string {
	if v.p == nil {
		return ""
	}
	return strconv.FormatInt(*v.p, 10)
}

func (v sizeValue) Set(s string) error {
	n, err := parseSize(s)
	if err != nil {
		return err
	}
	*v.p = n
	return nil
}

func parseSize(s string) (int64, error) {
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

// flagSet declares every flag of the node; the flag names are the contract
// of design.md §4 plus a few operational knobs.
func flagSet(cfg *Config, out io.Writer) *flag.FlagSet {
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
	fs.IntVar(&cfg.PartitionGroups, "partition-groups", cfg.PartitionGroups, "number of partition groups (fixed at bootstrap)")
	fs.IntVar(&cfg.ReplicationFactor, "replication-factor", cfg.ReplicationFactor, "replicas per partition group (fixed at bootstrap)")
	fs.StringVar(&cfg.LogLevel, "log-level", cfg.LogLevel, "debug, info, warn or error")
	fs.StringVar(&cfg.LogFormat, "log-format", cfg.LogFormat, "text or json")
	fs.DurationVar(&cfg.DeadMemberTimeout, "dead-member-timeout", cfg.DeadMemberTimeout, "how long a failed member stays in the cluster before it is removed")
	fs.DurationVar(&cfg.RequestTimeout, "request-timeout", cfg.RequestTimeout, "server-side deadline of every REST request")
	fs.DurationVar(&cfg.ShutdownTimeout, "shutdown-timeout", cfg.ShutdownTimeout, "how long a graceful shutdown (SIGTERM) may take")
	fs.Var(sizeValue{&cfg.MaxBodySize}, "max-body-size", "largest accepted request body (bytes, or with KiB/MiB/GiB; default 16MiB)")
	fs.DurationVar(&cfg.MaxQueryTime, "max-query-time", cfg.MaxQueryTime, "longest a query may run before it is cancelled (500)")
	fs.IntVar(&cfg.MaxQueryRows, "max-query-rows", cfg.MaxQueryRows, "largest query result, in rows (larger → 500)")
	fs.StringVar(&cfg.SecurityFile, "security-file", cfg.SecurityFile, "JSON file of users (bcrypt hashes) and roles; turns authentication on; re-read on SIGHUP")
	fs.StringVar(&cfg.TLSCert, "tls-cert", cfg.TLSCert, "PEM certificate: HTTPS on the REST port, and this node's identity on the internal port with --tls-ca")
	fs.StringVar(&cfg.TLSKey, "tls-key", cfg.TLSKey, "PEM private key of --tls-cert")
	fs.StringVar(&cfg.TLSCA, "tls-ca", cfg.TLSCA, "PEM CA: mutual TLS on the internal port (Raft and RPC); peers need a certificate it signed")
	fs.StringVar(&cfg.GossipKey, "gossip-key", cfg.GossipKey, "base64 key (16, 24 or 32 bytes) that encrypts gossip; every member needs the same")
	fs.DurationVar(&cfg.FunctionTimeout, "function-timeout", cfg.FunctionTimeout, "longest a function call may run; a deployed script past it is stopped (500)")
	return fs
}

// envName is the environment variable of a flag.
func envName(flagName string) string {
	return envPrefix + strings.ToUpper(strings.ReplaceAll(flagName, "-", "_"))
}

// parseConfig builds the configuration from defaults, env and args. It
// returns the names of KVNODE_* variables that match no flag, for a warning
// (Kubernetes injects KVNODE_SERVICE_HOST and friends for a service named
// kvnode, so they must not be fatal).
func parseConfig(args, env []string, out io.Writer) (Config, []string, error) {
	cfg := defaultConfig()
	fs := flagSet(&cfg, out)
	known := map[string]string{}
	fs.VisitAll(func(f *flag.Flag) { known[envName(f.Name)] = f.Name })
	var unknown []string
	for _, kv := range env {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || !strings.HasPrefix(k, envPrefix) {
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

// Validate checks the configuration and says what is wrong in words an
// operator can act on.
func (c Config) Validate() error {
	var errs []error
	if c.Name == "" {
		errs = append(errs, errors.New("--name is empty"))
	} else if strings.ContainsAny(c.Name, " \t\n,/") || len(c.Name) > 128 {
		errs = append(errs, fmt.Errorf("--name %q: use at most 128 characters without spaces, commas or slashes", c.Name))
	}
	if c.DataDir == "" {
		errs = append(errs, errors.New("--data-dir is empty"))
	}
	for _, a := range []struct{ flagName, addr string }{
		{"--http-addr", c.HTTPAddr}, {"--internal-addr", c.InternalAddr}, {"--gossip-addr", c.GossipAddr},
	} {
		flagName, addr := a.flagName, a.addr
		if _, port, err := net.SplitHostPort(addr); err != nil {
			errs = append(errs, fmt.Errorf("%s %q: want host:port or :port: %v", flagName, addr, err))
		} else if _, err := strconv.ParseUint(port, 10, 16); err != nil {
			errs = append(errs, fmt.Errorf("%s %q: bad port", flagName, addr))
		}
	}
	if c.AdvertiseHTTP != "" {
		u, err := url.Parse(c.AdvertiseHTTP)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || (u.Path != "" && u.Path != "/") {
			errs = append(errs, fmt.Errorf("--advertise-http %q: want a base URL like http://host:8080", c.AdvertiseHTTP))
		}
	}
	if c.AdvertiseInternal != "" {
		if host, port, err := net.SplitHostPort(c.AdvertiseInternal); err != nil || host == "" || !validPort(port) {
			errs = append(errs, fmt.Errorf("--advertise-internal %q: want host:port", c.AdvertiseInternal))
		}
	}
	if c.AdvertiseGossip != "" {
		if ap, err := netip.ParseAddrPort(c.AdvertiseGossip); err != nil || ap.Port() == 0 || ap.Addr().IsUnspecified() {
			errs = append(errs, fmt.Errorf("--advertise-gossip %q: want ip:port (gossip advertises an IP, not a name)", c.AdvertiseGossip))
		}
	}
	for _, j := range c.Join {
		if _, _, err := net.SplitHostPort(j); err != nil && strings.Contains(err.Error(), "too many colons") {
			errs = append(errs, fmt.Errorf("--join %q: write IPv6 addresses as [addr]:port", j))
		}
	}
	if c.BootstrapExpect < 1 {
		errs = append(errs, fmt.Errorf("--bootstrap-expect %d: must be at least 1", c.BootstrapExpect))
	}
	for _, g := range c.Groups {
		if strings.ContainsAny(g, " \t\n") {
			errs = append(errs, fmt.Errorf("--groups: group %q contains white space", g))
		}
	}
	if c.PartitionGroups < 1 || c.PartitionGroups > 113 {
		errs = append(errs, fmt.Errorf("--partition-groups %d: must be between 1 and 113 (the bucket count)", c.PartitionGroups))
	}
	if c.ReplicationFactor < 1 {
		errs = append(errs, fmt.Errorf("--replication-factor %d: must be at least 1", c.ReplicationFactor))
	}
	if _, err := parseLevel(c.LogLevel); err != nil {
		errs = append(errs, err)
	}
	if c.LogFormat != "text" && c.LogFormat != "json" {
		errs = append(errs, fmt.Errorf("--log-format %q: want text or json", c.LogFormat))
	}
	if c.DeadMemberTimeout <= 0 {
		errs = append(errs, fmt.Errorf("--dead-member-timeout %v: must be positive", c.DeadMemberTimeout))
	}
	if c.RequestTimeout <= 0 {
		errs = append(errs, fmt.Errorf("--request-timeout %v: must be positive", c.RequestTimeout))
	}
	if c.ShutdownTimeout <= 0 {
		errs = append(errs, fmt.Errorf("--shutdown-timeout %v: must be positive", c.ShutdownTimeout))
	}
	if c.MaxBodySize <= 0 {
		errs = append(errs, fmt.Errorf("--max-body-size %d: must be positive", c.MaxBodySize))
	}
	if c.MaxBodySize > store.MaxBodyBytes {
		errs = append(errs, fmt.Errorf("--max-body-size %d: at most %d (1GiB): a body is forwarded, logged and replicated as one Raft entry, "+
			"held several times in memory on every member, and the log store refuses entries near 2GiB", c.MaxBodySize, store.MaxBodyBytes))
	}
	if c.MaxQueryTime <= 0 {
		errs = append(errs, fmt.Errorf("--max-query-time %v: must be positive", c.MaxQueryTime))
	}
	if c.FunctionTimeout <= 0 {
		errs = append(errs, fmt.Errorf("--function-timeout %v: must be positive", c.FunctionTimeout))
	}
	if c.MaxQueryRows <= 0 {
		errs = append(errs, fmt.Errorf("--max-query-rows %d: must be positive", c.MaxQueryRows))
	}
	return errors.Join(errs...)
}

// validPort reports whether s is a port number other than 0.
func validPort(s string) bool {
	p, err := strconv.ParseUint(s, 10, 16)
	return err == nil && p != 0
}
