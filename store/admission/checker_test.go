package admission

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kvnode/kvnode/cluster"
	"github.com/kvnode/kvnode/store/transport"
)

// peers is a fake internal network: the identity each address answers
// with, or the error a call to it fails with.
type peers struct {
	mu      sync.Mutex
	answers map[string]Identity // by address
	fail    map[string]error
	calls   map[string]int
	// tamper, when set, changes an answer on its way back.
	tamper func(addr string, a *answer)
}

func (p *peers) Call(_ context.Context, method, addr, path string, body []byte) ([]byte, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.calls[addr]++
	if method != "POST" || path != Path {
		return nil, fmt.Errorf("unexpected call %s %s", method, path)
	}
	if err := p.fail[addr]; err != nil {
		return nil, err
	}
	id, ok := p.answers[addr]
	if !ok {
		return nil, fmt.Errorf("rpc to %s: %w: connection refused", addr, transport.ErrUnreachable)
	}
	out, err := id.Answer(body)
	if err != nil || p.tamper == nil {
		return out, err
	}
	var a answer
	if err := json.Unmarshal(out, &a); err != nil {
		return nil, err
	}
	p.tamper(addr, &a)
	return json.Marshal(a)
}

func (p *peers) Close() {}

// gossip is a fake membership view.
type gossip struct {
	mu      sync.Mutex
	members []cluster.Member
}

func (g *gossip) Members() []cluster.Member {
	g.mu.Lock()
	defer g.mu.Unlock()
	return append([]cluster.Member(nil), g.members...)
}

func (g *gossip) Subscribe() (<-chan struct{}, func()) { return nil, func() {} }

func alive(name, addr string) cluster.Member {
	return cluster.Member{Name: name, Meta: cluster.Meta{InternalAddr: addr}, Status: cluster.StatusAlive}
}

type counted struct {
	mu sync.Mutex
	n  map[string]int
}

func (c *counted) MemberRefused(reason string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.n[reason]++
}

func candidate(t *testing.T, c *Checker, name string) Candidate {
	t.Helper()
	for _, cand := range c.Candidates() {
		if cand.Name == name {
			return cand
		}
	}
	t.Fatalf("%s is not among the candidates: %+v", name, c.Candidates())
	return Candidate{}
}

// TestChecker: members are verified only when the member at the address
// gossip gives answers with that name and address (and, with a gossip
// key, the right proof of it); a failed handshake, another name or
// address, a missing or wrong proof is a refusal with its reason, counted;
// an unreachable member is unverified, not refused; a refused member is
// checked again and verified once it proves itself.
func TestChecker(t *testing.T) {
	key := []byte("0123456789abcdef0123456789abcdef")
	net := &peers{
		answers: map[string]Identity{
			"10.0.0.2:7070": {Name: "b", Addr: "10.0.0.2:7070", Key: key},
			"10.0.0.3:7070": {Name: "c", Addr: "10.0.0.3:7070", Key: []byte("another key, not the cluster's..")},
			"10.0.0.4:7070": {Name: "d", Addr: "10.0.0.4:7070"}, // no key
			"10.0.0.5:7070": {Name: "b", Addr: "10.0.0.2:7070", Key: key},
			"10.0.0.7:7070": {Name: "g", Addr: "10.0.0.70:7070", Key: key},
		},
		fail: map[string]error{
			"10.0.0.6:7070": fmt.Errorf("rpc to 10.0.0.6:7070: %w with 10.0.0.6:7070: the peer's certificate names [billing.other.test], none of which --peer-names [kvnode.peer.test] allows", transport.ErrHandshake),
		},
		calls: map[string]int{},
	}
	g := &gossip{members: []cluster.Member{
		alive("a", "10.0.0.1:7070"), // this member
		alive("b", "10.0.0.2:7070"),
		alive("c", "10.0.0.3:7070"),
		alive("d", "10.0.0.4:7070"),
		alive("e", "10.0.0.5:7070"), // b answers there
		alive("f", "10.0.0.6:7070"),
		alive("g", "10.0.0.7:7070"),
		alive("h", "10.0.0.8:7070"), // nobody there
		{Name: "i", Meta: cluster.Meta{InternalAddr: "10.0.0.9:7070"}, Status: cluster.StatusFailed},
	}}
	obs := &counted{n: map[string]int{}}
	c := New(Config{Self: Identity{Name: "a", Addr: "10.0.0.1:7070", Key: key}, TLS: true, Members: g, Caller: net, RecheckEvery: time.Hour, Observer: obs})
	c.Round(context.Background())

	for _, tc := range []struct {
		name   string
		state  State
		reason string
	}{
		{"a", Verified, ""},
		{"b", Verified, ""},
		{"c", Refused, "its proof of the gossip key is wrong"},
		{"d", Refused, "it sent no proof of the gossip key"},
		{"e", Refused, `the member answering at 10.0.0.5:7070 is "b", not "e"`},
		{"f", Refused, "none of which --peer-names [kvnode.peer.test] allows"},
		{"g", Refused, "says its internal port is at 10.0.0.70:7070"},
		{"h", Unverified, "cannot be reached"},
	} {
		got := candidate(t, c, tc.name)
		if got.State != tc.state || !strings.Contains(got.Reason, tc.reason) {
			t.Errorf("%s: %s (%q), want %s with %q", tc.name, got.State, got.Reason, tc.state, tc.reason)
		}
	}
	for _, cand := range c.Candidates() {
		if cand.Name == "i" {
			t.Errorf("a failed member was checked: %+v", cand)
		}
	}
	if !c.Verified("b", "10.0.0.2:7070") || c.Verified("b", "10.0.0.5:7070") || c.Verified("c", "10.0.0.3:7070") || c.Verified("h", "10.0.0.8:7070") {
		t.Errorf("Verified disagrees with the candidates: %+v", c.Candidates())
	}
	if !c.Verified("a", "10.0.0.1:7070") || c.Verified("a", "10.0.0.9:7070") {
		t.Error("this member is verified at its own address only")
	}
	if c.Refused() != 5 {
		t.Errorf("Refused() = %d, want 5", c.Refused())
	}
	if obs.n[ReasonProof] != 2 || obs.n[ReasonIdentity] != 2 || obs.n[ReasonTLS] != 1 {
		t.Errorf("refusals counted by reason: %v", obs.n)
	}

	// Not checked again before RecheckEvery; verified ones never again.
	c.Round(context.Background())
	if net.calls["10.0.0.2:7070"] != 1 || net.calls["10.0.0.3:7070"] != 1 {
		t.Errorf("calls after a second round within RecheckEvery: %v", net.calls)
	}

	// A refused member that is fixed is verified at its next check.
	c.cfg.RecheckEvery = time.Nanosecond
	net.mu.Lock()
	net.answers["10.0.0.3:7070"] = Identity{Name: "c", Addr: "10.0.0.3:7070", Key: key}
	net.mu.Unlock()
	c.Round(context.Background())
	if got := candidate(t, c, "c"); got.State != Verified {
		t.Errorf("c after its key was fixed: %+v", got)
	}

	// A verified member that moves must prove itself at its new address.
	g.mu.Lock()
	g.members[1] = alive("b", "10.0.0.20:7070")
	g.mu.Unlock()
	c.Round(context.Background())
	if c.Verified("b", "10.0.0.2:7070") || c.Verified("b", "10.0.0.20:7070") {
		t.Errorf("b at a new address where no one answers: %+v", candidate(t, c, "b"))
	}
}

// TestCheckerProofIsBound: a proof of the gossip key answers one
// challenge of one verifier: an answer replayed to another nonce or
// another verifier, or relayed by a member at another address, is
// refused.
func TestCheckerProofIsBound(t *testing.T) {
	key := []byte("0123456789abcdef")
	ch := challenge{Verifier: "a", Nonce: make([]byte, nonceLen)}
	body, _ := json.Marshal(ch)
	out, err := Identity{Name: "b", Addr: "10.0.0.2:7070", Key: key}.Answer(body)
	if err != nil {
		t.Fatal(err)
	}
	var a answer
	if err := json.Unmarshal(out, &a); err != nil {
		t.Fatal(err)
	}
	other := make([]byte, nonceLen)
	other[0] = 1
	for what, mac := range map[string][]byte{
		"another nonce":    proof(key, "a", "b", "10.0.0.2:7070", other),
		"another verifier": proof(key, "z", "b", "10.0.0.2:7070", ch.Nonce),
		"another address":  proof(key, "a", "b", "10.0.0.9:7070", ch.Nonce),
		"another name":     proof(key, "a", "x", "10.0.0.2:7070", ch.Nonce),
		"another key":      proof([]byte("fedcba9876543210"), "a", "b", "10.0.0.2:7070", ch.Nonce),
	} {
		if string(mac) == string(a.MAC) {
			t.Errorf("the proof for %s equals the answer's", what)
		}
	}
	if string(proof(key, "a", "b", "10.0.0.2:7070", ch.Nonce)) != string(a.MAC) {
		t.Error("the answer's proof does not check")
	}

	// A relay: the member at e's address passes the challenge on to b,
	// which answers honestly with its own name and address.
	net := &peers{answers: map[string]Identity{"10.0.0.5:7070": {Name: "b", Addr: "10.0.0.2:7070", Key: key}}, calls: map[string]int{},
		tamper: func(_ string, a *answer) { a.Name, a.Addr = "e", "10.0.0.5:7070" }}
	c := New(Config{Self: Identity{Name: "a", Addr: "10.0.0.1:7070", Key: key}, Members: &gossip{members: []cluster.Member{alive("e", "10.0.0.5:7070")}}, Caller: net})
	c.Round(context.Background())
	if got := candidate(t, c, "e"); got.State != Refused || !strings.Contains(got.Reason, "proof of the gossip key is wrong") {
		t.Errorf("a relayed proof: %+v", got)
	}
}

// TestCheckerRefuse: a member the reconcile loops refuse stays refused,
// unchecked, for the hold, whatever it proved; then it is checked again.
func TestCheckerRefuse(t *testing.T) {
	net := &peers{answers: map[string]Identity{"10.0.0.2:7070": {Name: "b", Addr: "10.0.0.2:7070"}}, calls: map[string]int{}}
	c := New(Config{Self: Identity{Name: "a", Addr: "10.0.0.1:7070"}, Members: &gossip{members: []cluster.Member{alive("b", "10.0.0.2:7070")}}, Caller: net, RecheckEvery: time.Nanosecond})
	c.Round(context.Background())
	if !c.Verified("b", "10.0.0.2:7070") {
		t.Fatalf("b: %+v", candidate(t, c, "b"))
	}
	c.Refuse("b", "10.0.0.2:7070", ReasonCatchUp, "joined as a non-voter but did not catch up within 5m0s", 50*time.Millisecond)
	c.Round(context.Background())
	if got := candidate(t, c, "b"); got.State != Refused || c.Verified("b", "10.0.0.2:7070") || !strings.Contains(got.Reason, "did not catch up") {
		t.Fatalf("b during the hold: %+v", got)
	}
	time.Sleep(60 * time.Millisecond)
	c.Round(context.Background())
	if !c.Verified("b", "10.0.0.2:7070") {
		t.Fatalf("b after the hold: %+v", candidate(t, c, "b"))
	}
}

// TestAnswerRefusesBadChallenges: the answering side takes only a
// well-formed challenge.
func TestAnswerRefusesBadChallenges(t *testing.T) {
	id := Identity{Name: "b", Addr: "x:1", Key: []byte("0123456789abcdef")}
	for _, body := range []string{"", "{", `{"verifier":"a"}`, `{"verifier":"","nonce":"` + strings.Repeat("A", 43) + `="}`, `{"verifier":"a","nonce":"AAAA"}`, `[]`} {
		if _, err := id.Answer([]byte(body)); err == nil {
			t.Errorf("Answer(%q) succeeded", body)
		}
	}
	if _, err := decodeAnswer([]byte(`{"addr":"x"}`)); err == nil {
		t.Error("an answer without a name decoded")
	}
}
