// Package snapio is the framing of a state machine's snapshot stream:
// unsigned varints, length-prefixed strings and byte slices, a running
// CRC-32C (Castagnoli) of every byte, and a 4-byte big-endian trailer
// holding it. Package fsm decides what the records are (fsm's DESIGN.md
// fixes the format); this package only writes and reads the primitives,
// strictly: a truncated stream, a corrupt length or a wrong checksum is an
// error, and memory grows with the bytes actually read, never with a
// length the stream claims.
//
// Large values are written, read and checksummed a step at a time
// (internal/chunked), so a snapshot of 100 MiB values does not stall the
// member. snapio imports nothing of kvnode but internal/chunked.
package snapio

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"hash"
	"hash/crc32"
	"io"
	"unsafe"

	"github.com/kvnode/kvnode/internal/chunked"
)

// Castagnoli is the CRC-32C table (hash/crc32 builds it once and caches it).
func Castagnoli() *crc32.Table { return crc32.MakeTable(crc32.Castagnoli) }

// Writer writes a stream's primitives. It keeps the first write error and
// turns later writes into no-ops; Finish reports it.
type Writer struct {
	dst     io.Writer
	sum     hash.Hash32
	w       *bufio.Writer
	scratch [binary.MaxVarintLen64]byte
}

// NewWriter writes a stream to w.
func NewWriter(w io.Writer) *Writer {
	sum := crc32.New(Castagnoli())
	return &Writer{dst: w, sum: sum, w: bufio.NewWriterSize(io.MultiWriter(w, sum), 64<<10)}
}

// Raw writes s as it is (a magic string).
func (sw *Writer) Raw(s string) { sw.w.WriteString(s) }

// Byte writes one byte (a version, a record tag).
func (sw *Writer) Byte(b byte) { sw.w.WriteByte(b) }

// Uvarint writes v as an unsigned varint.
func (sw *Writer) Uvarint(v uint64) {
	sw.w.Write(binary.AppendUvarint(sw.scratch[:0], v))
}

// String writes s with its length first.
func (sw *Writer) String(s string) {
	sw.Uvarint(uint64(len(s)))
	sw.w.WriteString(s)
}

// Bytes writes b with its length first, a step at a time: each write is
// checksummed (crc32) in one unpreemptible call, which for a 100 MiB
// value stalled the member (package chunked).
func (sw *Writer) Bytes(b []byte) {
	sw.Uvarint(uint64(len(b)))
	for off := 0; off < len(b); off += chunked.Step {
		sw.w.Write(b[off:min(off+chunked.Step, len(b))])
	}
}

// Finish flushes the stream and writes the checksum of every byte before
// it; it returns the first error of the whole stream.
func (sw *Writer) Finish() error {
	if err := sw.w.Flush(); err != nil {
		return err
	}
	var trailer [4]byte
	binary.BigEndian.PutUint32(trailer[:], sw.sum.Sum32())
	_, err := sw.dst.Write(trailer[:])
	return err
}

// Reader reads a stream's primitives and keeps a running CRC-32C of
// everything it has read.
type Reader struct {
	r     *bufio.Reader
	table *crc32.Table
	sum   uint32
	one   [1]byte
}

// NewReader reads a stream from r.
func NewReader(r io.Reader) *Reader {
	return &Reader{r: bufio.NewReaderSize(r, 64<<10), table: Castagnoli()}
}

// ReadByte reads one byte; it makes a Reader an io.ByteReader.
func (sr *Reader) ReadByte() (byte, error) {
	b, err := sr.r.ReadByte()
	if err != nil {
		return 0, Truncated(err)
	}
	sr.one[0] = b
	sr.sum = crc32.Update(sr.sum, sr.table, sr.one[:])
	return b, nil
}

// Read reads exactly n bytes. Memory grows with the bytes actually read,
// so a corrupt length cannot make it allocate more than the stream holds.
func (sr *Reader) Read(n uint64) ([]byte, error) {
	var b []byte
	if n <= chunked.Step {
		b = make([]byte, n)
		if _, err := io.ReadFull(sr.r, b); err != nil {
			return nil, Truncated(err)
		}
	} else {
		if n > 1<<62 {
			return nil, fmt.Errorf("length %d is impossible", n)
		}
		// Read as it arrives and joined once, a step at a time: a restore
		// must not stall the member's other groups for a large value.
		var err error
		if b, err = chunked.ReadAll(io.LimitReader(sr.r, int64(n)), chunked.Step, -1); err != nil {
			return nil, Truncated(err)
		}
		if uint64(len(b)) != n {
			return nil, Truncated(io.ErrUnexpectedEOF)
		}
	}
	sr.sum = chunked.Update(sr.sum, sr.table, b)
	return b, nil
}

// Uvarint reads an unsigned varint; what names it in an error.
func (sr *Reader) Uvarint(what string) (uint64, error) {
	v, err := sr.uvarint()
	if err != nil {
		return 0, fmt.Errorf("%s: %w", what, err)
	}
	return v, nil
}

// uvarint reads an unsigned varint from the buffered bytes with one
// checksum update (a snapshot holds a few per entry: byte at a time, the
// updates were a tenth of a restore); near the end of the stream, or for
// a varint that does not decode, it reads byte by byte, whose errors are
// binary.ReadUvarint's.
func (sr *Reader) uvarint() (uint64, error) {
	b, _ := sr.r.Peek(binary.MaxVarintLen64)
	v, n := binary.Uvarint(b)
	if n <= 0 {
		return binary.ReadUvarint(sr)
	}
	sr.sum = crc32.Update(sr.sum, sr.table, b[:n])
	_, _ = sr.r.Discard(n) // Peek returned them: they are buffered
	return v, nil
}

// Bytes reads a length-prefixed byte slice.
func (sr *Reader) Bytes(what string) ([]byte, error) {
	n, err := sr.uvarint()
	if err != nil {
		return nil, fmt.Errorf("%s length: %w", what, err)
	}
	b, err := sr.Read(n)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	return b, nil
}

// String reads a length-prefixed string. The bytes Bytes returns were
// allocated for this read and are referenced nowhere else, so they become
// the string without a copy.
func (sr *Reader) String(what string) (string, error) {
	b, err := sr.Bytes(what)
	if err != nil || len(b) == 0 {
		return "", err
	}
	return unsafe.String(&b[0], len(b)), nil
}

// Trailer compares the stored checksum with the running one and requires
// the stream to end right after it.
func (sr *Reader) Trailer() error {
	want := sr.sum
	var trailer [4]byte
	if _, err := io.ReadFull(sr.r, trailer[:]); err != nil {
		return fmt.Errorf("checksum: %w", Truncated(err))
	}
	if got := binary.BigEndian.Uint32(trailer[:]); got != want {
		return fmt.Errorf("checksum mismatch: stored %08x, computed %08x", got, want)
	}
	if _, err := sr.r.ReadByte(); err != io.EOF {
		if err == nil {
			return errors.New("trailing bytes after the checksum")
		}
		return fmt.Errorf("after the checksum: %w", err)
	}
	return nil
}

// Truncated turns an end of stream in the middle of a snapshot into
// io.ErrUnexpectedEOF: a snapshot ends only after its trailer.
func Truncated(err error) error {
	if err == io.EOF {
		return io.ErrUnexpectedEOF
	}
	return err
}
