package kvbench

import (
	"errors"
	"fmt"
	"net"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// Workload names one kind of load.
type Workload string

// The workloads, and the Client operation each runs (package kvrest says
// which request of kvnode's REST API each is).
const (
	Put         Workload = "put"           // Put: upsert
	Get         Workload = "get"           // Get, linearizable or stale
	PutIfAbsent Workload = "put-if-absent" // Create of a fresh key
	CAS         Workload = "cas"           // CASClient: Read, then CAS
	Mixed       Workload = "mixed"         // Get or Put, --read-percent gets
	MultiPut    Workload = "multi-put"     // PutMany of --batch random keys
	Load        Workload = "load"          // every key once, in order, by PutMany of --batch keys
	Query       Workload = "query"         // QueryClient: an OQL query
	// Watch is N SSE watchers of one member while writes flow at a fixed
	// rate: package watchbench runs it (Run refuses it), with this
	// package's Config for the connection, region, keys and rate.
	Watch Workload = "watch"
)

// Workloads lists every workload, in the order the help shows them.
var Workloads = []Workload{Put, Get, PutIfAbsent, CAS, Mixed, MultiPut, Load, Query, Watch}

// Route says where a request goes.
type Route string

const (
	// RoundRobin sends successive requests to the endpoints in turn
	// (kvnode: package client with single hop off).
	RoundRobin Route = "round-robin"
	// Leader sends a key's request to the member that leads its group, as
	// the routing document says (kvnode: package client's single hop,
	// which reads the document again when a member says it forwarded);
	// keys whose leader is unknown, and queries, go round robin.
	Leader Route = "leader"
)

// Limits on what one run may ask for: every loop is bounded.
const (
	MaxConcurrency = 4096
	MaxDuration    = time.Hour // per point, warm-up included
	MaxKeys        = 100_000_000
	MaxBatch       = 10_000
	MaxValueSize   = 8 << 20
	MaxOps         = 1_000_000_000
)

// Default values of the configuration.
const (
	DefaultTarget     = "kvnode"
	DefaultRegion     = "orders"
	DefaultKeys       = 1000
	DefaultValueSize  = 256
	DefaultDuration   = 10 * time.Second
	DefaultTimeout    = 10 * time.Second
	DefaultMaxOps     = 10_000_000
	DefaultKeyPrefix  = "kvbench-"
	DefaultBatch      = 10
	DefaultReadPct    = 50
	DefaultZipfS      = 1.1
	DefaultZipfV      = 1
	DefaultQuery      = "SELECT * FROM /{region} o WHERE o.customerId = $1"
	DefaultQueryID    = "kvbench"
	DefaultPreloadFor = 5 * time.Minute
)

// Config is one invocation: what to send, where, how hard and for how long.
// Default() fills it; Validate checks it.
type Config struct {
	// Target names the system measured (DefaultTarget is kvnode's REST
	// API); the program maps it to its Dial, and it is echoed in the
	// results.
	Target string
	// Endpoints are member base URLs (http://host:port). They must be
	// loopback addresses unless AllowNonLoopback is set.
	Endpoints        []string
	AllowNonLoopback bool
	Route            Route

	// User and Password, when User is set, go as HTTP Basic credentials.
	User, Password string
	// CACert, Cert, Key name PEM files; Insecure accepts any certificate.
	CACert, Cert, Key string
	Insecure          bool
	// Timeout bounds each request.
	Timeout time.Duration

	// Region is the region the workload uses. CreateRegion, when set
	// (REPLICATE or PARTITION), creates it first if it does not exist.
	Region       string
	CreateRegion string

	Workload Workload
	// Stale reads with ?consistency=stale (get, mixed, CAS's read, query).
	Stale bool
	// ReadPercent is the share of gets in the mixed workload.
	ReadPercent int
	// Batch is the number of keys of one multi-key put.
	Batch int
	// Query is the OQL text of the query workload: {region} stands for the
	// region's name, $1, $2... for a customer id drawn per request (bound
	// in a named query, written into the text of an ad-hoc one).
	Query string
	// NamedQuery runs the query as a named query (created or updated under
	// QueryID before the run) instead of an ad-hoc one.
	NamedQuery bool
	QueryID    string

	// Keys is the size of the key space; KeyPrefix starts every key.
	Keys      int
	KeyPrefix string
	// ValueSize is the size in bytes of the values written (at least the
	// order-shaped value without padding, ~120 bytes).
	ValueSize int
	// Zipf draws keys from a zipf distribution with ZipfS (> 1) and ZipfV
	// (≥ 1), key 0 the most frequent; else uniformly.
	Zipf         bool
	ZipfS, ZipfV float64
	// Preload writes every key of the key space before the first point
	// (all workloads but put-if-absent), bounded by PreloadTimeout.
	Preload        bool
	PreloadTimeout time.Duration

	// Concurrency lists the points of the sweep: clients in flight.
	Concurrency []int
	// Rate, when > 0, is the fixed rate in operations per second of every
	// point (open loop); 0 is a closed loop.
	Rate float64
	// Warmup runs unmeasured before each point; Duration bounds its
	// measured part, and MaxOps the operations in each of the two.
	Warmup, Duration time.Duration
	MaxOps           int64

	// Seed makes key choices and draws repeatable.
	Seed uint64
	// Label is echoed in every result.
	Label string
}

// Default is the configuration of kvbench without flags.
func Default() Config {
	return Config{
		Target:         DefaultTarget,
		Endpoints:      []string{"http://127.0.0.1:8080"},
		Route:          RoundRobin,
		Timeout:        DefaultTimeout,
		Region:         DefaultRegion,
		Workload:       Put,
		ReadPercent:    DefaultReadPct,
		Batch:          DefaultBatch,
		Query:          DefaultQuery,
		QueryID:        DefaultQueryID,
		Keys:           DefaultKeys,
		KeyPrefix:      DefaultKeyPrefix,
		ValueSize:      DefaultValueSize,
		ZipfS:          DefaultZipfS,
		ZipfV:          DefaultZipfV,
		Preload:        true,
		PreloadTimeout: DefaultPreloadFor,
		Concurrency:    []int{16},
		Duration:       DefaultDuration,
		MaxOps:         DefaultMaxOps,
		Seed:           1,
	}
}

// ParseConcurrency reads a sweep, "1,16,64,256".
func ParseConcurrency(s string) ([]int, error) {
	var out []int
	for _, f := range strings.Split(s, ",") {
		f = strings.TrimSpace(f)
		if f == "" {
			continue
		}
		n, err := strconv.Atoi(f)
		if err != nil {
			return nil, fmt.Errorf("concurrency %q is not a number", f)
		}
		out = append(out, n)
	}
	if len(out) == 0 {
		return nil, errors.New("concurrency: no value")
	}
	return out, nil
}

// ParseRegionSpec reads --create-region's NAME:TYPE (TYPE REPLICATE or
// PARTITION, any case; NAME alone is REPLICATE).
func ParseRegionSpec(s string) (name, kind string, err error) {
	name, kind, found := strings.Cut(s, ":")
	if !found {
		kind = "REPLICATE"
	}
	kind = strings.ToUpper(strings.TrimSpace(kind))
	name = strings.TrimSpace(name)
	if name == "" {
		return "", "", fmt.Errorf("region %q: want NAME:REPLICATE or NAME:PARTITION", s)
	}
	if kind != "REPLICATE" && kind != "PARTITION" {
		return "", "", fmt.Errorf("region %q: type %q is neither REPLICATE nor PARTITION", s, kind)
	}
	return name, kind, nil
}

// Validate refuses a configuration that cannot mean what was asked, or
// that would not be bounded.
func (c *Config) Validate() error {
	if c.Target == "" {
		return errors.New("no target")
	}
	if len(c.Endpoints) == 0 {
		return errors.New("no endpoints")
	}
	for i, e := range c.Endpoints {
		e = strings.TrimRight(strings.TrimSpace(e), "/")
		u, err := url.Parse(e)
		if err != nil || u.Host == "" || (u.Scheme != "http" && u.Scheme != "https") || (u.Path != "" && u.Path != "/") {
			return fmt.Errorf("endpoint %q: want http://host:port or https://host:port", c.Endpoints[i])
		}
		if !c.AllowNonLoopback {
			if err := requireLoopback(u.Hostname()); err != nil {
				return err
			}
		}
		c.Endpoints[i] = e
	}
	switch c.Route {
	case RoundRobin, Leader:
	default:
		return fmt.Errorf("route %q: want %s or %s", c.Route, RoundRobin, Leader)
	}
	if !isWorkload(c.Workload) {
		return fmt.Errorf("workload %q: want one of %s", c.Workload, workloadNames())
	}
	if (c.User == "") != (c.Password == "") {
		return errors.New("credentials: give both a user and a password, or neither")
	}
	if (c.Cert == "") != (c.Key == "") {
		return errors.New("a client certificate and its key go together")
	}
	if c.Timeout <= 0 {
		return errors.New("timeout must be positive")
	}
	if c.Region == "" || strings.ContainsAny(c.Region, "/,") {
		return fmt.Errorf("region %q: want a region name", c.Region)
	}
	if c.CreateRegion != "" && c.CreateRegion != "REPLICATE" && c.CreateRegion != "PARTITION" {
		return fmt.Errorf("region type %q: want REPLICATE or PARTITION", c.CreateRegion)
	}
	if c.Keys < 1 || c.Keys > MaxKeys {
		return fmt.Errorf("keys must be in 1..%d", MaxKeys)
	}
	if c.KeyPrefix == "" || strings.ContainsAny(c.KeyPrefix, ",/") || strings.ContainsFunc(c.KeyPrefix, func(r rune) bool { return r < 0x20 || r == 0x7f }) {
		return fmt.Errorf("key prefix %q: want a non-empty prefix without ',', '/' or control characters", c.KeyPrefix)
	}
	if c.ValueSize < 0 || c.ValueSize > MaxValueSize {
		return fmt.Errorf("value size must be in 0..%d", MaxValueSize)
	}
	if c.ReadPercent < 0 || c.ReadPercent > 100 {
		return errors.New("read percent must be in 0..100")
	}
	if c.Workload == MultiPut && (c.Batch < 2 || c.Batch > MaxBatch || c.Batch > c.Keys) {
		return fmt.Errorf("batch must be in 2..%d and at most the key count (%d)", MaxBatch, c.Keys)
	}
	if c.Workload == Load {
		if c.Batch < 1 || c.Batch > MaxBatch {
			return fmt.Errorf("batch must be in 1..%d", MaxBatch)
		}
		if c.Warmup > 0 || len(c.Concurrency) > 1 {
			return errors.New("load writes every key once: no warm-up, one concurrency")
		}
	}
	if c.Workload == Query {
		if strings.TrimSpace(c.Query) == "" {
			return errors.New("query: no OQL text")
		}
		if c.NamedQuery && c.QueryID == "" {
			return errors.New("query id: empty")
		}
	}
	if c.Zipf && (c.ZipfS <= 1 || c.ZipfV < 1) {
		return errors.New("zipf: s must be > 1 and v ≥ 1")
	}
	if len(c.Concurrency) == 0 {
		return errors.New("concurrency: no value")
	}
	for _, n := range c.Concurrency {
		if n < 1 || n > MaxConcurrency {
			return fmt.Errorf("concurrency %d: want 1..%d", n, MaxConcurrency)
		}
	}
	if c.Rate < 0 {
		return errors.New("rate must be ≥ 0 (0: closed loop)")
	}
	if c.Duration <= 0 || c.Warmup < 0 || c.Duration+c.Warmup > MaxDuration {
		return fmt.Errorf("duration must be positive, and with the warm-up at most %v", MaxDuration)
	}
	if c.MaxOps < 1 || c.MaxOps > MaxOps {
		return fmt.Errorf("ops must be in 1..%d", int64(MaxOps))
	}
	if c.Preload && (c.PreloadTimeout <= 0 || c.PreloadTimeout > MaxDuration) {
		return fmt.Errorf("preload timeout must be in (0, %v]", MaxDuration)
	}
	return nil
}

func isWorkload(w Workload) bool {
	for _, k := range Workloads {
		if w == k {
			return true
		}
	}
	return false
}

func workloadNames() string {
	names := make([]string, len(Workloads))
	for i, w := range Workloads {
		names[i] = string(w)
	}
	return strings.Join(names, ", ")
}

// requireLoopback refuses a host that is not, or does not resolve only
// to, loopback addresses: a benchmark is load, and load on somebody
// else's machine must be asked for (--allow-nonloopback).
func requireLoopback(host string) error {
	if ip := net.ParseIP(host); ip != nil {
		if !ip.IsLoopback() {
			return fmt.Errorf("endpoint host %s is not a loopback address (use --allow-nonloopback to load another machine)", host)
		}
		return nil
	}
	ips, err := net.LookupIP(host)
	if err != nil {
		return fmt.Errorf("resolve %s: %v", host, err)
	}
	for _, ip := range ips {
		if !ip.IsLoopback() {
			return fmt.Errorf("endpoint host %s resolves to %s, not a loopback address (use --allow-nonloopback to load another machine)", host, ip)
		}
	}
	return nil
}

// CheckURL applies the endpoint rules to a URL the cluster advertised (a
// member's REST URL, for leader routing).
func (c *Config) CheckURL(raw string) (string, error) {
	raw = strings.TrimRight(raw, "/")
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" || (u.Scheme != "http" && u.Scheme != "https") {
		return "", fmt.Errorf("member URL %q: not http(s)://host:port", raw)
	}
	if !c.AllowNonLoopback {
		if err := requireLoopback(u.Hostname()); err != nil {
			return "", fmt.Errorf("member URL %s: %w", raw, err)
		}
	}
	return raw, nil
}
