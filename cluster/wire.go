package cluster

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
)

// The gossip encodings (node metadata in meta.go, left-member claims in
// leftsync.go) share these pieces: a string is a uvarint length and that
// many bytes, integers are uvarints, boot ids are 8 bytes big-endian.

var errTruncated = errors.New("truncated")

func appendString(b []byte, s string) []byte {
	b = binary.AppendUvarint(b, uint64(len(s)))
	return append(b, s...)
}

// wireDecoder reads fields in order and remembers the first error, so a
// decode function reads like the layout it decodes. Input comes from the
// network: every length is checked against what is left.
type wireDecoder struct {
	buf []byte
	err error
}

func (d *wireDecoder) uvarint() uint64 {
	if d.err != nil {
		return 0
	}
	v, n := binary.Uvarint(d.buf)
	switch {
	case n == 0:
		d.err = errTruncated
		return 0
	case n < 0:
		d.err = errors.New("varint overflows 64 bits")
		return 0
	}
	d.buf = d.buf[n:]
	return v
}

func (d *wireDecoder) int() int {
	v := d.uvarint()
	if v > math.MaxInt {
		d.fail(fmt.Errorf("integer %d out of range", v))
		return 0
	}
	return int(v)
}

func (d *wireDecoder) uint64() uint64 {
	if d.err != nil {
		return 0
	}
	if len(d.buf) < 8 {
		d.err = errTruncated
		return 0
	}
	v := binary.BigEndian.Uint64(d.buf)
	d.buf = d.buf[8:]
	return v
}

func (d *wireDecoder) string() string {
	n := d.uvarint()
	if d.err != nil {
		return ""
	}
	if n > uint64(len(d.buf)) {
		d.err = errTruncated
		return ""
	}
	s := string(d.buf[:n])
	d.buf = d.buf[n:]
	return s
}

// count reads the length of a list whose elements take at least minSize
// bytes each, which bounds what the caller allocates for it.
func (d *wireDecoder) count(minSize int) int {
	n := d.uvarint()
	if d.err == nil && n > uint64(len(d.buf)/minSize) {
		d.err = fmt.Errorf("%d elements: %w", n, errTruncated)
	}
	if d.err != nil {
		return 0
	}
	return int(n)
}

func (d *wireDecoder) fail(err error) {
	if d.err == nil {
		d.err = err
	}
}
