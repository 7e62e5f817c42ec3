package listing

import (
	"bufio"
	"bytes"
	"container/heap"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"

	"github.com/kvnode/kvnode/fsm"
	"github.com/kvnode/kvnode/region"
)

const (
	frameHead  = 'h'
	frameEntry = 'e'
	frameKey   = 'k'
	frameEnd   = 'z'
	frameError = 'x'

	// localBatch is how many entries a local stream takes from its clone at
	// a time (one O(log n) seek each); the values are shared, not copied.
	localBatch = 128
	// BufferSize sizes the reader of a remote stream and the writer of the
	// scan RPC: the memory a listing needs per group.
	BufferSize = 64 << 10
	// maxScanKey and maxScanValue reject frames no real entry can have, so
	// that a corrupt stream cannot make us allocate gigabytes.
	maxScanKey   = 1 << 20
	maxScanValue = 256 << 20
	// CtxEvery is how many entries pass between checks of the context.
	CtxEvery = 256
)

// Source is one group's part of a listing, in key order.
type Source interface {
	// Peek: the first keys (see region.ListOptions.PeekBytes) and whether
	// they are all of this part's.
	Peek() ([]string, bool)
	// Next returns the next entry; false at the end, with the error that
	// ended it early.
	Next() (region.Entry, bool, error)
	Close()
}

// ---- a local replica's part ----

// localSource streams a frozen clone of a local replica's region.
type localSource struct {
	cur      *fsm.Cursor
	limit    int // < 0: all
	keysOnly bool
	sent     int
	buf      []region.Entry
	pos, n   int
	head     []string
	headAll  bool
}

// Local freezes the region in f (by name, and id for a partitioned
// region; 0 otherwise) and streams the clone; the caller has passed the
// read barrier it needs. A local source does not fail once open.
func Local(f *fsm.FSM, name string, id uint64, opt region.ListOptions) (Source, error) {
	z, err := f.Freeze(name, id)
	if err != nil {
		return nil, err
	}
	src := &localSource{cur: z.Cursor(), limit: opt.Limit, keysOnly: opt.KeysOnly, buf: make([]region.Entry, localBatch)}
	if opt.PeekBytes > 0 {
		src.head, src.headAll = peekFrozen(z, opt.Limit, opt.PeekBytes)
	}
	return src, nil
}

// peekFrozen reads the first keys of z: up to limit, stopping after the one
// whose length (plus one for each) passes budget.
func peekFrozen(z *fsm.Frozen, limit, budget int) ([]string, bool) {
	cur := z.Cursor()
	buf := make([]region.Entry, localBatch)
	var keys []string
	used := 0
	for {
		n := cur.Read(buf)
		if n == 0 {
			return keys, true
		}
		for _, e := range buf[:n] {
			if limit >= 0 && len(keys) == limit {
				return keys, true
			}
			keys = append(keys, e.Key)
			if used += len(e.Key) + 1; used > budget {
				return keys, false
			}
		}
	}
}

func (l *localSource) Peek() ([]string, bool) { return l.head, l.headAll }

func (l *localSource) Next() (region.Entry, bool, error) {
	if l.limit >= 0 && l.sent >= l.limit {
		return region.Entry{}, false, nil
	}
	if l.pos == l.n {
		l.pos, l.n = 0, l.cur.Read(l.buf)
		if l.n == 0 {
			return region.Entry{}, false, nil
		}
	}
	e := l.buf[l.pos]
	l.buf[l.pos] = region.Entry{} // the batch buffer must not pin values
	l.pos++
	l.sent++
	if l.keysOnly {
		e.Value = nil
	}
	return e, true, nil
}

func (l *localSource) Close() {}

// ---- the merge ----

// listing is the k-way merge of its sources; it implements region.Listing.
type listing struct {
	ctx     context.Context
	srcs    []Source
	limit   int
	heads   sourceHeap
	started bool
	n       int
	last    string
	err     error
	closed  bool
	peeked  []string
	peekAll bool
}

// Merge is the listing of srcs merged in key order, with opt's limit and
// peek; it owns the sources and closes them.
func Merge(ctx context.Context, srcs []Source, opt region.ListOptions) region.Listing {
	l := &listing{ctx: ctx, srcs: srcs, limit: opt.Limit, peekAll: true}
	if opt.PeekBytes > 0 {
		l.peeked, l.peekAll = mergePeeks(srcs, opt.Limit, opt.PeekBytes)
	}
	return l
}

// mergePeeks merges the sources' first keys into the listing's first keys.
// A source whose peek stopped early (its keys passed the budget) can say
// nothing about the keys after its last one, so the merge stops when such
// a source runs out; by then its keys alone have passed the budget.
func mergePeeks(srcs []Source, limit, budget int) ([]string, bool) {
	type part struct {
		keys []string
		all  bool
	}
	parts := make([]part, len(srcs))
	for i, src := range srcs {
		parts[i].keys, parts[i].all = src.Peek()
	}
	var out []string
	used := 0
	for limit < 0 || len(out) < limit {
		best := -1
		for i, p := range parts {
			if len(p.keys) == 0 {
				if !p.all {
					return out, false
				}
				continue
			}
			if best < 0 || p.keys[0] < parts[best].keys[0] {
				best = i
			}
		}
		if best < 0 {
			return out, true
		}
		k := parts[best].keys[0]
		parts[best].keys = parts[best].keys[1:]
		out = append(out, k)
		if used += len(k) + 1; used > budget {
			return out, false
		}
	}
	return out, true
}

func (l *listing) Peek() ([]string, bool) { return l.peeked, l.peekAll }

func (l *listing) Next() (region.Entry, bool) {
	if l.err != nil || l.closed || (l.limit >= 0 && l.n >= l.limit) {
		return region.Entry{}, false
	}
	if !l.started {
		l.started = true
		for _, src := range l.srcs {
			e, ok, err := src.Next()
			if err != nil {
				l.err = err
				return region.Entry{}, false
			}
			if ok {
				l.heads = append(l.heads, &sourceHead{src: src, cur: e})
			}
		}
		heap.Init(&l.heads)
	}
	if len(l.heads) == 0 {
		return region.Entry{}, false
	}
	top := l.heads[0]
	e := top.cur
	next, ok, err := top.src.Next()
	switch {
	case err != nil:
		l.err = err
		return region.Entry{}, false
	case ok:
		top.cur = next
		heap.Fix(&l.heads, 0)
	default:
		heap.Pop(&l.heads)
	}
	// Groups hold disjoint keys and each stream is ordered: anything else
	// is a broken stream, and must not become a wrong answer.
	if l.n > 0 && e.Key <= l.last {
		l.err = fmt.Errorf("listing: key %q after %q: the group streams are out of order", e.Key, l.last)
		return region.Entry{}, false
	}
	l.n++
	l.last = e.Key
	if l.n%CtxEvery == 0 {
		if err := l.ctx.Err(); err != nil {
			l.err = fmt.Errorf("listing stopped after %d entries: %w", l.n, err)
			return region.Entry{}, false
		}
	}
	return e, true
}

func (l *listing) Err() error { return l.err }

func (l *listing) Close() {
	if l.closed {
		return
	}
	l.closed = true
	for _, src := range l.srcs {
		src.Close()
	}
	l.heads = nil
}

type sourceHead struct {
	src Source
	cur region.Entry
}

// sourceHeap orders the sources by their current key (container/heap).
type sourceHeap []*sourceHead

func (h sourceHeap) Len() int           { return len(h) }
func (h sourceHeap) Less(i, j int) bool { return h[i].cur.Key < h[j].cur.Key }
func (h sourceHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *sourceHeap) Push(x any)        { *h = append(*h, x.(*sourceHead)) }
func (h *sourceHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	old[len(old)-1] = nil
	*h = old[:len(old)-1]
	return x
}

// NewWriter is a Writer of a scan stream to w.
func NewWriter(w io.Writer) *Writer { return &Writer{w: bufio.NewWriterSize(w, BufferSize)} }

// Err is the first write error, if any: the reader went away.
func (f *Writer) Err() error { return f.err }

// Writer writes a scan stream through a buffer of BufferSize; the first
// write error sticks.
type Writer struct {
	w   *bufio.Writer
	tmp [binary.MaxVarintLen64]byte
	err error
}

func (f *Writer) byte(b byte) {
	if f.err == nil {
		f.err = f.w.WriteByte(b)
	}
}

func (f *Writer) uvarint(v uint64) {
	if f.err == nil {
		_, f.err = f.w.Write(binary.AppendUvarint(f.tmp[:0], v))
	}
}

func (f *Writer) bytes(b []byte) {
	if f.err == nil {
		_, f.err = f.w.Write(b)
	}
}

func (f *Writer) str(s string) {
	if f.err == nil {
		_, f.err = f.w.WriteString(s)
	}
}

func (f *Writer) Head(keys []string, all bool) {
	f.byte(frameHead)
	for _, k := range keys {
		f.uvarint(uint64(len(k)) + 1)
		f.str(k)
	}
	f.uvarint(0)
	if all {
		f.byte(1)
	} else {
		f.byte(0)
	}
}

func (f *Writer) Entry(e region.Entry, keysOnly bool) {
	if keysOnly {
		f.byte(frameKey)
	} else {
		f.byte(frameEntry)
	}
	f.uvarint(uint64(len(e.Key)))
	f.str(e.Key)
	if !keysOnly {
		f.uvarint(uint64(len(e.Value)))
		f.bytes(e.Value)
	}
}

func (f *Writer) End(n uint64) {
	f.byte(frameEnd)
	f.uvarint(n)
}

func (f *Writer) Fail(msg string) {
	f.byte(frameError)
	f.uvarint(uint64(len(msg)))
	f.str(msg)
}

func (f *Writer) Flush() error {
	if f.err == nil {
		f.err = f.w.Flush()
	}
	return f.err
}

// Remote reads the scan stream body of group gid from the member at addr:
// it reads the head first (at most budget bytes of keys, as asked), and
// fails when it cannot. The source owns body.
func Remote(body io.ReadCloser, addr string, gid uint64, budget int) (Source, error) {
	src := &remoteSource{addr: addr, gid: gid, body: body, r: bufio.NewReaderSize(body, BufferSize)}
	if err := src.readHead(budget); err != nil {
		src.Close()
		return nil, err
	}
	return src, nil
}

// remoteSource reads a member's scan stream, one entry at a time: it holds
// the read buffer and the current entry, never more.
type remoteSource struct {
	addr    string
	gid     uint64
	body    io.ReadCloser
	r       *bufio.Reader
	head    []string
	headAll bool
	got     uint64
	done    bool
	// vals are two value buffers used in turn: the entry the merge holds
	// as this source's current one, and the one it returned last, which
	// stays valid until the next call of Next (region.Listing). Reusing
	// them keeps a long listing from making garbage of every value.
	vals [2][]byte
	turn int
}

// broken wraps a failure to read the stream.
func (s *remoteSource) broken(err error) error {
	if errors.Is(err, io.EOF) {
		err = io.ErrUnexpectedEOF
	}
	return fmt.Errorf("listing group %d from %s: stream broke after %d entries: %w", s.gid, s.addr, s.got, err)
}

// readHead reads the head the member sends first: the keys of its part
// whose lengths pass budget (or all), at most one key beyond it.
func (s *remoteSource) readHead(budget int) error {
	tag, err := s.r.ReadByte()
	if err != nil {
		return s.broken(err)
	}
	if tag != frameHead {
		return s.broken(fmt.Errorf("frame %q where the head belongs", tag))
	}
	used := 0
	for {
		n, err := binary.ReadUvarint(s.r)
		if err != nil {
			return s.broken(err)
		}
		if n == 0 {
			break
		}
		k, err := s.readString(n - 1)
		if err != nil {
			return err
		}
		// A member's head is bounded by the budget we asked for; more is
		// a broken stream, not something to keep reading into memory.
		if used += len(k) + 1; used > budget+maxScanKey+1 {
			return s.broken(errors.New("head longer than asked for"))
		}
		s.head = append(s.head, k)
	}
	all, err := s.r.ReadByte()
	if err != nil {
		return s.broken(err)
	}
	s.headAll = all == 1
	return nil
}

func (s *remoteSource) readString(n uint64) (string, error) {
	if n > maxScanKey {
		return "", s.broken(fmt.Errorf("key of %d bytes", n))
	}
	b := make([]byte, n)
	if _, err := io.ReadFull(s.r, b); err != nil {
		return "", s.broken(err)
	}
	return string(b), nil
}

func (s *remoteSource) Peek() ([]string, bool) { return s.head, s.headAll }

func (s *remoteSource) Next() (region.Entry, bool, error) {
	if s.done {
		return region.Entry{}, false, nil
	}
	tag, err := s.r.ReadByte()
	if err != nil {
		return region.Entry{}, false, s.broken(err)
	}
	switch tag {
	case frameEntry, frameKey:
		n, err := binary.ReadUvarint(s.r)
		if err != nil {
			return region.Entry{}, false, s.broken(err)
		}
		k, err := s.readString(n)
		if err != nil {
			return region.Entry{}, false, err
		}
		e := region.Entry{Key: k}
		if tag == frameEntry {
			n, err := binary.ReadUvarint(s.r)
			if err != nil {
				return region.Entry{}, false, s.broken(err)
			}
			if n > maxScanValue {
				return region.Entry{}, false, s.broken(fmt.Errorf("value of %d bytes", n))
			}
			buf, err := readValue(s.r, n, s.vals[s.turn][:0])
			if err != nil {
				return region.Entry{}, false, s.broken(err)
			}
			s.vals[s.turn], s.turn = buf, 1-s.turn
			e.Value = buf
		}
		s.got++
		return e, true, nil
	case frameEnd:
		n, err := binary.ReadUvarint(s.r)
		if err != nil {
			return region.Entry{}, false, s.broken(err)
		}
		if n != s.got {
			return region.Entry{}, false, s.broken(fmt.Errorf("end frame counts %d entries, %d arrived", n, s.got))
		}
		s.done = true
		// Reading on to the end of the body lets the connection go back
		// to the pool.
		if _, err := s.r.ReadByte(); err != io.EOF {
			return region.Entry{}, false, s.broken(fmt.Errorf("data after the end frame (%v)", err))
		}
		s.Close()
		return region.Entry{}, false, nil
	case frameError:
		n, err := binary.ReadUvarint(s.r)
		if err != nil {
			return region.Entry{}, false, s.broken(err)
		}
		msg, err := s.readString(n)
		if err != nil {
			return region.Entry{}, false, err
		}
		return region.Entry{}, false, s.broken(errors.New(msg))
	}
	return region.Entry{}, false, s.broken(fmt.Errorf("unknown frame %q", tag))
}

// readValue reads a value of n bytes into buf (from its start), growing it
// when needed. Up to 1 MiB it grows at once; past that it grows as the
// bytes arrive, so a corrupt length costs no more memory than the data
// actually sent (as in fsm's Restore).
func readValue(r io.Reader, n uint64, buf []byte) ([]byte, error) {
	if n <= 1<<20 || uint64(cap(buf)) >= n {
		if uint64(cap(buf)) < n {
			buf = make([]byte, n)
		}
		buf = buf[:n]
		_, err := io.ReadFull(r, buf)
		return buf, err
	}
	b := bytes.NewBuffer(buf)
	got, err := io.CopyN(b, r, int64(n))
	if err == io.EOF || (err == nil && uint64(got) < n) {
		err = io.ErrUnexpectedEOF
	}
	return b.Bytes(), err
}

// close drops the connection of a stream not read to its end (the member's
// next write fails and its scan stops) and returns a finished one's to the
// pool.
func (s *remoteSource) Close() {
	if s.body != nil {
		_ = s.body.Close()
		s.body = nil
	}
}
