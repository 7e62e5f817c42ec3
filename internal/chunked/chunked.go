// Package chunked copies, checksums and reads large buffers a step at a
// time, so that the goroutine doing it can be preempted between steps.
//
// The Go runtime copies a slice (memmove: copy, append, bytes.Buffer's
// growth, io.ReadAll's) and hash/crc32 checksums one in a single call of
// assembly that cannot be preempted. For a 100 MiB value that is tens of
// milliseconds, and hundreds while fresh pages are faulted in on a loaded
// machine. Whenever the garbage collector needs every goroutine at a safe
// point (at the start and the end of each cycle it does), the whole
// process waits for that call to return: on a member that meant Raft's
// heartbeats were neither sent nor answered for 100-300 ms, and a leader
// lost its 250 ms lease in the middle of a large write (issue 28; the
// trace is in docs/operations.md).
//
// Step by step, each step is a call of a function of ours whose prologue
// is a preemption point: a goroutine asked to stop does so within one step
// (about a millisecond), and the rest of the process runs on.
package chunked

import (
	"hash/crc32"
	"io"
	"strconv"
)

// Step is how much is copied, checksummed or read in one go.
const Step = 1 << 20

// Copy copies src into dst as the built-in copy does, a Step at a time,
// and returns the number of bytes copied.
func Copy(dst, src []byte) int {
	n := min(len(dst), len(src))
	for off := 0; off < n; off += Step {
		end := min(off+Step, n)
		copyStep(dst[off:end], src[off:end])
	}
	return n
}

// copyStep is one step of Copy. It is not inlined, so that its call is a
// preemption point between two steps.
//
//go:noinline
func copyStep(dst, src []byte) { copy(dst, src) }

// Append appends src to dst as the built-in append does, copying a Step at
// a time; when dst must grow, it grows to exactly what it needs (the old
// contents are copied a Step at a time too).
func Append(dst, src []byte) []byte {
	n := len(dst)
	if cap(dst)-n < len(src) {
		grown := make([]byte, n, n+len(src))
		Copy(grown, dst)
		dst = grown
	}
	dst = dst[:n+len(src)]
	Copy(dst[n:], src)
	return dst
}

// Clone is a copy of b (nil for nil), made a Step at a time.
func Clone(b []byte) []byte {
	if b == nil {
		return nil
	}
	out := make([]byte, len(b))
	Copy(out, b)
	return out
}

// Update is crc32.Update, a Step at a time.
func Update(crc uint32, tab *crc32.Table, p []byte) uint32 {
	for off := 0; off < len(p); off += Step {
		crc = updateStep(crc, tab, p[off:min(off+Step, len(p))])
	}
	return crc
}

//go:noinline
func updateStep(crc uint32, tab *crc32.Table, p []byte) uint32 { return crc32.Update(crc, tab, p) }

// Checksum is crc32.Checksum, a Step at a time.
func Checksum(p []byte, tab *crc32.Table) uint32 { return Update(0, tab, p) }

// ReadAll reads r to its end, as io.ReadAll does, but without
// io.ReadAll's copy of everything read so far at each growth of its
// buffer: it reads into parts (the first sized by sizeHint, the expected
// length such as an HTTP Content-Length, < 0 when unknown; then doubling
// up to a Step), so that memory follows what arrives, and joins them once
// at the end, a Step at a time. Past limit bytes (< 0: no limit) it stops
// with a *TooLongError.
func ReadAll(r io.Reader, sizeHint, limit int64) ([]byte, error) {
	next := 512
	if sizeHint >= 0 {
		next = int(min(sizeHint+1, Step)) // +1: the EOF fits in the first read
	}
	var parts [][]byte
	var total int64
	for {
		part := make([]byte, max(next, 1))
		n, err := io.ReadFull(r, part)
		parts = append(parts, part[:n])
		total += int64(n)
		if limit >= 0 && total > limit {
			return join(parts, total), &TooLongError{Limit: limit}
		}
		if err == io.EOF || err == io.ErrUnexpectedEOF {
			return join(parts, total), nil
		}
		if err != nil {
			return join(parts, total), err
		}
		next = min(2*len(part), Step)
	}
}

// TooLongError is ReadAll's refusal of more than its limit.
type TooLongError struct{ Limit int64 }

func (e *TooLongError) Error() string {
	return "longer than " + strconv.FormatInt(e.Limit, 10) + " bytes"
}

// join is parts in one buffer of total bytes.
func join(parts [][]byte, total int64) []byte {
	if len(parts) == 1 {
		return parts[0]
	}
	out := make([]byte, 0, total)
	for _, p := range parts {
		out = Append(out, p)
	}
	return out
}
