package raftlog

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"

	"github.com/kvnode/kvnode/internal/chunked"
	"github.com/kvnode/kvnode/internal/durable"
)

// The write-ahead log on disk: a directory of segment files, named by
// their sequence number (%016x.wal), each an 8-byte header then records:
//
//	crc32c  uint32 LE   over length and body
//	length  uint32 LE   of body, at least 1
//	body:   kind byte, then
//	        append: uvarint group, uvarint count, count × (uvarint length, entry)
//	        delete: uvarint group, uvarint min, uvarint max
//	        drop:   uvarint group
//	        applied: uvarint group, uvarint from, uvarint through (applied.go)
//
// A commit is one write of its records at the end of the last segment and
// one fdatasync: that is what makes the log cheaper than a B-tree file,
// whose commit writes pages and a meta page with two fsyncs.

const (
	segmentHeader = "KVWAL001"
	recordHeader  = 8

	kindAppend  byte = 1
	kindDelete  byte = 2
	kindDrop    byte = 3
	kindApplied byte = 4
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// ErrDamaged is a log whose records cannot be trusted: one fails its
// checksum (or does not parse) before the last segment's tail, where only
// a write cut short by a crash can be.
var ErrDamaged = errors.New("damaged raft log")

// segment is one file of the log.
type segment struct {
	seq  uint64
	path string
	f    *os.File
	size int64 // bytes written and durable (the end where records go next)
	// live counts the entries of groups' logs held here; a segment whose
	// count is 0, and every older one, may be deleted.
	live int
	// liveBytes is the size of those entries, to decide whether moving
	// them forward (relocate) is worth it.
	liveBytes int64
}

func segmentName(seq uint64) string { return fmt.Sprintf("%016x.wal", seq) }

func parseSegmentName(name string) (uint64, bool) {
	hex, ok := strings.CutSuffix(name, ".wal")
	if !ok || len(hex) != 16 {
		return 0, false
	}
	seq, err := strconv.ParseUint(hex, 16, 64)
	return seq, err == nil
}

// appendRecord appends one record with body to dst.
func appendRecord(dst []byte, body []byte) []byte {
	start := len(dst)
	dst = append(dst, make([]byte, recordHeader)...)
	dst = append(dst, body...)
	sealRecord(dst[start:])
	return dst
}

// sealRecord fills in the header of rec, a record whose body follows its
// recordHeader bytes: the body's length, and the CRC-32C of the length and
// the body (computed a step at a time: package chunked).
func sealRecord(rec []byte) {
	binary.LittleEndian.PutUint32(rec[4:], uint32(len(rec)-recordHeader))
	crc := crc32.Update(0, castagnoli, rec[4:recordHeader])
	crc = chunked.Update(crc, castagnoli, rec[recordHeader:])
	binary.LittleEndian.PutUint32(rec[:4], crc)
}

// segments is the set of segment files, oldest first.
type segments struct {
	dir   string
	max   int64 // a segment is closed once it holds this much
	sync  bool
	mu    sync.RWMutex // readers hold it shared while they read a file
	files []*segment
}

// openSegments lists dir's segments (creating dir), oldest first.
func openSegments(dir string, max int64, sync bool) (*segments, error) {
	if err := durable.MkdirAll(dir, 0o750); err != nil {
		return nil, err
	}
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	ss := &segments{dir: dir, max: max, sync: sync}
	for _, e := range ents {
		seq, ok := parseSegmentName(e.Name())
		if !ok || e.IsDir() {
			continue
		}
		ss.files = append(ss.files, &segment{seq: seq, path: filepath.Join(dir, e.Name())})
	}
	slices.SortFunc(ss.files, func(a, b *segment) int { return compareUint(a.seq, b.seq) })
	for _, s := range ss.files {
		if s.f, err = os.OpenFile(s.path, os.O_RDWR, 0); err != nil {
			ss.close()
			return nil, fmt.Errorf("open raft log segment: %w", err)
		}
	}
	return ss, nil
}

func compareUint(a, b uint64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

func (ss *segments) close() {
	for _, s := range ss.files {
		if s.f != nil {
			_ = s.f.Close()
		}
	}
}

// replayWindow is how much of a segment replay reads at a time. Replay
// used to read each segment whole (io.ReadAll): 64 MiB per segment of
// fresh memory, grown by doubling, that the member then discarded. With a
// million entries in the log that was 230 MB per member to fault in and
// clear at every start, on the restart's critical path (a CPU profile of
// a restarting member at afae736: io.ReadAll's memclr 1.27 s of 5.0 s). A
// window reused across records and segments costs one read per window;
// a record larger than the window grows it to that record's size.
const replayWindow = 4 << 20

// replay reads every record, oldest first, and hands each body to apply
// with where it lies; body is valid only during the call. A record that
// fails its checksum in the last segment's tail is a write a crash cut
// short: the segment is cut there. Anywhere else it is ErrDamaged.
func (ss *segments) replay(apply func(seg *segment, off int64, body []byte) error) error {
	buf := make([]byte, replayWindow)
	for i, s := range ss.files {
		last := i == len(ss.files)-1
		info, err := s.f.Stat()
		if err != nil {
			return fmt.Errorf("read raft log segment %s: %w", s.path, err)
		}
		end := info.Size()
		r := windowReader{f: s.f, buf: buf, end: end}
		head, err := r.at(0, min(int64(len(segmentHeader)), end))
		if err != nil {
			return fmt.Errorf("read raft log segment %s: %w", s.path, err)
		}
		if len(head) < len(segmentHeader) || string(head) != segmentHeader {
			if last && end < 64 {
				// Created, its header cut short by a crash: nothing in it.
				if err := ss.truncate(s, 0); err != nil {
					return err
				}
				continue
			}
			return fmt.Errorf("%w: segment %s does not start with the log's header", ErrDamaged, s.path)
		}
		off := int64(len(segmentHeader))
		for off < end {
			body, ok, err := r.record(off)
			if err != nil {
				return fmt.Errorf("read raft log segment %s: %w", s.path, err)
			}
			if !ok {
				if !last {
					return fmt.Errorf("%w: segment %s: a record at offset %d fails its checksum (the segment is not the last, where a crash could have cut a write short)", ErrDamaged, s.path, off)
				}
				if err := ss.truncate(s, off); err != nil {
					return err
				}
				break
			}
			if err := apply(s, off+recordHeader, body); err != nil {
				return fmt.Errorf("%w: segment %s, record at offset %d: %v", ErrDamaged, s.path, off, err)
			}
			off += recordHeader + int64(len(body))
		}
		buf = r.buf // keep a window grown for a large record
		if s.size == 0 {
			s.size = off
		}
	}
	return nil
}

// windowReader reads a segment file through one buffer: buf holds the
// file's bytes from pos on (n of them).
type windowReader struct {
	f      *os.File
	buf    []byte
	pos    int64
	n      int
	end    int64 // the file's size
	loaded bool
}

// at returns the file's bytes [off, off+size), reading a new window when
// they are not all in the current one (size is at most end-off).
func (r *windowReader) at(off, size int64) ([]byte, error) {
	if r.loaded && off >= r.pos && off+size <= r.pos+int64(r.n) {
		return r.buf[off-r.pos : off-r.pos+size], nil
	}
	if size > int64(len(r.buf)) {
		r.buf = make([]byte, size)
	}
	want := min(int64(len(r.buf)), r.end-off)
	n, err := r.f.ReadAt(r.buf[:want], off)
	if err != nil && !(errors.Is(err, io.EOF) && int64(n) == want) {
		return nil, err
	}
	r.pos, r.n, r.loaded = off, n, true
	if int64(n) < size {
		return r.buf[:n], nil
	}
	return r.buf[:size], nil
}

// record returns the body of the record at off, false when there is no
// whole record with a good checksum there.
func (r *windowReader) record(off int64) ([]byte, bool, error) {
	left := r.end - off
	if left < recordHeader {
		return nil, false, nil
	}
	h, err := r.at(off, recordHeader)
	if err != nil {
		return nil, false, err
	}
	n := int64(binary.LittleEndian.Uint32(h[4:8]))
	if n == 0 || n > left-recordHeader {
		return nil, false, nil
	}
	rec, err := r.at(off, recordHeader+n)
	if err != nil {
		return nil, false, err
	}
	body, ok := readRecord(rec)
	return body, ok, nil
}

// readRecord returns the body of the record at the start of data, false
// when there is no whole record with a good checksum there.
func readRecord(data []byte) ([]byte, bool) {
	if len(data) < recordHeader {
		return nil, false
	}
	n := binary.LittleEndian.Uint32(data[4:8])
	if n == 0 || uint64(n) > uint64(len(data)-recordHeader) {
		return nil, false
	}
	crc := crc32.Update(0, castagnoli, data[4:8])
	crc = crc32.Update(crc, castagnoli, data[recordHeader:recordHeader+int(n)])
	if crc != binary.LittleEndian.Uint32(data[:4]) {
		return nil, false
	}
	return data[recordHeader : recordHeader+int(n)], true
}

// truncate cuts s at off (an incomplete last write), durably; a segment
// cut to nothing is given its header again.
func (ss *segments) truncate(s *segment, off int64) error {
	if off < int64(len(segmentHeader)) {
		off = 0
	}
	if err := s.f.Truncate(off); err != nil {
		return fmt.Errorf("cut the raft log segment %s at %d: %w", s.path, off, err)
	}
	if off == 0 {
		if _, err := s.f.WriteAt([]byte(segmentHeader), 0); err != nil {
			return err
		}
		off = int64(len(segmentHeader))
	}
	s.size = off
	return ss.fsync(s.f)
}

func (ss *segments) fsync(f *os.File) error {
	if !ss.sync {
		return nil
	}
	if err := syscall.Fdatasync(int(f.Fd())); err != nil {
		return fmt.Errorf("fdatasync %s: %w", f.Name(), err)
	}
	return nil
}

// head returns the segment records go to, starting a new one when there
// is none or when the last one is full. A new segment is durable (its
// header and its directory entry) before anything is written into it.
func (ss *segments) head() (*segment, error) {
	if n := len(ss.files); n > 0 && ss.files[n-1].size < ss.max {
		return ss.files[n-1], nil
	}
	var seq uint64 = 1
	if n := len(ss.files); n > 0 {
		seq = ss.files[n-1].seq + 1
	}
	path := filepath.Join(ss.dir, segmentName(seq))
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o640)
	if err != nil {
		return nil, fmt.Errorf("start raft log segment: %w", err)
	}
	if _, err := f.WriteAt([]byte(segmentHeader), 0); err != nil {
		_ = f.Close()
		return nil, fmt.Errorf("start raft log segment %s: %w", path, err)
	}
	if err := ss.fsync(f); err != nil {
		_ = f.Close()
		return nil, err
	}
	if ss.sync {
		if err := durable.SyncDir(ss.dir); err != nil {
			_ = f.Close()
			return nil, err
		}
	}
	s := &segment{seq: seq, path: path, f: f, size: int64(len(segmentHeader))}
	ss.mu.Lock()
	ss.files = append(ss.files, s)
	ss.mu.Unlock()
	return s, nil
}

// write appends buf to s and makes it durable.
func (ss *segments) write(s *segment, buf []byte) error {
	if _, err := s.f.WriteAt(buf, s.size); err != nil {
		return fmt.Errorf("write the raft log: %w", err)
	}
	if err := ss.fsync(s.f); err != nil {
		return err
	}
	s.size += int64(len(buf))
	return nil
}

// read reads n bytes at off of segment seq.
func (ss *segments) read(seq uint64, off int64, n uint32) ([]byte, error) {
	ss.mu.RLock()
	defer ss.mu.RUnlock()
	i, ok := slices.BinarySearchFunc(ss.files, seq, func(s *segment, seq uint64) int { return compareUint(s.seq, seq) })
	if !ok {
		return nil, errSegmentGone
	}
	b := make([]byte, n)
	if _, err := ss.files[i].f.ReadAt(b, off); err != nil {
		return nil, fmt.Errorf("read the raft log: %w", err)
	}
	return b, nil
}

// errSegmentGone: an entry's segment was deleted after its entry moved
// forward (the reader looks its place up again).
var errSegmentGone = errors.New("raft log segment deleted")

// collect deletes the oldest segments that hold no live entry, oldest
// first and each durably before the next, never the one records go to: a
// later segment's deletions then never outlive the older records they
// undo.
func (ss *segments) collect() error {
	for {
		ss.mu.Lock()
		if len(ss.files) < 2 || ss.files[0].live > 0 {
			ss.mu.Unlock()
			return nil
		}
		s := ss.files[0]
		ss.files = ss.files[1:]
		ss.mu.Unlock()
		_ = s.f.Close()
		if err := os.Remove(s.path); err != nil {
			return fmt.Errorf("delete raft log segment %s: %w", s.path, err)
		}
		if ss.sync {
			if err := durable.SyncDir(ss.dir); err != nil {
				return err
			}
		}
	}
}
