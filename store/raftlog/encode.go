package raftlog

import (
	"encoding/binary"
	"errors"
	"time"

	"github.com/hashicorp/raft"
)

// An entry's encoding: a version byte, then uvarint Index, uvarint Term,
// a byte Type, uvarint length and Data, uvarint length and Extensions,
// varint AppendedAt (Unix nanoseconds, 0 for the zero time). Plain
// lengths and copies: decoding is linear in the entry's size (go-msgpack,
// which raft-boltdb uses, reads a large byte slice in quadratic time).
const encodingV1 = 1

func encode(dst []byte, l *raft.Log) []byte {
	dst = append(dst, encodingV1)
	dst = binary.AppendUvarint(dst, l.Index)
	dst = binary.AppendUvarint(dst, l.Term)
	dst = append(dst, byte(l.Type))
	dst = binary.AppendUvarint(dst, uint64(len(l.Data)))
	dst = append(dst, l.Data...)
	dst = binary.AppendUvarint(dst, uint64(len(l.Extensions)))
	dst = append(dst, l.Extensions...)
	var at int64
	if !l.AppendedAt.IsZero() {
		at = l.AppendedAt.UnixNano()
	}
	return binary.AppendVarint(dst, at)
}

var errMalformed = errors.New("malformed entry")

// decode reads an entry into out. Data and Extensions alias v (capped, so
// an append to them cannot write into v's other bytes): the caller hands
// over a buffer it allocated for this entry alone and never changes
// afterwards (GetLog reads each entry into a new one). Copying them out
// again cost a second pass over every entry read, and a restart reads
// every entry of the log twice (raft's scan for configurations at start,
// then the replay): at afae736, 0.65 s of memmove in a restarting
// member's CPU profile with a million entries in the log.
func decode(v []byte, out *raft.Log) error {
	if len(v) == 0 || v[0] != encodingV1 {
		return errMalformed
	}
	v = v[1:]
	u := func() (uint64, bool) {
		x, n := binary.Uvarint(v)
		if n <= 0 {
			return 0, false
		}
		v = v[n:]
		return x, true
	}
	bytes := func() ([]byte, bool) {
		n, ok := u()
		if !ok || n > uint64(len(v)) {
			return nil, false
		}
		var b []byte
		if n > 0 {
			b = v[:n:n]
		}
		v = v[n:]
		return b, true
	}
	var ok bool
	if out.Index, ok = u(); !ok {
		return errMalformed
	}
	if out.Term, ok = u(); !ok {
		return errMalformed
	}
	if len(v) == 0 {
		return errMalformed
	}
	out.Type = raft.LogType(v[0])
	v = v[1:]
	if out.Data, ok = bytes(); !ok {
		return errMalformed
	}
	if out.Extensions, ok = bytes(); !ok {
		return errMalformed
	}
	at, n := binary.Varint(v)
	if n <= 0 || n != len(v) {
		return errMalformed
	}
	out.AppendedAt = time.Time{}
	if at != 0 {
		out.AppendedAt = time.Unix(0, at)
	}
	return nil
}
