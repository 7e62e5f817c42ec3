package cluster

import (
	"cmp"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/hashicorp/memberlist"
)

// view is this node's members view: every member it has ever seen, with its
// status and since-when, plus the subscribers to changes.
//
// It is memberlist's EventDelegate. memberlist forgets dead nodes after
// GossipToTheDeadTime (seconds), but the store times members out after days,
// so the view never deletes anyone: a failed or left member stays until it
// comes back, and only the store decides when it is gone for good.
//
// memberlist calls the Notify methods while holding its own node lock, so
// they must never block or call back into memberlist: they update the map
// and signal subscribers without waiting.
type view struct {
	log *slog.Logger
	now func() time.Time

	mu      sync.Mutex
	members map[string]entry
	subs    map[chan struct{}]struct{}
}

// entry is a member plus what the view needs to tell a leave from a failure.
type entry struct {
	Member
	boot    uint64 // the run of the member's process, from its metadata
	leaving bool   // that run announced a graceful leave
}

func newView(log *slog.Logger, now func() time.Time) *view {
	return &view{
		log:     log,
		now:     now,
		members: make(map[string]entry),
		subs:    make(map[chan struct{}]struct{}),
	}
}

// NotifyJoin: a node is new to memberlist, or came back from dead or left.
func (v *view) NotifyJoin(n *memberlist.Node) { v.apply(n, true) }

// NotifyUpdate: an alive node changed its metadata.
func (v *view) NotifyUpdate(n *memberlist.Node) { v.apply(n, true) }

// NotifyLeave: a node left gracefully or failure detection declared it
// dead. Which one it was is read from its metadata (see wireMeta), since
// memberlist does not say.
func (v *view) NotifyLeave(n *memberlist.Node) { v.apply(n, false) }

// apply records what memberlist said about node n and signals subscribers
// if anything a reader can see changed.
func (v *view) apply(n *memberlist.Node, alive bool) {
	wm, metaErr := decodeMeta(n.Meta)

	v.mu.Lock()
	old, known := v.members[n.Name]
	if metaErr != nil && !known {
		v.mu.Unlock()
		v.log.Warn("ignoring gossip member with unreadable metadata",
			"member", n.Name, "addr", n.Address(), "error", metaErr)
		return
	}
	if metaErr != nil {
		// The status change is still true; keep the last metadata we could read.
		wm = wireMeta{Meta: old.Meta, boot: old.boot, leaving: old.leaving}
	}
	// The leave may be known already (from a peer, see leftsync.go) even
	// when this copy of the metadata predates the flag.
	leaving := wm.leaving || (known && old.boot == wm.boot && old.leaving)
	e := entry{
		Member:  Member{Name: n.Name, GossipAddr: n.Address(), Meta: wm.Meta, Since: old.Since},
		boot:    wm.boot,
		leaving: leaving,
	}
	// A leave announced by this run of the member (its boot id) is final
	// for that run, even while memberlist, which learns of the departure
	// only through gossip, still reports it alive. A restart has a new boot
	// id and so counts as alive again.
	switch {
	case leaving:
		e.Status = StatusLeft
	case alive:
		e.Status = StatusAlive
	default:
		e.Status = StatusFailed
	}
	statusChanged := !known || old.Status != e.Status
	if statusChanged {
		e.Since = v.now()
	}
	changed := !known || !sameMember(old.Member, e.Member)
	v.members[n.Name] = e
	if changed {
		v.signalLocked()
	}
	v.mu.Unlock()

	if metaErr != nil {
		v.log.Warn("gossip member sent unreadable metadata; keeping the previous one",
			"member", n.Name, "error", metaErr)
	}
	m := e.Member
	switch {
	case !changed:
	case statusChanged && m.Status == StatusAlive:
		v.log.Info("member alive", "member", m.Name, "addr", m.GossipAddr, "rest", m.RESTURL, "internal", m.InternalAddr, "version", m.Version)
	case statusChanged && m.Status == StatusFailed:
		v.log.Warn("member failed", "member", m.Name, "addr", m.GossipAddr)
	case statusChanged:
		v.log.Info("member left", "member", m.Name, "addr", m.GossipAddr)
	default:
		v.log.Info("member updated", "member", m.Name, "addr", m.GossipAddr, "rest", m.RESTURL, "internal", m.InternalAddr, "version", m.Version)
	}
}

// applyLeftClaims takes a peer's (or the leaving member's own) word that
// these members left. A member in the claimed run that this view has as
// failed is corrected to left, its Since kept, since it stopped being alive
// then; one still alive here becomes left now.
func (v *view) applyLeftClaims(claims []leftClaim) {
	var corrected []string
	v.mu.Lock()
	for _, c := range claims {
		e, ok := v.members[c.name]
		if !ok || e.boot != c.boot || e.leaving {
			continue
		}
		e.leaving = true
		if e.Status != StatusLeft {
			if e.Status == StatusAlive {
				e.Since = v.now()
			}
			e.Status = StatusLeft
			corrected = append(corrected, c.name)
		}
		v.members[c.name] = e
	}
	if len(corrected) > 0 {
		v.signalLocked()
	}
	v.mu.Unlock()
	for _, name := range corrected {
		v.log.Info("member left (told by the member or a peer)", "member", name)
	}
}

// leftClaims lists the members seen leaving within leftClaimHorizon, for
// peers that may have missed it.
func (v *view) leftClaims() []leftClaim {
	cutoff := v.now().Add(-leftClaimHorizon)
	var claims []leftClaim
	v.mu.Lock()
	for _, e := range v.members {
		if e.Status == StatusLeft && e.Since.After(cutoff) {
			claims = append(claims, leftClaim{name: e.Name, boot: e.boot})
		}
	}
	v.mu.Unlock()
	return claims
}

// sameMember reports whether a and b look the same to a reader.
func sameMember(a, b Member) bool {
	return a.Name == b.Name && a.GossipAddr == b.GossipAddr && a.Status == b.Status && a.Since.Equal(b.Since) &&
		a.RESTURL == b.RESTURL && a.InternalAddr == b.InternalAddr && a.BootstrapExpect == b.BootstrapExpect &&
		a.Version == b.Version && slices.Equal(a.Groups, b.Groups)
}

// signalLocked wakes every subscriber without blocking. A subscriber that
// has not consumed its last signal already has one pending, which is enough:
// signals say "look again", not what changed.
func (v *view) signalLocked() {
	for ch := range v.subs {
		select {
		case ch <- struct{}{}:
		default:
		}
	}
}

// list returns the members that keep reports true, sorted by name. The
// copies share nothing with the view.
func (v *view) list(keep func(Member) bool) []Member {
	v.mu.Lock()
	out := make([]Member, 0, len(v.members))
	for _, e := range v.members {
		if keep(e.Member) {
			m := e.Member
			m.Groups = slices.Clone(m.Groups)
			out = append(out, m)
		}
	}
	v.mu.Unlock()
	slices.SortFunc(out, func(a, b Member) int { return cmp.Compare(a.Name, b.Name) })
	return out
}

// subscribe registers a capacity-1 channel for change signals. The returned
// func unregisters and closes it; it may be called more than once.
func (v *view) subscribe() (<-chan struct{}, func()) {
	ch := make(chan struct{}, 1)
	v.mu.Lock()
	v.subs[ch] = struct{}{}
	v.mu.Unlock()
	var once sync.Once
	return ch, func() {
		once.Do(func() {
			v.mu.Lock()
			delete(v.subs, ch)
			// Under the lock, so no signal can be sent on the closed channel.
			close(ch)
			v.mu.Unlock()
		})
	}
}
