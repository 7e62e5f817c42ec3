package admission

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"sort"
	"sync"
	"time"

	"github.com/kvnode/kvnode/cluster"
	"github.com/kvnode/kvnode/store/transport"
)

// State is where a candidate stands.
type State string

const (
	// Unverified: not proved yet (not checked yet, or its internal port
	// could not be reached).
	Unverified State = "unverified"
	// Verified: it proved its identity at its current address.
	Verified State = "verified"
	// Refused: its proof failed, or a reconcile loop removed it (Refuse).
	Refused State = "refused"
)

// Reasons of a refusal, the label of the refusal metric.
const (
	ReasonTLS      = "tls"      // the internal port's TLS handshake failed
	ReasonIdentity = "identity" // it answers with another name or address
	ReasonProof    = "proof"    // no proof, or a wrong one, of the gossip key
	ReasonAnswer   = "answer"   // no answer to the identity call
	ReasonCatchUp  = "catch-up" // removed for not catching up (Refuse)
)

// Reasons are every reason label, so a metric can define them all at once.
func Reasons() []string {
	return []string{ReasonTLS, ReasonIdentity, ReasonProof, ReasonAnswer, ReasonCatchUp}
}

// Candidate is a member as this member's checks see it.
type Candidate struct {
	Name string
	// Addr is the internal address gossip gives for it, the one checked.
	Addr  string
	State State
	// Reason says why it is refused or unverified.
	Reason string
	// Since is when it entered State, Checked when it was last checked.
	Since, Checked time.Time
}

// Caller makes the identity call on another member's internal port.
type Caller interface {
	Call(ctx context.Context, method, addr, path string, body []byte) ([]byte, error)
	// Close drops idle connections, so that every check makes a
	// handshake of its own.
	Close()
}

// Gossip is the membership view whose members are checked (package
// cluster's).
type Gossip interface {
	Members() []cluster.Member
	Subscribe() (<-chan struct{}, func())
}

// Observer hears of every failed check, by reason (nil: none).
type Observer interface {
	MemberRefused(reason string)
}

// Config configures a Checker.
type Config struct {
	// Self is this member; it is verified without a check.
	Self Identity
	// TLS says the internal port runs mutual TLS (Caller dials with it).
	TLS     bool
	Members Gossip
	Caller  Caller
	// RecheckEvery is how often a candidate that is not verified is
	// checked again (default 5s); Timeout bounds one check (default 3s).
	RecheckEvery time.Duration
	Timeout      time.Duration
	Logger       *slog.Logger
	Observer     Observer
}

// logEvery is how often a refusal of the same member is logged.
const logEvery = time.Minute

// parallel bounds the checks run at once (a flood of strangers that do not
// answer must not hold a round for long).
const parallel = 8

// Checker checks the identity of every member gossip shows alive and
// remembers the outcome by name and address. Its methods are safe for
// concurrent use.
type Checker struct {
	cfg Config

	mu     sync.Mutex
	byName map[string]*entry
	// subs hear of every member that becomes verified.
	subs map[chan struct{}]bool
}

type entry struct {
	Candidate
	reason string    // the metric's label of a refusal
	hold   time.Time // a refusal by Refuse stands, unchecked, until then
	logged time.Time // when the refusal was last logged
}

// New returns a checker; Run starts its checks.
func New(cfg Config) *Checker {
	if cfg.RecheckEvery <= 0 {
		cfg.RecheckEvery = 5 * time.Second
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = 3 * time.Second
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	return &Checker{cfg: cfg, byName: map[string]*entry{}, subs: map[chan struct{}]bool{}}
}

// Run checks the candidates that need it after every gossip change and
// every second, until stop is closed.
func (c *Checker) Run(stop <-chan struct{}) {
	sub, unsub := c.cfg.Members.Subscribe()
	defer unsub()
	t := time.NewTicker(time.Second)
	defer t.Stop()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		<-stop
		cancel()
	}()
	for {
		c.Round(ctx)
		select {
		case <-stop:
			return
		case <-t.C:
		case <-sub:
		}
	}
}

// Round checks, once, every alive member that is not verified at the
// address gossip gives and is due for a check, and forgets members gossip
// no longer lists. Run calls it; tests call it directly.
func (c *Checker) Round(ctx context.Context) {
	due := c.due(time.Now())
	if len(due) == 0 {
		return
	}
	sem := make(chan struct{}, parallel)
	var wg sync.WaitGroup
	for _, m := range due {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			state, label, reason := c.check(ctx, m)
			if ctx.Err() != nil {
				return // stopping: no verdict
			}
			c.record(m, state, label, reason, time.Now())
		})
	}
	wg.Wait()
	c.cfg.Caller.Close()
}

// due are the members to check now.
func (c *Checker) due(now time.Time) []cluster.Member {
	c.mu.Lock()
	defer c.mu.Unlock()
	listed := map[string]bool{}
	var out []cluster.Member
	for _, m := range c.cfg.Members.Members() {
		listed[m.Name] = true
		if m.Name == c.cfg.Self.Name || m.Status != cluster.StatusAlive || m.InternalAddr == "" {
			continue
		}
		e := c.byName[m.Name]
		if e == nil || e.Addr != m.InternalAddr {
			// New, or at a new address: whatever it proved elsewhere
			// proves nothing here.
			e = &entry{Candidate: Candidate{Name: m.Name, Addr: m.InternalAddr, State: Unverified, Reason: "not checked yet", Since: now}}
			c.byName[m.Name] = e
		}
		switch {
		case e.State == Verified, now.Before(e.hold):
		case e.Checked.IsZero() || now.Sub(e.Checked) >= c.cfg.RecheckEvery:
			out = append(out, m)
		}
	}
	for name := range c.byName {
		if !listed[name] {
			delete(c.byName, name)
		}
	}
	return out
}

// check makes the identity call to m and judges its answer.
func (c *Checker) check(ctx context.Context, m cluster.Member) (state State, label, reason string) {
	nonce := make([]byte, nonceLen)
	_, _ = rand.Read(nonce) // never fails (crypto/rand)
	body, err := json.Marshal(challenge{Verifier: c.cfg.Self.Name, Nonce: nonce})
	if err != nil {
		return Refused, ReasonAnswer, err.Error()
	}
	ctx, cancel := context.WithTimeout(ctx, c.cfg.Timeout)
	defer cancel()
	data, err := c.cfg.Caller.Call(ctx, http.MethodPost, m.InternalAddr, Path, body)
	switch {
	case errors.Is(err, transport.ErrHandshake):
		if c.cfg.TLS {
			return Refused, ReasonTLS, fmt.Sprintf("the mutual TLS handshake with its internal port at %s failed (a certificate not from the cluster's CA, a name --peer-names does not allow, no certificate, or no TLS): %v", m.InternalAddr, err)
		}
		return Refused, ReasonTLS, err.Error()
	case errors.Is(err, transport.ErrUnreachable), errors.Is(err, context.DeadlineExceeded):
		return Unverified, "", fmt.Sprintf("its internal port at %s cannot be reached: %v", m.InternalAddr, err)
	case err != nil:
		return Refused, ReasonAnswer, fmt.Sprintf("it does not answer the identity call on its internal port at %s (not a kvnode member of this release, or one without --tls-ca where this cluster has it): %v", m.InternalAddr, err)
	}
	a, err := decodeAnswer(data)
	switch {
	case err != nil:
		return Refused, ReasonAnswer, err.Error()
	case a.Name != m.Name:
		return Refused, ReasonIdentity, fmt.Sprintf("the member answering at %s is %q, not %q", m.InternalAddr, a.Name, m.Name)
	case a.Addr != m.InternalAddr:
		return Refused, ReasonIdentity, fmt.Sprintf("it was reached at %s but says its internal port is at %s", m.InternalAddr, a.Addr)
	case c.cfg.Self.Key != nil && len(a.MAC) == 0:
		return Refused, ReasonProof, "it sent no proof of the gossip key (--gossip-key not set there)"
	case c.cfg.Self.Key != nil && !hmac.Equal(a.MAC, proof(c.cfg.Self.Key, c.cfg.Self.Name, a.Name, a.Addr, nonce)):
		return Refused, ReasonProof, "its proof of the gossip key is wrong (another --gossip-key)"
	}
	return Verified, "", ""
}

// record keeps the outcome of a check of m, unless gossip moved it
// meanwhile, and logs and counts a refusal.
func (c *Checker) record(m cluster.Member, state State, label, reason string, now time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e := c.byName[m.Name]
	if e == nil || e.Addr != m.InternalAddr {
		return
	}
	c.set(e, state, label, reason, now)
	e.Checked = now
}

// set moves e to state; c.mu is held.
func (c *Checker) set(e *entry, state State, label, reason string, now time.Time) {
	if e.State != state {
		e.Since = now
		if state == Verified {
			c.cfg.Logger.Info("a member proved its identity and may join Raft groups", "member", e.Name, "address", e.Addr)
			for ch := range c.subs {
				select {
				case ch <- struct{}{}:
				default:
				}
			}
		}
	}
	e.State, e.Reason, e.reason = state, reason, label
	if state != Refused {
		return
	}
	if c.cfg.Observer != nil {
		c.cfg.Observer.MemberRefused(label)
	}
	if now.Sub(e.logged) >= logEvery {
		e.logged = now
		c.cfg.Logger.Warn("refused a member: it stays out of every Raft group", "member", e.Name, "address", e.Addr, "reason", label, "detail", reason)
	}
}

// Verified reports whether member name proved its identity at addr. This
// member is always verified at its own address.
func (c *Checker) Verified(name, addr string) bool {
	if name == c.cfg.Self.Name {
		return addr == c.cfg.Self.Addr
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	e := c.byName[name]
	return e != nil && e.State == Verified && e.Addr == addr
}

// Refuse refuses member name at addr for d, whatever it proved: the
// reconcile loops removed it (label, reason say why), and it must not be
// added back before d has passed. It is then checked again.
func (c *Checker) Refuse(name, addr, label, reason string, d time.Duration) {
	if name == c.cfg.Self.Name {
		return
	}
	now := time.Now()
	c.mu.Lock()
	defer c.mu.Unlock()
	e := c.byName[name]
	if e == nil || e.Addr != addr {
		e = &entry{Candidate: Candidate{Name: name, Addr: addr, Since: now}}
		c.byName[name] = e
	}
	c.set(e, Refused, label, reason, now)
	e.hold = now.Add(d)
	e.Checked = now
}

// Candidates is every member checked here, by name, this member included
// (verified).
func (c *Checker) Candidates() []Candidate {
	c.mu.Lock()
	out := make([]Candidate, 0, len(c.byName)+1)
	for _, e := range c.byName {
		out = append(out, e.Candidate)
	}
	c.mu.Unlock()
	out = append(out, Candidate{Name: c.cfg.Self.Name, Addr: c.cfg.Self.Addr, State: Verified})
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// Subscribe returns a channel with capacity 1 that receives a signal
// whenever a member becomes verified (the reconcile loops then add it
// without waiting for their next tick), and the function that ends the
// subscription.
func (c *Checker) Subscribe() (<-chan struct{}, func()) {
	ch := make(chan struct{}, 1)
	c.mu.Lock()
	c.subs[ch] = true
	c.mu.Unlock()
	return ch, func() {
		c.mu.Lock()
		delete(c.subs, ch)
		c.mu.Unlock()
	}
}

// Refused counts the members refused now.
func (c *Checker) Refused() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := 0
	for _, e := range c.byName {
		if e.State == Refused {
			n++
		}
	}
	return n
}

// Watch is gossip's view g with a signal on every change of gossip and
// whenever a member proves its identity here, which changes whom the
// reconcile loops may add: they follow it instead of g, so they add a
// member as soon as it has proved itself, not at their next tick.
func (c *Checker) Watch(g Gossip) Gossip { return watched{g, c} }

type watched struct {
	Gossip
	c *Checker
}

func (w watched) Subscribe() (<-chan struct{}, func()) {
	gossip, endGossip := w.Gossip.Subscribe()
	proved, endProved := w.c.Subscribe()
	out := make(chan struct{}, 1)
	done := make(chan struct{})
	go func() {
		for {
			select {
			case <-gossip:
			case <-proved:
			case <-done:
				return
			}
			select {
			case out <- struct{}{}:
			default:
			}
		}
	}()
	var once sync.Once
	return out, func() {
		once.Do(func() {
			close(done)
			endGossip()
			endProved()
		})
	}
}
