package cluster

import (
	"log/slog"
	"sync/atomic"

	"github.com/hashicorp/memberlist"
)

// gossipDelegate answers memberlist's questions about the local node: it
// advertises the encoded metadata and, in push/pull exchanges, the members
// seen leaving (leftsync.go). Nothing else travels over gossip: what must
// be agreed on goes through Raft.
type gossipDelegate struct {
	// meta is the encoded metadata to advertise. New checked that every
	// value it ever holds fits MetaMaxSize; Leave swaps in the variant with
	// the leaving flag.
	meta atomic.Pointer[[]byte]
	view *view
	log  *slog.Logger
}

func newGossipDelegate(meta []byte, v *view, log *slog.Logger) *gossipDelegate {
	d := &gossipDelegate{view: v, log: log}
	d.setMeta(meta)
	return d
}

func (d *gossipDelegate) setMeta(b []byte) { d.meta.Store(&b) }

func (d *gossipDelegate) NodeMeta(limit int) []byte {
	b := *d.meta.Load()
	if len(b) > limit {
		// Unreachable after New's check, but memberlist panics on metadata
		// over its limit, so never hand it any.
		return nil
	}
	return b
}

// LocalState is this node's part of a push/pull exchange.
func (d *gossipDelegate) LocalState(bool) []byte {
	return encodeLeftClaims(d.view.leftClaims())
}

// MergeRemoteState takes the peer's part of a push/pull exchange.
func (d *gossipDelegate) MergeRemoteState(buf []byte, _ bool) {
	if len(buf) == 0 {
		return
	}
	claims, err := decodeLeftClaims(buf)
	if err != nil {
		d.log.Debug("ignoring a peer's gossip state", "error", err)
		return
	}
	d.view.applyLeftClaims(claims)
}

// msgLeaveNotice starts a user message that carries left claims (the
// encoding of leftsync.go): a leaving member's direct notice.
const msgLeaveNotice byte = 'L'

// NotifyMsg receives user messages: only leave notices.
func (d *gossipDelegate) NotifyMsg(msg []byte) {
	if len(msg) == 0 || msg[0] != msgLeaveNotice {
		d.log.Debug("ignoring an unknown gossip message")
		return
	}
	claims, err := decodeLeftClaims(msg[1:])
	if err != nil {
		d.log.Debug("ignoring a malformed leave notice", "error", err)
		return
	}
	d.view.applyLeftClaims(claims)
}

func (*gossipDelegate) GetBroadcasts(_, _ int) [][]byte { return nil }

// conflictLogger reports a node that claims the name of a member at another
// address. memberlist keeps the member it knows and drops the claim; the
// view never sees it. Two live processes with one name is a configuration
// error that only an operator can fix, so it is logged loudly.
type conflictLogger struct {
	log *slog.Logger
}

func (c conflictLogger) NotifyConflict(existing, other *memberlist.Node) {
	c.log.Warn("gossip name conflict: a node claims the name of a known member; ignoring it",
		"member", existing.Name, "known_addr", existing.Address(), "claimant_addr", other.Address())
}
