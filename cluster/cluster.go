package cluster

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"slices"
	"sync"
	"time"

	"github.com/hashicorp/memberlist"
)

// defaultLeaveTimeout applies when Leave is given no timeout, because
// memberlist would otherwise wait forever for the broadcast to go out.
const defaultLeaveTimeout = 5 * time.Second

// Cluster is this node's membership in the gossip cluster: it advertises the
// node's Meta, keeps the members view and retries joining the seeds.
type Cluster struct {
	name      string
	localAddr string // advertised gossip address, host:port
	bindIP    netip.Addr
	bindPort  uint16 // the port actually bound, also when 0 was asked for
	seeds     []seed
	resolver  *net.Resolver
	retry     time.Duration
	log       *slog.Logger

	ml       *memberlist.Memberlist
	view     *view
	delegate *gossipDelegate
	leaving  []byte // encoded metadata with the leaving flag
	boot     uint64 // this run's boot id

	// lifeMu orders Start, Leave and Shutdown: memberlist panics on a Leave
	// after Shutdown, and the join loop must not start after either.
	lifeMu     sync.Mutex
	started    bool
	stopped    bool // Leave or Shutdown ran: no more joining
	left       bool
	shut       bool
	cancelLoop context.CancelFunc
	loopDone   sync.WaitGroup
}

// New validates cfg and starts gossip: it listens on cfg.BindAddr and
// answers other nodes at once, but joins nobody until Start.
func New(cfg Config) (*Cluster, error) {
	s, err := cfg.settings()
	if err != nil {
		return nil, err
	}
	v := newView(s.log, time.Now)
	d := newGossipDelegate(s.meta, v, s.log)
	mc, err := memberlistConfig(s, d, v)
	if err != nil {
		return nil, err
	}
	ml, err := memberlist.Create(mc)
	if err != nil {
		if mc.Transport != nil {
			_ = mc.Transport.Shutdown()
		}
		return nil, fmt.Errorf("start memberlist on %s: %w", s.bind, err)
	}
	return &Cluster{
		name:      s.name,
		localAddr: ml.LocalNode().Address(),
		bindIP:    s.bind.Addr(),
		bindPort:  uint16(mc.BindPort), // memberlist stores the chosen port here
		seeds:     s.seeds,
		resolver:  s.resolver,
		retry:     s.retry,
		log:       s.log,
		ml:        ml,
		view:      v,
		delegate:  d,
		leaving:   s.leaving,
		boot:      s.boot,
	}, nil
}

// Start starts the retry-join loop, which runs until ctx is done or the
// node leaves or shuts down. Calls after the first, or after Leave or
// Shutdown, do nothing.
func (c *Cluster) Start(ctx context.Context) {
	c.lifeMu.Lock()
	defer c.lifeMu.Unlock()
	if c.started || c.stopped {
		return
	}
	c.started = true
	ctx, c.cancelLoop = context.WithCancel(ctx)
	c.loopDone.Add(1)
	go c.joinLoop(ctx)
}

// LocalName is this node's name.
func (c *Cluster) LocalName() string { return c.name }

// LocalAddr is the gossip address this node advertises (host:port), with
// the port actually bound when BindAddr asked for port 0.
func (c *Cluster) LocalAddr() string { return c.localAddr }

// Members returns every member ever seen, alive or not, this node included,
// sorted by name.
func (c *Cluster) Members() []Member {
	return c.view.list(func(Member) bool { return true })
}

// Alive returns the members whose status is StatusAlive, sorted by name.
func (c *Cluster) Alive() []Member {
	return c.view.list(func(m Member) bool { return m.Status == StatusAlive })
}

// RESTURLs returns the advertised REST URLs of the alive members, sorted.
// Members that advertise none are skipped.
func (c *Cluster) RESTURLs() []string { return RESTURLs(c.Alive()) }

// RESTURLs returns the advertised REST URLs of members, sorted; members
// that advertise none are skipped.
func RESTURLs(members []Member) []string {
	var urls []string
	for _, m := range members {
		if m.RESTURL != "" {
			urls = append(urls, m.RESTURL)
		}
	}
	slices.Sort(urls)
	return urls
}

// HealthScore is memberlist's awareness of this node's own health: 0 when
// it is healthy, up to the profile's awareness limit when its probes of
// others keep missing their deadlines (it is slow, overloaded or cut
// off); memberlist then lengthens its own timeouts.
func (c *Cluster) HealthScore() int { return c.ml.GetHealthScore() }

// Subscribe returns a channel with capacity 1 that receives a signal after
// every change of the members view (join, leave, failure, metadata). Signals
// coalesce: one pending signal stands for any number of changes, so read
// the view again on each. Call the returned func to unsubscribe; it closes
// the channel and may be called more than once.
func (c *Cluster) Subscribe() (<-chan struct{}, func()) {
	return c.view.subscribe()
}

// Leave tells the other members that this node leaves for good, so they see
// StatusLeft instead of waiting for failure detection, and stops joining.
// It waits up to timeout (5s if not positive) for the news to go out. Call
// Shutdown afterwards. Calls after the first do nothing.
//
// It takes two steps, each given half the time: gossip metadata flagged
// "leaving" (see wireMeta), then announce the departure. A member that
// misses the first step sees the departure as a failure, which is the safe
// mistake: the store waits longer before removing a failed member.
func (c *Cluster) Leave(timeout time.Duration) error {
	c.lifeMu.Lock()
	defer c.lifeMu.Unlock()
	if c.shut {
		return errors.New("leave gossip: already shut down")
	}
	if c.left {
		// Advertising again would make memberlist mark this node alive.
		return nil
	}
	c.left = true
	c.stopLoopLocked()
	if timeout <= 0 {
		timeout = defaultLeaveTimeout
	}
	deadline := time.Now().Add(timeout)
	c.delegate.setMeta(c.leaving)
	if err := c.ml.UpdateNode(timeout / 2); err != nil {
		c.log.Warn("announcing the leave to gossip timed out; some members may see this node as failed", "error", err)
	}
	c.noticeLeave(deadline)
	if err := c.ml.Leave(time.Until(deadline)); err != nil {
		return fmt.Errorf("leave gossip: %w", err)
	}
	return nil
}

// noticeLeave tells every alive member directly, over memberlist's reliable
// (TCP) channel, that this run of the node is leaving. Gossip spreads the
// flagged metadata only probabilistically, and the departure itself may
// overtake it; a direct notice sent before the departure makes every
// reachable member record a leave, not a failure, at once. Members it
// cannot reach learn it from their peers (leftsync.go).
func (c *Cluster) noticeLeave(deadline time.Time) {
	msg := append([]byte{msgLeaveNotice}, encodeLeftClaims([]leftClaim{{name: c.name, boot: c.boot}})...)
	var wg sync.WaitGroup
	for _, n := range c.ml.Members() {
		if n.Name == c.name {
			continue
		}
		wg.Add(1)
		go func(n *memberlist.Node) {
			defer wg.Done()
			if err := c.ml.SendReliable(n, msg); err != nil {
				c.log.Debug("could not notify a member of our leave", "member", n.Name, "error", err)
			}
		}(n)
	}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(time.Until(deadline) / 2):
		c.log.Warn("notifying members of the leave is slow; going ahead")
	}
}

// Shutdown stops gossip. Without a Leave first, the other members see this
// node fail. Safe to call more than once.
func (c *Cluster) Shutdown() error {
	c.lifeMu.Lock()
	if c.shut {
		c.lifeMu.Unlock()
		return nil
	}
	c.shut = true
	c.stopLoopLocked()
	c.lifeMu.Unlock()

	err := c.ml.Shutdown()
	// The loop is cancelled; a join in flight ends within memberlist's TCP
	// timeout (10s on lan, 1s on local).
	c.loopDone.Wait()
	if err != nil {
		return fmt.Errorf("shut down gossip: %w", err)
	}
	return nil
}

func (c *Cluster) stopLoopLocked() {
	c.stopped = true
	if c.cancelLoop != nil {
		c.cancelLoop()
	}
}
