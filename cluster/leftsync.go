package cluster

import (
	"encoding/binary"
	"errors"
	"fmt"
	"time"
)

// Left-member anti-entropy. A member that misses a leaving node's flagged
// metadata (a relay dropped it when the departure overtook it) records the
// departure as a failure. To repair that, every push/pull, memberlist's
// periodic full-state exchange, carries the members this node saw leave;
// the receiver corrects a failed member to left when the claim names the
// same run of the node (boot id). So every member agrees within a push/pull
// interval or two (30s on lan), and the store, which removes left members
// at once but failed ones only after days, sees the truth.

// leftClaim says: member name, in its run boot, left gracefully.
type leftClaim struct {
	name string
	boot uint64
}

// leftClaimHorizon: claims older than this (by our clock) are not sent any
// more. Members exchange state every 30s, so an hour leaves a wide margin,
// and the state stays small however many members have ever left.
const leftClaimHorizon = time.Hour

// Layout: format byte, uvarint count, then per claim a string name and an
// 8-byte big-endian boot id. Decoders ignore trailing bytes, as for meta.
const leftSyncFormat byte = 1

func encodeLeftClaims(claims []leftClaim) []byte {
	if len(claims) == 0 {
		return nil
	}
	b := []byte{leftSyncFormat}
	b = binary.AppendUvarint(b, uint64(len(claims)))
	for _, c := range claims {
		b = appendString(b, c.name)
		b = binary.BigEndian.AppendUint64(b, c.boot)
	}
	return b
}

func decodeLeftClaims(b []byte) ([]leftClaim, error) {
	if len(b) == 0 {
		return nil, errors.New("decode left members: empty")
	}
	if b[0] != leftSyncFormat {
		return nil, fmt.Errorf("decode left members: unknown format %d, want %d", b[0], leftSyncFormat)
	}
	d := wireDecoder{buf: b[1:]}
	n := d.count(1 + 8)
	claims := make([]leftClaim, 0, n)
	for range n {
		claims = append(claims, leftClaim{name: d.string(), boot: d.uint64()})
	}
	if d.err != nil {
		return nil, fmt.Errorf("decode left members: %w", d.err)
	}
	return claims, nil
}
