package nodeflags

import (
	"flag"
	"io"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/kvnode/kvnode/node"
	"github.com/kvnode/kvnode/region"
)

func TestDefaultsStartASingleNode(t *testing.T) {
	cfg, unknown, err := Parse(nil, nil, io.Discard)
	if err != nil {
		t.Fatalf("no flags: %v", err)
	}
	if len(unknown) != 0 {
		t.Fatalf("unknown env = %v, want none", unknown)
	}
	checks := []struct {
		name      string
		got, want any
	}{
		{"data dir", cfg.DataDir, "./kvdata"},
		{"http", cfg.HTTPAddr, ":8080"},
		{"internal", cfg.InternalAddr, ":7070"},
		{"gossip", cfg.GossipAddr, ":7946"},
		{"bootstrap-expect", cfg.BootstrapExpect, 1},
		{"partition groups", cfg.PartitionGroups, 4},
		{"replication factor", cfg.ReplicationFactor, 3},
		{"log level", cfg.LogLevel, "info"},
		{"log format", cfg.LogFormat, "text"},
		{"dead member timeout", cfg.DeadMemberTimeout, 72 * time.Hour},
		{"max body", cfg.MaxBodySize, int64(16 << 20)},
		{"max watchers", cfg.MaxWatchers, 10_000},
		{"watch buffer", cfg.WatchBuffer, 4096},
	}
	for _, c := range checks {
		if !reflect.DeepEqual(c.got, c.want) {
			t.Errorf("default %s = %v, want %v", c.name, c.got, c.want)
		}
	}
	if cfg.Name == "" {
		t.Errorf("default name is empty, want the host name")
	}
}

func TestEnvThenFlags(t *testing.T) {
	env := []string{
		"KVNODE_HTTP_ADDR=127.0.0.1:9000",
		"KVNODE_JOIN=a:7946, b ,c:1",
		"KVNODE_BOOTSTRAP_EXPECT=3",
		"KVNODE_REGIONS=orders:PARTITION,customers",
		"KVNODE_GROUPS=east,ssd",
		"KVNODE_MAX_BODY_SIZE=1MiB",
		"KVNODE_SERVICE_HOST=10.0.0.1", // injected by Kubernetes: not a flag
		"PATH=/bin",
	}
	cfg, unknown, err := Parse([]string{"--bootstrap-expect", "5", "--name=n1"}, env, io.Discard)
	if err != nil {
		t.Fatalf("parse: %v", err)
	}
	if cfg.HTTPAddr != "127.0.0.1:9000" {
		t.Errorf("http addr from env = %q", cfg.HTTPAddr)
	}
	if cfg.BootstrapExpect != 5 {
		t.Errorf("flag should override env: bootstrap-expect = %d, want 5", cfg.BootstrapExpect)
	}
	if !slices.Equal(cfg.Join, []string{"a:7946", "b", "c:1"}) {
		t.Errorf("join = %q", cfg.Join)
	}
	wantRegions := []region.Info{{Name: "orders", Kind: region.Partition}, {Name: "customers", Kind: region.Replicate}}
	if !reflect.DeepEqual(cfg.Regions, wantRegions) {
		t.Errorf("regions = %v, want %v", cfg.Regions, wantRegions)
	}
	if !slices.Equal(cfg.Groups, []string{"east", "ssd"}) {
		t.Errorf("groups = %q", cfg.Groups)
	}
	if cfg.MaxBodySize != 1<<20 {
		t.Errorf("max body = %d, want 1MiB", cfg.MaxBodySize)
	}
	if cfg.Name != "n1" {
		t.Errorf("name = %q", cfg.Name)
	}
	if !slices.Equal(unknown, []string{"KVNODE_SERVICE_HOST"}) {
		t.Errorf("unknown env = %v, want [KVNODE_SERVICE_HOST]", unknown)
	}
}

// TestEveryFlagHasAnEnvVar checks the KVNODE_* contract over the whole flag set.
func TestEveryFlagHasAnEnvVar(t *testing.T) {
	cfg := node.Default()
	fs := FlagSet(&cfg, io.Discard)
	fs.VisitAll(func(f *flag.Flag) {
		env := EnvName(f.Name)
		if !strings.HasPrefix(env, "KVNODE_") || strings.ContainsAny(env, "-abcdefghijklmnopqrstuvwxyz") {
			t.Errorf("flag --%s maps to env %q", f.Name, env)
		}
	})
	for _, name := range []string{"name", "data-dir", "http-addr", "advertise-http", "internal-addr", "gossip-addr",
		"join", "bootstrap-expect", "groups", "regions", "partition-groups", "replication-factor", "log-level", "log-format"} {
		if fs.Lookup(name) == nil {
			t.Errorf("design.md §4 flag --%s is missing", name)
		}
	}
}

func TestInvalidConfigs(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--bootstrap-expect", "0"}, "bootstrap-expect"},
		{[]string{"--http-addr", "8080"}, "--http-addr"},
		{[]string{"--internal-addr", "localhost:99999"}, "bad port"},
		{[]string{"--regions", "orders:HASH"}, "REPLICATE or PARTITION"},
		{[]string{"--regions", "a:REPLICATE,a:PARTITION"}, "twice"},
		{[]string{"--regions", "bad name"}, "region name"},
		{[]string{"--log-level", "loud"}, "--log-level"},
		{[]string{"--log-format", "xml"}, "--log-format"},
		{[]string{"--advertise-http", "10.0.0.1:8080"}, "--advertise-http"},
		{[]string{"--advertise-internal", ":7070"}, "--advertise-internal"},
		{[]string{"--advertise-internal", "10.0.0.1"}, "--advertise-internal"},
		{[]string{"--advertise-gossip", "kv-0:7946"}, "--advertise-gossip"},
		{[]string{"--advertise-gossip", "0.0.0.0:7946"}, "--advertise-gossip"},
		{[]string{"--partition-groups", "0"}, "--partition-groups"},
		{[]string{"--max-body-size", "-1"}, "size"},
		{[]string{"--max-body-size", "2GiB"}, "at most 1073741824 (1GiB)"},
		{[]string{"--name", "a b"}, "--name"},
		{[]string{"stray"}, "unexpected arguments"},
		{[]string{"--no-such-flag"}, "not defined"},
	} {
		_, _, err := Parse(tc.args, nil, io.Discard)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Parse(%q) error = %v, want it to mention %q", tc.args, err, tc.want)
		}
	}
	if _, _, err := Parse(nil, []string{"KVNODE_BOOTSTRAP_EXPECT=many"}, io.Discard); err == nil || !strings.Contains(err.Error(), "KVNODE_BOOTSTRAP_EXPECT") {
		t.Errorf("bad env value: error = %v, want it to name the variable", err)
	}
}

// TestCORSOrigins: --cors-origins (KVNODE_CORS_ORIGINS) is off by
// default, takes a list of origins or *, and refuses anything that is not
// an origin.
func TestCORSOrigins(t *testing.T) {
	cfg, _, err := Parse(nil, nil, io.Discard)
	if err != nil || cfg.CORSOrigins != nil {
		t.Fatalf("default: %q, %v; want none", cfg.CORSOrigins, err)
	}
	cfg, _, err = Parse(nil, []string{"KVNODE_CORS_ORIGINS=https://console.example.com, http://localhost:3000"}, io.Discard)
	if err != nil || !slices.Equal(cfg.CORSOrigins, []string{"https://console.example.com", "http://localhost:3000"}) {
		t.Errorf("from the environment: %q, %v", cfg.CORSOrigins, err)
	}
	cfg, _, err = Parse([]string{"--cors-origins", "*"}, []string{"KVNODE_CORS_ORIGINS=https://a.example.com"}, io.Discard)
	if err != nil || !slices.Equal(cfg.CORSOrigins, []string{"*"}) {
		t.Errorf("the flag over the environment: %q, %v", cfg.CORSOrigins, err)
	}
	for _, bad := range []string{"console.example.com", "https://x.com/app"} {
		if _, _, err := Parse([]string{"--cors-origins", bad}, nil, io.Discard); err == nil || !strings.Contains(err.Error(), "--cors-origins") || !strings.Contains(err.Error(), bad) {
			t.Errorf("--cors-origins %s: %v, want an error naming the flag and the origin", bad, err)
		}
	}
}

func TestParseSize(t *testing.T) {
	for in, want := range map[string]int64{"1": 1, "512KiB": 512 << 10, "16MiB": 16 << 20, "2GiB": 2 << 30, "10B": 10} {
		got, err := ParseSize(in)
		if err != nil || got != want {
			t.Errorf("ParseSize(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	for _, in := range []string{"", "0", "-5", "1.5MiB", "ten"} {
		if _, err := ParseSize(in); err == nil {
			t.Errorf("ParseSize(%q) succeeded, want an error", in)
		}
	}
}

// TestPeerNames: --peer-names comes from the flag, KVNODE_PEER_NAMES or
// the config file's peer-names key, needs --tls-ca (without mutual TLS no
// certificate is checked), and refuses what is not a name or a one-label
// wildcard.
func TestPeerNames(t *testing.T) {
	tlsArgs := []string{"--tls-cert", "n.pem", "--tls-key", "n.key", "--tls-ca", "ca.pem"}
	want := []string{"*.kvnode-peers.default.svc.cluster.local", "kvnode-0.example.com"}
	cfg, _, err := Parse(tlsArgs, []string{"KVNODE_PEER_NAMES=*.kvnode-peers.default.svc.cluster.local, kvnode-0.example.com"}, io.Discard)
	if err != nil || !slices.Equal(cfg.PeerNames, want) {
		t.Errorf("from the environment: %q, %v; want %q", cfg.PeerNames, err, want)
	}
	path := writeConfig(t, "peer-names: ['*.kvnode-peers.default.svc.cluster.local', kvnode-0.example.com]\n")
	cfg, _, err = Parse(append([]string{"--config", path}, tlsArgs...), nil, io.Discard)
	if err != nil || !slices.Equal(cfg.PeerNames, want) {
		t.Errorf("from the config file: %q, %v; want %q", cfg.PeerNames, err, want)
	}
	cfg, _, err = Parse(append([]string{"--peer-names", "a.example.com"}, tlsArgs...), []string{"KVNODE_PEER_NAMES=b.example.com"}, io.Discard)
	if err != nil || !slices.Equal(cfg.PeerNames, []string{"a.example.com"}) {
		t.Errorf("the flag over the environment: %q, %v", cfg.PeerNames, err)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--peer-names", "a.example.com"}, "--peer-names needs --tls-ca"},
		{[]string{"--peer-names", "a.example.com", "--tls-cert", "n.pem", "--tls-key", "n.key"}, "--peer-names needs --tls-ca"},
		{append([]string{"--peer-names", "*"}, tlsArgs...), `--peer-names "*"`},
		{append([]string{"--peer-names", "*.com"}, tlsArgs...), "at least two labels"},
		{append([]string{"--peer-names", "a.*.example.com"}, tlsArgs...), `label "*"`},
		{append([]string{"--peer-names", "kv_0.exa mple.com"}, tlsArgs...), "exa mple"},
		{append([]string{"--peer-names", "a..example.com"}, tlsArgs...), "1 to 63 characters"},
	} {
		if _, _, err := Parse(tc.args, nil, io.Discard); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Parse(%q) error = %v, want it to mention %q", tc.args, err, tc.want)
		}
	}
}

// TestWatchLimits: --max-watchers and --watch-buffer from flags and
// KVNODE_*, and Validate refusing values that are not positive.
func TestWatchLimits(t *testing.T) {
	cfg, _, err := Parse([]string{"--max-watchers=3"}, []string{"KVNODE_WATCH_BUFFER=64"}, io.Discard)
	if err != nil {
		t.Fatalf("parse: %v", err)
	}
	if cfg.MaxWatchers != 3 || cfg.WatchBuffer != 64 {
		t.Errorf("got max watchers %d, watch buffer %d; want 3 and 64", cfg.MaxWatchers, cfg.WatchBuffer)
	}
	for _, args := range [][]string{{"--max-watchers=0"}, {"--watch-buffer=-1"}} {
		cfg, _, err := Parse(args, nil, io.Discard)
		if err == nil {
			err = cfg.Validate()
		}
		flag, _, _ := strings.Cut(args[0], "=")
		if err == nil || !strings.Contains(err.Error(), flag) {
			t.Errorf("%v: got %v, want an error naming %s", args, err, flag)
		}
	}
}

// TestClientCertAuth: --client-cert-auth and --client-ca come from flags,
// KVNODE_* or the config file; client certificates need the REST port's
// TLS and a CA (--client-ca or --tls-ca), and --client-ca alone, which
// would protect nothing, is refused.
func TestClientCertAuth(t *testing.T) {
	restTLS := []string{"--tls-cert", "n.pem", "--tls-key", "n.key"}
	cfg, _, err := Parse(append([]string{"--client-ca", "clients.pem"}, restTLS...), []string{"KVNODE_CLIENT_CERT_AUTH=true"}, io.Discard)
	if err != nil || !cfg.ClientCertAuth || cfg.ClientCA != "clients.pem" {
		t.Errorf("flag and environment: auth %v, CA %q, %v", cfg.ClientCertAuth, cfg.ClientCA, err)
	}
	path := writeConfig(t, "client-cert-auth: true\ntls-ca: ca.pem\n")
	cfg, _, err = Parse(append([]string{"--config", path}, restTLS...), nil, io.Discard)
	if err != nil || !cfg.ClientCertAuth || cfg.ClientCA != "" || cfg.TLSCA != "ca.pem" {
		t.Errorf("config file, the CA of --tls-ca: auth %v, client CA %q, %v", cfg.ClientCertAuth, cfg.ClientCA, err)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--client-cert-auth", "--client-ca", "clients.pem"}, "--client-cert-auth needs --tls-cert and --tls-key"},
		{append([]string{"--client-cert-auth"}, restTLS...), "--client-cert-auth needs the CA of the clients' certificates: --client-ca, or --tls-ca"},
		{append([]string{"--client-ca", "clients.pem"}, restTLS...), "--client-ca is the CA of REST clients' certificates, which only --client-cert-auth asks for"},
	} {
		if _, _, err := Parse(tc.args, nil, io.Discard); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Parse(%q) error = %v, want it to mention %q", tc.args, err, tc.want)
		}
	}
}
