package codec

import (
	"encoding/binary"
	"fmt"

	"github.com/kvnode/kvnode/internal/chunked"
)

// The primitives the command and result encodings are built from: unsigned
// varints (encoding/binary's), and strings and byte slices written as a
// uvarint length followed by the bytes.

func appendString(dst []byte, s string) []byte {
	dst = binary.AppendUvarint(dst, uint64(len(s)))
	return append(dst, s...)
}

// appendBytes copies b a step at a time: a value may be 100s of MiB, and
// one built-in copy of it cannot be preempted (package chunked).
func appendBytes(dst, b []byte) []byte {
	dst = binary.AppendUvarint(dst, uint64(len(b)))
	return chunked.Append(dst, b)
}

// decoder reads an in-memory encoding strictly. The first problem sticks in
// err and turns every later read into a no-op returning zero values, so
// callers read a whole structure and check once.
//
// Strict means: truncated input, a length or count larger than what is left
// of the input, a uvarint that overflows 64 bits or is not in its shortest
// form, and trailing bytes are all errors. Requiring the shortest varint form
// makes every accepted input the unique encoding of what it decodes to, so a
// decoded value re-encodes to exactly the same bytes.
type decoder struct {
	buf []byte
	off int
	err error
	// alias makes raw return sub-slices of buf instead of copies: for
	// checking an encoding whose decoded form is thrown away (CheckCommand).
	alias bool
	// check makes str return "" instead of a copy: for an encoding whose
	// decoded form is thrown away (CheckCommand, a batch's sub-commands
	// when the batch is decoded), where copying every key cost the
	// replay of a restart a tenth of its time (a profile of 542708a).
	check bool
}

func (d *decoder) fail(format string, args ...any) {
	if d.err == nil {
		d.err = fmt.Errorf("at byte %d: %s", d.off, fmt.Sprintf(format, args...))
	}
}

func (d *decoder) remaining() int { return len(d.buf) - d.off }

// u8 reads one byte.
func (d *decoder) u8(what string) byte {
	if d.err != nil {
		return 0
	}
	if d.remaining() < 1 {
		d.fail("truncated: missing %s", what)
		return 0
	}
	b := d.buf[d.off]
	d.off++
	return b
}

// uvarint reads an unsigned varint in its shortest form. what (and suffix,
// if any) name the field in an error; they are joined only on failure, so
// the success path does not allocate.
func (d *decoder) uvarint(what, suffix string) uint64 {
	if d.err != nil {
		return 0
	}
	v, n := binary.Uvarint(d.buf[d.off:])
	switch {
	case n == 0:
		d.fail("truncated: missing %s%s", what, suffix)
		return 0
	case n < 0:
		d.fail("%s%s overflows 64 bits", what, suffix)
		return 0
	case n > 1 && d.buf[d.off+n-1] == 0:
		// A zero final byte adds nothing: a shorter encoding exists.
		d.fail("%s%s is not a minimal varint", what, suffix)
		return 0
	}
	d.off += n
	return v
}

// length reads a byte length and checks that that many bytes follow.
func (d *decoder) length(what string) int {
	n := d.uvarint(what, " length")
	if d.err != nil {
		return 0
	}
	if n > uint64(d.remaining()) {
		d.fail("truncated: %s needs %d bytes, %d left", what, n, d.remaining())
		return 0
	}
	return int(n)
}

// str reads a length-prefixed string (a copy: it never aliases the input;
// "" when only checking).
func (d *decoder) str(what string) string {
	n := d.length(what)
	if d.err != nil {
		return ""
	}
	if d.check {
		d.off += n
		return ""
	}
	s := string(d.buf[d.off : d.off+n])
	d.off += n
	return s
}

// raw reads length-prefixed bytes into a new slice of exactly that size, so
// the result neither aliases the input nor keeps a larger buffer alive.
func (d *decoder) raw(what string) []byte {
	n := d.length(what)
	if d.err != nil {
		return nil
	}
	if d.alias {
		b := d.buf[d.off : d.off+n : d.off+n]
		d.off += n
		return b
	}
	b := make([]byte, n)
	chunked.Copy(b, d.buf[d.off:])
	d.off += n
	return b
}

// count reads the number of items that follow, each at least minSize bytes
// long. Bounding it by the remaining input keeps a hostile count from
// causing a huge allocation.
func (d *decoder) count(what string, minSize int) int {
	n := d.uvarint(what, " count")
	if d.err != nil {
		return 0
	}
	if n > uint64(d.remaining()/minSize) {
		d.fail("%s count %d exceeds what the remaining %d bytes can hold", what, n, d.remaining())
		return 0
	}
	return int(n)
}

// finish reports the first error, or trailing bytes after a complete value.
func (d *decoder) finish() error {
	if d.err == nil && d.remaining() > 0 {
		d.fail("%d trailing bytes", d.remaining())
	}
	return d.err
}
