package cluster

import (
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/hashicorp/memberlist"
)

// wireMeta is what a node gossips about itself: its Meta, the id of this
// run of its process, and whether it has begun a graceful leave.
//
// The leaving flag is how other nodes tell a leave from a failure.
// memberlist knows the difference but keeps it private: the Node handed to
// NotifyLeave does not carry it (Node.State stays zero in v0.5.4). So Leave
// first gossips metadata with the flag set, through memberlist's own
// dissemination, and only then announces its departure; when the departure
// arrives, the last metadata seen says which it was. Members that missed the
// flag learn it later from their peers (leftsync.go); the boot id keeps
// that news from applying to a later run of the same node.
type wireMeta struct {
	Meta
	boot    uint64
	leaving bool
}

// The encoding is compact, because it rides in every alive message and
// memberlist allows at most memberlist.MetaMaxSize (512) bytes:
//
//	byte     format version (metaFormat)
//	string   RESTURL
//	string   InternalAddr
//	string   Version
//	uvarint  BootstrapExpect
//	uvarint  number of groups, then each group as a string
//	8 bytes  boot id, big-endian
//	uvarint  flags: bit 0 = leaving
//	uvarint  Formats (appended later: absent from older members, read as 0)
//
// Compatibility: a decoder reads the fields it knows and ignores any bytes
// after them, so a later release may append fields without changing the
// format byte and older nodes still understand it. A change that old nodes
// must not misread gets a new format byte, which they reject (and log).
const metaFormat byte = 1

const flagLeaving = 1 << 0

// encodeMeta encodes m and checks that it fits in memberlist's node metadata.
func encodeMeta(m wireMeta) ([]byte, error) {
	if m.BootstrapExpect < 0 {
		return nil, fmt.Errorf("bootstrap-expect %d is negative", m.BootstrapExpect)
	}
	b := []byte{metaFormat}
	b = appendString(b, m.RESTURL)
	b = appendString(b, m.InternalAddr)
	b = appendString(b, m.Version)
	b = binary.AppendUvarint(b, uint64(m.BootstrapExpect))
	b = binary.AppendUvarint(b, uint64(len(m.Groups)))
	for _, g := range m.Groups {
		b = appendString(b, g)
	}
	b = binary.BigEndian.AppendUint64(b, m.boot)
	var flags uint64
	if m.leaving {
		flags |= flagLeaving
	}
	b = binary.AppendUvarint(b, flags)
	b = binary.AppendUvarint(b, uint64(m.Formats))
	if len(b) > memberlist.MetaMaxSize {
		return nil, fmt.Errorf("node metadata is %d bytes encoded, more than gossip's limit of %d (shorten the REST URL, addresses or member groups)",
			len(b), memberlist.MetaMaxSize)
	}
	return b, nil
}

// decodeMeta is the inverse of encodeMeta.
func decodeMeta(b []byte) (wireMeta, error) {
	if len(b) == 0 {
		return wireMeta{}, errors.New("decode node metadata: empty (not a kvnode member?)")
	}
	if b[0] != metaFormat {
		return wireMeta{}, fmt.Errorf("decode node metadata: unknown format %d, want %d", b[0], metaFormat)
	}
	d := wireDecoder{buf: b[1:]}
	var m wireMeta
	m.RESTURL = d.string()
	m.InternalAddr = d.string()
	m.Version = d.string()
	m.BootstrapExpect = d.int()
	if n := d.count(1); n > 0 {
		m.Groups = make([]string, 0, n)
		for range n {
			m.Groups = append(m.Groups, d.string())
		}
	}
	m.boot = d.uint64()
	m.leaving = d.uvarint()&flagLeaving != 0
	if len(d.buf) > 0 {
		m.Formats = d.int()
	}
	if d.err != nil {
		return wireMeta{}, fmt.Errorf("decode node metadata: %w", d.err)
	}
	return m, nil
}
