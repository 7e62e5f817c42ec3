package cluster

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
)

const (
	// resolveTimeout bounds one DNS lookup of a seed, so a dead resolver
	// delays an attempt instead of stalling the loop.
	resolveTimeout = 5 * time.Second
	// warnEvery limits join-failure warnings while the node is alone; the
	// failures in between are logged at debug.
	warnEvery = time.Minute
)

// seed is one Join entry: an IP literal or a DNS name, and a port.
type seed struct {
	host string
	port uint16
}

func (s seed) String() string { return net.JoinHostPort(s.host, strconv.Itoa(int(s.port))) }

// parseSeed accepts "host", "host:port", "ip", "ipv6", "[ipv6]" and
// "[ipv6]:port"; the port defaults to 7946.
func parseSeed(entry string) (seed, error) {
	entry = strings.TrimSpace(entry)
	if entry == "" {
		return seed{}, errors.New("join address is empty")
	}
	bare := entry
	if strings.HasPrefix(entry, "[") && strings.HasSuffix(entry, "]") {
		bare = entry[1 : len(entry)-1]
	}
	if ip, err := netip.ParseAddr(bare); err == nil {
		return seed{host: ip.Unmap().String(), port: defaultGossipPort}, nil
	}
	host, portStr, err := net.SplitHostPort(entry)
	if err != nil {
		if strings.ContainsAny(entry, ":[]") {
			return seed{}, fmt.Errorf("join address %q must be host[:port]: %w", entry, err)
		}
		host, portStr = entry, strconv.Itoa(defaultGossipPort)
	}
	port, err := strconv.ParseUint(portStr, 10, 16)
	if err != nil || port == 0 {
		return seed{}, fmt.Errorf("join address %q: port must be 1-65535", entry)
	}
	if host == "" {
		return seed{}, fmt.Errorf("join address %q: host is empty", entry)
	}
	if ip, err := netip.ParseAddr(host); err == nil {
		host = ip.Unmap().String()
	}
	return seed{host: host, port: uint16(port)}, nil
}

// joinLoop retries joining until ctx ends. While no other member is alive
// it tries every RetryInterval; afterwards it keeps re-joining, at a slower
// pace, any seed address that is not an alive member. That heals a
// partition even after memberlist has stopped gossiping to the dead, which
// a node started alone would otherwise never recover from.
func (c *Cluster) joinLoop(ctx context.Context) {
	defer c.loopDone.Done()
	if len(c.seeds) == 0 {
		return
	}
	var (
		joined   bool
		failures int
		lastWarn time.Time
	)
	timer := time.NewTimer(0)
	defer timer.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-timer.C:
		}
		contacted, err := c.joinOnce(ctx)
		if ctx.Err() != nil {
			return
		}
		alive := c.ml.NumMembers()
		peers := alive > 1
		switch {
		case peers && !joined:
			c.log.Info("joined the cluster", "contacted", contacted, "alive", alive)
			failures = 0
		case !peers && joined:
			c.log.Warn("no other member is alive; retrying join", "every", c.retry)
		}
		joined = peers

		if err != nil {
			failures++
			if !joined && time.Since(lastWarn) >= warnEvery {
				c.log.Warn("join failed; retrying", "attempts", failures, "every", c.retry, "error", err)
				lastWarn = time.Now()
			} else {
				c.log.Debug("join attempt failed", "attempts", failures, "error", err)
			}
		}

		wait := c.retry
		if joined {
			wait = c.retry * slowRetryFactor
		}
		timer.Reset(wait)
	}
}

// joinOnce resolves every seed afresh and joins the addresses that are
// neither this node nor an alive member. It returns how many it contacted
// and what went wrong (failed lookups included, even when nothing was left
// to join).
func (c *Cluster) joinOnce(ctx context.Context) (int, error) {
	resolved, resolveErr := resolveSeeds(ctx, c.resolver, c.seeds)
	alive := make(map[netip.AddrPort]bool)
	for _, n := range c.ml.Members() {
		if ip, ok := netip.AddrFromSlice(n.Addr); ok {
			alive[netip.AddrPortFrom(ip.Unmap(), n.Port)] = true
		}
	}
	targets := joinTargets(resolved, c.selfAddrs(), alive)
	if len(targets) == 0 {
		return 0, resolveErr
	}
	if ctx.Err() != nil {
		return 0, ctx.Err()
	}
	n, err := c.ml.Join(targets)
	if n == 0 && err == nil {
		err = errors.New("no seed answered")
	}
	if err != nil {
		return n, errors.Join(fmt.Errorf("join %s: %w", strings.Join(targets, ", "), err), resolveErr)
	}
	return n, resolveErr
}

// joinTargets returns the resolved addresses that are neither one of ours
// nor an alive member, deduplicated and sorted, as memberlist.Join wants them.
func joinTargets(resolved []netip.AddrPort, self, alive map[netip.AddrPort]bool) []string {
	var out []string
	seen := make(map[netip.AddrPort]bool)
	for _, ap := range resolved {
		ap = netip.AddrPortFrom(ap.Addr().Unmap(), ap.Port())
		if seen[ap] || self[ap] || alive[ap] {
			continue
		}
		seen[ap] = true
		out = append(out, ap.String())
	}
	slices.Sort(out)
	return out
}

// selfAddrs is every address at which this node's gossip listens or
// advertises. Seeds often include the node itself (a StatefulSet gives
// every pod the same list), and joining oneself is a wasted round trip at
// best.
func (c *Cluster) selfAddrs() map[netip.AddrPort]bool {
	self := make(map[netip.AddrPort]bool)
	if ap, err := netip.ParseAddrPort(c.localAddr); err == nil {
		self[netip.AddrPortFrom(ap.Addr().Unmap(), ap.Port())] = true
	}
	if !c.bindIP.IsUnspecified() {
		self[netip.AddrPortFrom(c.bindIP, c.bindPort)] = true
		return self
	}
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		c.log.Debug("listing interface addresses to skip our own seed", "error", err)
		return self
	}
	for _, a := range addrs {
		if ipnet, ok := a.(*net.IPNet); ok {
			if ip, ok := netip.AddrFromSlice(ipnet.IP); ok {
				self[netip.AddrPortFrom(ip.Unmap(), c.bindPort)] = true
			}
		}
	}
	return self
}

// resolveSeeds turns seeds into addresses, resolving DNS names concurrently
// (every A and AAAA record) so one slow name does not hold up the others.
// It returns every address it found and the lookups that failed.
func resolveSeeds(ctx context.Context, resolver *net.Resolver, seeds []seed) ([]netip.AddrPort, error) {
	if resolver == nil {
		resolver = net.DefaultResolver
	}
	var (
		mu   sync.Mutex
		out  []netip.AddrPort
		errs []error
		wg   sync.WaitGroup
	)
	for _, s := range seeds {
		if ip, err := netip.ParseAddr(s.host); err == nil {
			mu.Lock()
			out = append(out, netip.AddrPortFrom(ip, s.port))
			mu.Unlock()
			continue
		}
		wg.Go(func() {
			lctx, cancel := context.WithTimeout(ctx, resolveTimeout)
			defer cancel()
			ips, err := resolver.LookupNetIP(lctx, "ip", s.host)
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				errs = append(errs, fmt.Errorf("resolve %s: %w", s, err))
				return
			}
			for _, ip := range ips {
				out = append(out, netip.AddrPortFrom(ip.Unmap(), s.port))
			}
		})
	}
	wg.Wait()
	return out, errors.Join(errs...)
}
