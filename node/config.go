package node

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/netip"
	"net/url"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/kvnode/kvnode/function"
	"github.com/kvnode/kvnode/internal/reload"
	"github.com/kvnode/kvnode/region"
	"github.com/kvnode/kvnode/rest"
	"github.com/kvnode/kvnode/rest/watch"
	"github.com/kvnode/kvnode/store/raftgroup"
	"github.com/kvnode/kvnode/store/transport"
)

// Config is everything a node is started with. cmd/kvnode fills it from
// Default, then KVNODE_* environment variables, then command-line flags;
// a program that embeds a node fills it itself. Start checks it with
// Validate. Error messages name the command-line flag of a field (--name
// for Name), since that is how operators know them.
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
	// PartitionGroupsAuto (--partition-groups auto) keeps at least as
	// many partition groups as members, adding groups as members join.
	PartitionGroupsAuto bool
	// AutoRebalance (--auto-rebalance) evens the buckets out whenever
	// they are uneven over the partition groups.
	AutoRebalance bool
	// RebalanceRate (--rebalance-rate) bounds the bytes the bucket moves
	// copy a second, together (0: no bound).
	RebalanceRate int64
	// RebalanceMoves (--rebalance-moves) is how many bucket moves a
	// rebalance runs at once, each between groups no other one uses.
	RebalanceMoves    int
	ReplicationFactor int
	LogLevel          string
	LogFormat         string

	DeadMemberTimeout time.Duration
	// CatchUpTimeout is how long a member added to the control group may
	// take to catch up before it is removed again (and kept out as long).
	CatchUpTimeout  time.Duration
	RequestTimeout  time.Duration
	ShutdownTimeout time.Duration
	// LeaveOnShutdown makes a graceful shutdown (SIGTERM) a leave: the
	// member leaves gossip and the control group and waits while its
	// partition replicas move to the others, as for a scale-down. Off (the
	// default), a graceful shutdown is a restart: the member hands the
	// leadership of its groups over and stops, staying a member, and
	// catches up from its data dir when it comes back (etcd's behaviour;
	// Consul's leave_on_terminate=false for servers).
	LeaveOnShutdown bool
	MaxBodySize     int64
	MaxQueryTime    time.Duration
	MaxQueryRows    int
	// MaxWatchers is how many watches (GET /kv/v1/watch) this member
	// serves at once; past it a watch is refused with 503.
	MaxWatchers int
	// WatchBuffer is how many events a watch may fall behind before it
	// is disconnected as a slow consumer.
	WatchBuffer     int
	FunctionTimeout time.Duration
	SecurityFile    string
	TLSCert         string
	TLSKey          string
	TLSCA           string
	// PeerNames, with mutual TLS on the internal port (TLSCA), are the
	// DNS names or one-label wildcard patterns (*.peers.example.com) a
	// peer's certificate must carry one of (package reload's PeerNames);
	// empty allows any certificate the CA signed.
	PeerNames []string
	// ClientCertAuth makes the REST port's TLS handshake require a client
	// certificate that ClientCA (TLSCA when empty) accepts, as etcd's
	// --client-cert-auth. With a security file, a request without Basic
	// credentials is the user its certificate's common name names; without
	// one, any accepted certificate may do everything.
	ClientCertAuth bool
	// ClientCA is the CA bundle of REST clients' certificates, when it is
	// not TLSCA (only with ClientCertAuth); reloaded like TLSCA.
	ClientCA  string
	GossipKey string
	// PprofAddr, when set, is a debug listener serving /debug/pprof/
	// (without authentication: keep it on loopback).
	PprofAddr string
	// MetricsAddr, when set, is a plain listener serving /metrics alone,
	// without authentication, for scrapers (the REST port's /metrics needs
	// CLUSTER:READ when security is on).
	MetricsAddr string
	// CORSOrigins are the origins (scheme://host[:port], or "*") whose
	// pages may call the REST API from a browser; empty keeps
	// cross-origin access off.
	CORSOrigins []string

	// Version is what the node reports in gossip, /servers' member info
	// and its start-up log line (cmd/kvnode stamps it at build time).
	Version string
	// Logger receives the node's logs; nil builds one from LogLevel and
	// LogFormat that writes to standard error.
	Logger *slog.Logger

	// Tuning no command-line flag sets; the zero value of each is the
	// production default. Tests shorten them to form clusters fast.

	// Raft overrides raftgroup.DefaultConfig field by field.
	Raft raftgroup.Config
	// GossipProfile is memberlist's profile: "" (LAN) or "local".
	GossipProfile string
	// RetryJoin is how often an unanswered --join is tried again.
	RetryJoin time.Duration
	// PromoteAfter is how long a new member must stay alive before it
	// becomes a voter.
	PromoteAfter time.Duration
	// JoinGrace is how long a member started with --join waits to be
	// added before it bootstraps on its own.
	JoinGrace time.Duration
	// Resolver resolves --join names; nil is the system's.
	Resolver *net.Resolver
}

// DefaultCatchUpTimeout is --catch-up-timeout's default: the control
// group holds the replicated regions, so a member joining a cluster with
// much data there needs a snapshot that takes a while to send and load.
const DefaultCatchUpTimeout = 5 * time.Minute

// DefaultRebalanceRate is --rebalance-rate's default: a bucket of 100,000
// entries of ~200 bytes (20 MiB) moves in about 5 s, and on a 2-core
// machine the other buckets' writes keep most of their throughput
// (docs/performance.md, "A bucket's move under load").
const DefaultRebalanceRate = 4 << 20

// DefaultRebalanceMoves is --rebalance-moves' default: a move of a small
// bucket spends its time waiting on its two groups' logs, so moves between
// distinct groups overlap; a cluster grown from 3 to 6 members has three
// groups to move out of and three to move into (docs/performance.md,
// "Growth").
const DefaultRebalanceMoves = 4

// Default is a working single-node cluster in ./kvdata on :8080.
func Default() Config {
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
		AutoRebalance:     true,
		RebalanceRate:     DefaultRebalanceRate,
		RebalanceMoves:    DefaultRebalanceMoves,
		ReplicationFactor: 3,
		LogLevel:          "info",
		LogFormat:         "text",
		DeadMemberTimeout: 72 * time.Hour,
		CatchUpTimeout:    DefaultCatchUpTimeout,
		RequestTimeout:    rest.DefaultRequestTimeout,
		ShutdownTimeout:   20 * time.Second,
		MaxBodySize:       rest.DefaultMaxBodyBytes,
		MaxQueryTime:      rest.DefaultMaxQueryTime,
		MaxQueryRows:      rest.DefaultMaxQueryRows,
		MaxWatchers:       watch.DefaultMaxWatchers,
		WatchBuffer:       watch.DefaultBuffer,
		FunctionTimeout:   function.DefaultTimeout,
		Version:           "dev",
	}
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
	if c.Raft.WatchHistory < 0 || c.Raft.WatchHistory > 10_000_000 {
		errs = append(errs, fmt.Errorf("--watch-history %d: want 0 (the default, %d) to 10000000 events per group", c.Raft.WatchHistory, raftgroup.DefaultConfig().WatchHistory))
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
	for _, a := range []struct{ flagName, addr string }{
		{"--pprof-addr", c.PprofAddr}, {"--metrics-addr", c.MetricsAddr},
	} {
		if a.addr == "" {
			continue
		}
		if _, port, err := net.SplitHostPort(a.addr); err != nil {
			errs = append(errs, fmt.Errorf("%s %q: want host:port or :port: %v", a.flagName, a.addr, err))
		} else if _, err := strconv.ParseUint(port, 10, 16); err != nil {
			errs = append(errs, fmt.Errorf("%s %q: bad port", a.flagName, a.addr))
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
	if _, err := ParseLevel(c.LogLevel); err != nil {
		errs = append(errs, err)
	}
	if c.LogFormat != "text" && c.LogFormat != "json" {
		errs = append(errs, fmt.Errorf("--log-format %q: want text or json", c.LogFormat))
	}
	if c.RebalanceRate < 0 {
		errs = append(errs, fmt.Errorf("--rebalance-rate %d: must be 0 (no bound) or positive", c.RebalanceRate))
	}
	if c.RebalanceMoves < 1 {
		errs = append(errs, fmt.Errorf("--rebalance-moves %d: must be at least 1", c.RebalanceMoves))
	}
	if c.CatchUpTimeout < 0 {
		errs = append(errs, fmt.Errorf("--catch-up-timeout %v: must be positive (0: never removed)", c.CatchUpTimeout))
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
	if c.MaxBodySize > transport.MaxBodyBytes {
		errs = append(errs, fmt.Errorf("--max-body-size %d: at most %d (1GiB): a body is forwarded, logged and replicated as one Raft entry, "+
			"held several times in memory on every member, and the log store refuses entries near 2GiB", c.MaxBodySize, transport.MaxBodyBytes))
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
	if c.MaxWatchers <= 0 {
		errs = append(errs, fmt.Errorf("--max-watchers %d: must be positive", c.MaxWatchers))
	}
	if c.WatchBuffer <= 0 {
		errs = append(errs, fmt.Errorf("--watch-buffer %d: must be positive", c.WatchBuffer))
	}
	if len(c.PeerNames) > 0 {
		if c.TLSCA == "" {
			errs = append(errs, errors.New("--peer-names needs --tls-ca (with --tls-cert and --tls-key): names are checked in the internal port's mutual TLS, which is off without a CA"))
		}
		if _, err := reload.ParsePeerNames(c.PeerNames); err != nil {
			errs = append(errs, err)
		}
	}
	errs = append(errs, c.validateClientCerts()...)
	if err := rest.ValidateCORSOrigins(c.CORSOrigins); err != nil {
		errs = append(errs, fmt.Errorf("--cors-origins: %w", err))
	}
	return errors.Join(errs...)
}

// validateClientCerts checks --client-cert-auth and --client-ca: client
// certificates are asked for in the REST port's TLS handshake, so they
// need its certificate, and a CA to check them against.
func (c Config) validateClientCerts() []error {
	var errs []error
	if c.ClientCA != "" && !c.ClientCertAuth {
		errs = append(errs, errors.New("--client-ca is the CA of REST clients' certificates, which only --client-cert-auth asks for: add --client-cert-auth, or drop --client-ca"))
	}
	if !c.ClientCertAuth {
		return errs
	}
	if c.TLSCert == "" || c.TLSKey == "" {
		errs = append(errs, errors.New("--client-cert-auth needs --tls-cert and --tls-key: client certificates are asked for in the REST port's TLS handshake"))
	}
	if c.ClientCA == "" && c.TLSCA == "" {
		errs = append(errs, errors.New("--client-cert-auth needs the CA of the clients' certificates: --client-ca, or --tls-ca (which also turns on mutual TLS between members)"))
	}
	return errs
}

// validPort reports whether s is a port number other than 0.
func validPort(s string) bool {
	p, err := strconv.ParseUint(s, 10, 16)
	return err == nil && p != 0
}

// ParseLevel reads a --log-level: debug, info, warn or error.
func ParseLevel(s string) (slog.Level, error) {
	var l slog.Level
	if err := l.UnmarshalText([]byte(s)); err != nil {
		return 0, fmt.Errorf("--log-level %q: want debug, info, warn or error", s)
	}
	return l, nil
}

// NewLogger is the logger of a node whose LogLevel and LogFormat are
// level and format ("text" or "json"), writing to out.
func NewLogger(out io.Writer, level, format string) (*slog.Logger, error) {
	l, err := ParseLevel(level)
	if err != nil {
		return nil, err
	}
	opts := &slog.HandlerOptions{Level: l}
	if format == "json" {
		return slog.New(slog.NewJSONHandler(out, opts)), nil
	}
	return slog.New(slog.NewTextHandler(out, opts)), nil
}
