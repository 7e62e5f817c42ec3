package cluster

import (
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"net"
	"net/netip"
	"strconv"
	"time"

	"github.com/hashicorp/memberlist"
)

// Config configures a Cluster. The zero value of every field but Name has a
// usable default.
type Config struct {
	// Name identifies this node in the cluster. It must be unique and
	// stable across restarts: a node that comes back under its old name is
	// the same member again.
	Name string
	// BindAddr is the host:port to listen on for gossip, TCP and UDP. The
	// host must be an IP or empty (all IPv4 interfaces); port 0 picks a free
	// port. Default "0.0.0.0:7946".
	BindAddr string
	// AdvertiseAddr is the ip:port other nodes should use to reach this one.
	// Empty lets memberlist derive it: the bind IP, or a private interface
	// IP when bound to all interfaces.
	AdvertiseAddr string
	// Meta is what this node advertises about itself.
	Meta Meta
	// Join lists seeds as host[:port] (default port 7946). DNS names are
	// re-resolved on every attempt, and every address is tried; this node's
	// own addresses are skipped, so every member may get the same list.
	Join []string
	// Resolver looks up DNS names in Join. Nil means net.DefaultResolver;
	// tests give one that asks their own DNS server, to join through a
	// name that resolves to every member the way a Kubernetes headless
	// service does.
	Resolver *net.Resolver
	// RetryInterval is the pause between join attempts while no other
	// member is alive. Default 2s.
	RetryInterval time.Duration
	// Profile selects memberlist's timing: "lan" (default) or "local"
	// (fast failure detection, for tests and single-host clusters).
	Profile string
	// SecretKey, when set (16, 24 or 32 bytes), encrypts and
	// authenticates all gossip with AES-GCM (memberlist's keyring): a node
	// without the key can neither read the cluster's gossip nor join it.
	SecretKey []byte
	// Logger receives this package's logs and memberlist's. Default
	// slog.Default().
	Logger *slog.Logger
}

const (
	defaultGossipPort    = 7946
	defaultRetryInterval = 2 * time.Second
	// slowRetryFactor: once another member is alive, absent seeds are
	// re-joined this many retry intervals apart (30s by default), which heals
	// partitions that outlasted memberlist's memory of dead nodes without
	// hammering seeds that are simply down.
	slowRetryFactor = 15
)

// settings is a validated Config with defaults applied, in the types the
// rest of the package works with.
type settings struct {
	name      string
	bind      netip.AddrPort
	advertise netip.AddrPort // invalid: let memberlist derive it
	meta      []byte         // encoded Meta
	leaving   []byte         // encoded Meta with the leaving flag, gossiped by Leave
	boot      uint64         // this run's boot id
	seeds     []seed
	resolver  *net.Resolver
	retry     time.Duration
	profile   string
	secret    []byte
	log       *slog.Logger
}

func (cfg Config) settings() (settings, error) {
	s := settings{
		name:     cfg.Name,
		resolver: cfg.Resolver,
		retry:    cfg.RetryInterval,
		profile:  cfg.Profile,
		secret:   cfg.SecretKey,
		log:      cfg.Logger,
	}
	switch len(s.secret) {
	case 0, 16, 24, 32:
	default:
		return settings{}, fmt.Errorf("gossip key: %d bytes; want 16, 24 or 32", len(s.secret))
	}
	if s.name == "" {
		return settings{}, errors.New("node name is empty")
	}
	var err error
	if s.bind, err = parseBindAddr(cfg.BindAddr); err != nil {
		return settings{}, err
	}
	if cfg.AdvertiseAddr != "" {
		if s.advertise, err = netip.ParseAddrPort(cfg.AdvertiseAddr); err != nil {
			return settings{}, fmt.Errorf("advertise address %q must be ip:port: %w", cfg.AdvertiseAddr, err)
		}
		s.advertise = netip.AddrPortFrom(s.advertise.Addr().Unmap(), s.advertise.Port())
	} else if s.bind.Addr().Is6() && s.bind.Addr().IsUnspecified() {
		// memberlist derives an address only for 0.0.0.0; from [::] it
		// would advertise "::", which nobody can reach.
		return settings{}, fmt.Errorf("bind address %s listens on all IPv6 interfaces: set an advertise address", s.bind)
	}
	// A fresh boot id per run tells this run's leave from a later run's.
	boot := rand.Uint64()
	s.boot = boot
	if s.meta, err = encodeMeta(wireMeta{Meta: cfg.Meta, boot: boot}); err != nil {
		return settings{}, err
	}
	if s.leaving, err = encodeMeta(wireMeta{Meta: cfg.Meta, boot: boot, leaving: true}); err != nil {
		return settings{}, err
	}
	for _, entry := range cfg.Join {
		sd, err := parseSeed(entry)
		if err != nil {
			return settings{}, err
		}
		s.seeds = append(s.seeds, sd)
	}
	if s.retry <= 0 {
		s.retry = defaultRetryInterval
	}
	if s.profile == "" {
		s.profile = "lan"
	}
	if s.log == nil {
		s.log = slog.Default()
	}
	return s, nil
}

// parseBindAddr accepts "ip:port", ":port" and "" (all IPv4 interfaces,
// port 7946).
func parseBindAddr(addr string) (netip.AddrPort, error) {
	if addr == "" {
		return netip.AddrPortFrom(netip.IPv4Unspecified(), defaultGossipPort), nil
	}
	host, portStr, err := net.SplitHostPort(addr)
	if err != nil {
		return netip.AddrPort{}, fmt.Errorf("bind address %q must be host:port: %w", addr, err)
	}
	port, err := strconv.ParseUint(portStr, 10, 16)
	if err != nil {
		return netip.AddrPort{}, fmt.Errorf("bind address %q: bad port: %w", addr, err)
	}
	ip := netip.IPv4Unspecified()
	if host != "" {
		if ip, err = netip.ParseAddr(host); err != nil {
			return netip.AddrPort{}, fmt.Errorf("bind address %q: host must be an IP: %w", addr, err)
		}
	}
	return netip.AddrPortFrom(ip.Unmap(), uint16(port)), nil
}

// memberlistConfig builds memberlist's configuration for s, wiring in the
// delegates.
func memberlistConfig(s settings, d *gossipDelegate, v *view) (*memberlist.Config, error) {
	var mc *memberlist.Config
	switch s.profile {
	case "lan":
		mc = memberlist.DefaultLANConfig()
		// A node that crashed and came back at a new address (a rescheduled
		// pod) may take over its old name once the old entry has been dead
		// this long. Consul uses the same value: long enough that two
		// misconfigured processes sharing a name do not flap, short next to
		// how long a replacement takes to start.
		mc.DeadNodeReclaimTime = 30 * time.Second
	case "local":
		mc = memberlist.DefaultLocalConfig()
		// On one host names are unique by construction; let a restarted node
		// take its name back as soon as the old one is dead.
		mc.DeadNodeReclaimTime = time.Nanosecond
	default:
		return nil, fmt.Errorf("gossip profile %q: want \"lan\" or \"local\"", s.profile)
	}
	mc.Name = s.name
	mc.Conflict = conflictLogger{log: s.log}
	mc.Logger = newMemberlistLogger(s.log)
	mc.LogOutput = nil
	mc.BindAddr = s.bind.Addr().String()
	mc.BindPort = int(s.bind.Port())
	mc.AdvertiseAddr = ""
	mc.AdvertisePort = int(s.bind.Port())
	if s.advertise.IsValid() {
		mc.AdvertiseAddr = s.advertise.Addr().String()
		mc.AdvertisePort = int(s.advertise.Port())
	}
	if len(s.secret) > 0 {
		mc.SecretKey = s.secret
		mc.GossipVerifyIncoming = true
		mc.GossipVerifyOutgoing = true
	}
	if ip := s.bind.Addr(); !ip.IsUnspecified() {
		// A specific bind IP: outgoing TCP leaves from it too.
		t, err := newBoundTransport(net.IP(ip.AsSlice()), int(s.bind.Port()), mc.Logger)
		if err != nil {
			return nil, err
		}
		mc.Transport = t
		mc.BindPort = t.GetAutoBindPort()
		if !s.advertise.IsValid() {
			mc.AdvertisePort = mc.BindPort
		}
	}
	mc.Delegate = d
	mc.Events = v
	return mc, nil
}
