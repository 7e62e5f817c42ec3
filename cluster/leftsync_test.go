package cluster

import (
	"reflect"
	"testing"
	"time"

	"github.com/hashicorp/memberlist"
)

func TestLeftClaimsRoundTrip(t *testing.T) {
	want := []leftClaim{{name: "a", boot: 1}, {name: "kvnode-2", boot: 0xfeedface_cafebeef}}
	got, err := decodeLeftClaims(encodeLeftClaims(want))
	if err != nil {
		t.Fatalf("decodeLeftClaims: %v", err)
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("round trip: got %+v, want %+v", got, want)
	}
	if b := encodeLeftClaims(nil); b != nil {
		t.Errorf("no claims: got %x, want no state at all", b)
	}
}

func TestDecodeLeftClaimsRejectsBadInput(t *testing.T) {
	good := encodeLeftClaims([]leftClaim{{name: "a", boot: 1}})
	for name, b := range map[string][]byte{
		"empty":          nil,
		"unknown format": append([]byte{leftSyncFormat + 1}, good[1:]...),
		"truncated":      good[:len(good)-1],
		"huge count":     {leftSyncFormat, 0xff, 0xff, 0xff, 0xff, 0x0f},
	} {
		if claims, err := decodeLeftClaims(b); err == nil {
			t.Errorf("%s: got %+v, want error", name, claims)
		}
	}
}

// TestLeftSyncCorrectsMissedLeave: a member that saw a leave as a failure
// (it missed the leaving flag) learns the truth from a peer's push/pull
// state, but not for a later run of the same node.
func TestLeftSyncCorrectsMissedLeave(t *testing.T) {
	meta := Meta{RESTURL: "http://10.0.0.1:8080"}
	flagged := wireMeta{Meta: meta, boot: 7, leaving: true}
	plain := wireMeta{Meta: meta, boot: 7}

	// The peer saw b leave.
	peer, _ := newTestView()
	peer.NotifyJoin(nodeMeta(t, "b", 7946, plain))
	peer.NotifyUpdate(nodeMeta(t, "b", 7946, flagged))
	peer.NotifyLeave(nodeMeta(t, "b", 7946, flagged))
	// This node got the departure without the flag.
	local, _ := newTestView()
	local.NotifyJoin(nodeMeta(t, "b", 7946, plain))
	local.NotifyLeave(nodeMeta(t, "b", 7946, plain))
	failed := member(t, local, "b")
	if failed.Status != StatusFailed {
		t.Fatalf("before sync: got %v, want %v", failed.Status, StatusFailed)
	}
	ch, unsub := local.subscribe()
	defer unsub()

	quiet := slogDiscard()
	pushPull(newGossipDelegate(nil, peer, quiet), newGossipDelegate(nil, local, quiet))
	got := member(t, local, "b")
	if got.Status != StatusLeft || !got.Since.Equal(failed.Since) {
		t.Errorf("after sync: got %v since %v, want %v since %v", got.Status, got.Since, StatusLeft, failed.Since)
	}
	if !signalled(ch) {
		t.Error("correction: got no signal, want one")
	}

	// A later run of b (new boot id) that fails is not corrected by the
	// old claim.
	local.NotifyJoin(nodeMeta(t, "b", 7946, wireMeta{Meta: meta, boot: 8}))
	local.NotifyLeave(nodeMeta(t, "b", 7946, wireMeta{Meta: meta, boot: 8}))
	pushPull(newGossipDelegate(nil, peer, quiet), newGossipDelegate(nil, local, quiet))
	if got := member(t, local, "b").Status; got != StatusFailed {
		t.Errorf("later run after stale claim: got %v, want %v", got, StatusFailed)
	}
}

// TestLeftSyncBeforeDeparture: a claim (or the member's own notice) that
// arrives while gossip still reports the member alive makes it left at
// once; later alive reports of the same run do not revive it, and the
// departure keeps it left. A new run is alive again.
func TestLeftSyncBeforeDeparture(t *testing.T) {
	v, _ := newTestView()
	plain := wireMeta{Meta: Meta{RESTURL: "http://10.0.0.1:8080"}, boot: 7}
	v.NotifyJoin(nodeMeta(t, "b", 7946, plain))
	v.applyLeftClaims([]leftClaim{{name: "b", boot: 7}})
	if got := member(t, v, "b").Status; got != StatusLeft {
		t.Fatalf("after claim: got %v, want %v", got, StatusLeft)
	}
	v.NotifyUpdate(nodeMeta(t, "b", 7946, plain))
	if got := member(t, v, "b").Status; got != StatusLeft {
		t.Fatalf("stale alive report of the same run: got %v, want still %v", got, StatusLeft)
	}
	v.NotifyLeave(nodeMeta(t, "b", 7946, plain))
	if got := member(t, v, "b").Status; got != StatusLeft {
		t.Errorf("departure after claim: got %v, want %v", got, StatusLeft)
	}
	v.NotifyJoin(nodeMeta(t, "b", 7946, wireMeta{Meta: plain.Meta, boot: 8}))
	if got := member(t, v, "b").Status; got != StatusAlive {
		t.Errorf("a new run after the leave: got %v, want %v", got, StatusAlive)
	}
}

func TestLeftClaimsHorizon(t *testing.T) {
	v, clock := newTestView()
	flagged := wireMeta{boot: 7, leaving: true}
	v.NotifyJoin(nodeMeta(t, "b", 7946, flagged))
	v.NotifyLeave(nodeMeta(t, "b", 7946, flagged))
	if got := v.leftClaims(); !reflect.DeepEqual(got, []leftClaim{{name: "b", boot: 7}}) {
		t.Errorf("fresh leave: got claims %+v, want [{b 7}]", got)
	}
	clock.t = clock.t.Add(leftClaimHorizon + time.Minute)
	if got := v.leftClaims(); len(got) != 0 {
		t.Errorf("leave older than %v: got claims %+v, want none", leftClaimHorizon, got)
	}
}

// pushPull plays memberlist's state exchange from one delegate to another.
func pushPull(from, to memberlist.Delegate) {
	to.MergeRemoteState(from.LocalState(false), false)
}

// FuzzDecodeLeftClaims: a peer's state never panics the decoder.
func FuzzDecodeLeftClaims(f *testing.F) {
	f.Add(encodeLeftClaims([]leftClaim{{name: "a", boot: 1}, {name: "b", boot: 2}}))
	f.Add([]byte{leftSyncFormat, 0xff})
	f.Fuzz(func(t *testing.T, b []byte) {
		claims, err := decodeLeftClaims(b)
		if err != nil {
			return
		}
		again, err := decodeLeftClaims(encodeLeftClaims(claims))
		if len(claims) > 0 && (err != nil || !reflect.DeepEqual(again, claims)) {
			t.Fatalf("re-decode: got %+v, %v; want %+v", again, err, claims)
		}
	})
}
