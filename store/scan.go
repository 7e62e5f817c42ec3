package store

import (
	"bufio"
	"bytes"
	"container/heap"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"time"

	"github.com/kvnode/kvnode/fsm"
	"github.com/kvnode/kvnode/region"
	"github.com/kvnode/kvnode/store/transport"
)

// Streamed region listings (GET /kv/v1/{region}?limit= and .../keys). A
// listing never holds the region in memory: each group's part is read from
// a copy-on-write clone of its B-tree (fsm.Frozen) taken once, after the
// group's read barrier, and handed on entry by entry. A partitioned region
// is the k-way merge, in key order, of one stream per partition group: a
// local replica's clone when this node has a usable one, else the scan RPC
// of a member that hosts the group, whose answer is a framed stream read
// as it arrives (bounded by a bufio.Reader per group and TCP flow control,
// which also throttles the member to the pace of the client). See
// DESIGN.md, "Listings".
//
//	POST /v1/groups/{gid}/scan   body: JSON scanReq → a frame stream:
//
//	head:  'h' { uvarint(len(key)+1) key }* uvarint(0) all(1 byte: 0|1)
//	entry: 'e' uvarint(len(key)) key uvarint(len(value)) value   ('k' and no value: keys only)
//	end:   'z' uvarint(entries sent)
//	error: 'x' uvarint(len(msg)) msg   (the listing failed part way)
//
// A stream that stops before its end frame (the member died, the
// connection broke) fails the listing: a partial answer is never taken
// for a whole one.

const (
	frameHead  = 'h'
	frameEntry = 'e'
	frameKey   = 'k'
	frameEnd   = 'z'
	frameError = 'x'

	// localBatch is how many entries a local stream takes from its clone at
	// a time (one O(log n) seek each); the values are shared, not copied.
	localBatch = 128
	// scanBuffer sizes the reader of a remote stream and the writer of the
	// scan RPC: the memory a listing needs per group.
	scanBuffer = 64 << 10
	// maxScanKey and maxScanValue reject frames no real entry can have, so
	// that a corrupt stream cannot make us allocate gigabytes.
	maxScanKey   = 1 << 20
	maxScanValue = 256 << 20
	// ctxEvery is how many entries pass between checks of the context.
	ctxEvery = 256
)

// scanReq asks a member for its replica's part of a region, streamed.
type scanReq struct {
	Region   string `json:"region"`
	ID       uint64 `json:"id"`
	Limit    int    `json:"limit"`
	KeysOnly bool   `json:"keysOnly,omitempty"`
	Peek     int    `json:"peek,omitempty"`
	Stale    bool   `json:"stale,omitempty"`
}

// OpenList opens a streamed listing of a region in key order; see
// region.Listing. It passes the read barrier of every group it reads
// (linearizable) or reads local replicas where they exist (stale), and
// opens every group's stream, before it returns: an error that still fits
// a status comes from here. The caller must Close the listing.
func (s *Store) OpenList(ctx context.Context, c region.Consistency, name string, opt region.ListOptions) (region.Listing, error) {
	return withRegion(ctx, s, name, c, func(ref regionRef) (region.Listing, error) {
		if ref.kind == region.Partition {
			return s.openPartitioned(ctx, c, ref, opt)
		}
		g, err := s.readGroup(ctx, c)
		if err != nil {
			return nil, err
		}
		src, err := openLocal(g.fsm, name, 0, opt)
		if err != nil {
			return nil, err
		}
		return newListing(ctx, []partSource{src}, opt), nil
	})
}

// openPartitioned opens one stream per partition group, in parallel.
func (s *Store) openPartitioned(ctx context.Context, c region.Consistency, ref regionRef, opt region.ListOptions) (region.Listing, error) {
	if opt.Limit == 0 {
		return newListing(ctx, nil, opt), nil
	}
	p, err := s.partitions(ctx)
	if err != nil {
		return nil, err
	}
	gids := allGroups(p)
	srcs := make([]partSource, len(gids))
	errs := parallel(gids, func(i int, gid uint64) error {
		src, err := s.openPart(ctx, gid, c, ref, opt)
		srcs[i] = src
		return err
	})
	if err := firstError(errs); err != nil {
		for _, src := range srcs {
			if src != nil {
				src.close()
			}
		}
		return nil, err
	}
	return newListing(ctx, srcs, opt), nil
}

// openPart opens group gid's stream, retrying as readPart does until it
// has begun: from then on nothing is retried, since part of it may have
// been sent on.
func (s *Store) openPart(ctx context.Context, gid uint64, c region.Consistency, ref regionRef, opt region.ListOptions) (partSource, error) {
	return retryPart(ctx, s, gid, "list", func(attempt int) (partSource, error) {
		return s.openPartOnce(ctx, gid, c, ref, opt, attempt)
	})
}

func (s *Store) openPartOnce(ctx context.Context, gid uint64, c region.Consistency, ref regionRef, opt region.ListOptions, attempt int) (partSource, error) {
	if g := s.localFor(gid); g != nil {
		err := s.localRead(ctx, g, c, catchUpWait)
		if err == nil {
			return openLocal(g.fsm, ref.name, ref.id, opt)
		}
		if !errors.Is(err, errLagging) {
			return nil, err
		}
		// Behind: another member answers.
	}
	addr, err := s.hostFor(gid, attempt)
	if err != nil {
		return nil, err
	}
	return s.client.scan(ctx, addr, gid, scanReq{
		Region: ref.name, ID: ref.id, Limit: opt.Limit, KeysOnly: opt.KeysOnly,
		Peek: opt.PeekBytes, Stale: c == region.Stale,
	})
}

// partSource is one group's part of a listing, in key order.
type partSource interface {
	// peek: the first keys (see region.ListOptions.PeekBytes) and whether
	// they are all of this part's.
	peek() ([]string, bool)
	// next returns the next entry; false at the end, with the error that
	// ended it early.
	next() (region.Entry, bool, error)
	close()
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

// openLocal freezes the region in f; the caller has passed the read
// barrier it needs.
func openLocal(f *fsm.FSM, name string, id uint64, opt region.ListOptions) (*localSource, error) {
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

func (l *localSource) peek() ([]string, bool) { return l.head, l.headAll }

func (l *localSource) next() (region.Entry, bool, error) {
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

func (l *localSource) close() {}

// ---- the merge ----

// listing is the k-way merge of its sources; it implements region.Listing.
type listing struct {
	ctx     context.Context
	srcs    []partSource
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

func newListing(ctx context.Context, srcs []partSource, opt region.ListOptions) *listing {
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
func mergePeeks(srcs []partSource, limit, budget int) ([]string, bool) {
	type part struct {
		keys []string
		all  bool
	}
	parts := make([]part, len(srcs))
	for i, src := range srcs {
		parts[i].keys, parts[i].all = src.peek()
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
			e, ok, err := src.next()
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
	next, ok, err := top.src.next()
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
	if l.n%ctxEvery == 0 {
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
		src.close()
	}
	l.heads = nil
}

type sourceHead struct {
	src partSource
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

// ---- the scan RPC: server ----

// scan serves POST /v1/groups/{gid}/scan: this replica's part of a region,
// after the read barrier the request asks for, from a frozen clone, as a
// frame stream. The stream goes at the reader's pace (the writes block on
// TCP flow control); a reader that goes away ends it at the next write, and
// the request's deadline at the next context check.
func (r *rpcServer) scan(w http.ResponseWriter, req *http.Request) {
	g, ok := r.group(w, req)
	if !ok {
		return
	}
	ctx, cancel := transport.RequestContext(req)
	defer cancel()
	var sr scanReq
	if err := json.NewDecoder(io.LimitReader(req.Body, 1<<20)).Decode(&sr); err != nil {
		rpcCodes.WriteError(w, fmt.Errorf("%w: scan request: %v", region.ErrInvalid, err))
		return
	}
	if !r.readable(ctx, w, g, sr.Stale) {
		return
	}
	src, err := openLocal(g.fsm, sr.Region, sr.ID, region.ListOptions{Limit: sr.Limit, KeysOnly: sr.KeysOnly, PeekBytes: sr.Peek})
	if err != nil {
		rpcCodes.WriteError(w, err)
		return
	}
	rc := http.NewResponseController(w)
	// A reader that stops reading blocks our writes; the deadline ends
	// them too, not just the context checks between entries. (net/http
	// clears a connection's write deadline after each request, so a pooled
	// connection does not keep it.)
	if dl, ok := ctx.Deadline(); ok {
		_ = rc.SetWriteDeadline(dl)
	}
	w.Header().Set("Content-Type", "application/octet-stream")
	w.WriteHeader(http.StatusOK)
	fw := &frameWriter{w: bufio.NewWriterSize(w, scanBuffer)}
	fw.head(src.peek())
	// The caller waits for the head of every group before it reads on.
	if fw.flush() != nil || rc.Flush() != nil {
		return
	}
	var sent uint64
	for {
		e, ok, _ := src.next() // a local source does not fail
		if !ok {
			break
		}
		fw.entry(e, sr.KeysOnly)
		if fw.err != nil {
			return // the reader went away
		}
		if sent++; sent%ctxEvery == 0 && ctx.Err() != nil {
			fw.fail(fmt.Sprintf("scan of group %d on %s stopped after %d entries: %v", g.id, r.s.name, sent, ctx.Err()))
			_ = fw.flush()
			return
		}
	}
	fw.end(sent)
	_ = fw.flush()
}

// frameWriter writes the scan frames; the first write error sticks.
type frameWriter struct {
	w   *bufio.Writer
	tmp [binary.MaxVarintLen64]byte
	err error
}

func (f *frameWriter) byte(b byte) {
	if f.err == nil {
		f.err = f.w.WriteByte(b)
	}
}

func (f *frameWriter) uvarint(v uint64) {
	if f.err == nil {
		_, f.err = f.w.Write(binary.AppendUvarint(f.tmp[:0], v))
	}
}

func (f *frameWriter) bytes(b []byte) {
	if f.err == nil {
		_, f.err = f.w.Write(b)
	}
}

func (f *frameWriter) str(s string) {
	if f.err == nil {
		_, f.err = f.w.WriteString(s)
	}
}

func (f *frameWriter) head(keys []string, all bool) {
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

func (f *frameWriter) entry(e region.Entry, keysOnly bool) {
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

func (f *frameWriter) end(n uint64) {
	f.byte(frameEnd)
	f.uvarint(n)
}

func (f *frameWriter) fail(msg string) {
	f.byte(frameError)
	f.uvarint(uint64(len(msg)))
	f.str(msg)
}

func (f *frameWriter) flush() error {
	if f.err == nil {
		f.err = f.w.Flush()
	}
	return f.err
}

// ---- the scan RPC: client ----

// scan opens a member's stream of group gid's part and reads its head.
// Until the head has arrived nothing of the stream has been used, so
// failures up to then are classified like any read RPC's (and retried by
// openPart).
func (c *rpcClient) scan(ctx context.Context, addr string, gid uint64, sr scanReq) (*remoteSource, error) {
	body, err := json.Marshal(sr)
	if err != nil {
		return nil, err
	}
	path := "/v1/groups/" + strconv.FormatUint(gid, 10) + "/scan"
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, "http://"+addr+path, bytes.NewReader(body))
	if err != nil {
		return nil, fmt.Errorf("rpc POST %s: %w", path, err)
	}
	if dl, ok := ctx.Deadline(); ok {
		req.Header.Set(transport.HeaderTimeout, strconv.FormatInt(max(time.Until(dl).Milliseconds(), 1), 10))
	}
	resp, err := c.HTTP().Do(req)
	if err != nil {
		if transport.IsDialError(err) {
			return nil, fmt.Errorf("rpc to %s: %w: %v", addr, transport.ErrUnreachable, err)
		}
		return nil, readRPCErr(ctx, fmt.Errorf("rpc to %s: %w", addr, err))
	}
	if resp.StatusCode != http.StatusOK {
		defer resp.Body.Close()
		return nil, readRPCErr(ctx, rpcRefusal(resp, addr, path))
	}
	src := &remoteSource{addr: addr, gid: gid, body: resp.Body, r: bufio.NewReaderSize(resp.Body, scanBuffer)}
	if err := src.readHead(sr.Peek); err != nil {
		src.close()
		return nil, readRPCErr(ctx, err)
	}
	return src, nil
}

// rpcRefusal turns a non-200 RPC answer into its error, keeping the
// sentinel it was sent with (as callWith does).
func rpcRefusal(resp *http.Response, addr, path string) error {
	data, err := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	if err != nil {
		return fmt.Errorf("rpc to %s: read response: %w", addr, err)
	}
	return rpcCodes.Refusal(resp, addr, path, string(data))
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

func (s *remoteSource) peek() ([]string, bool) { return s.head, s.headAll }

func (s *remoteSource) next() (region.Entry, bool, error) {
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
		s.close()
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
func (s *remoteSource) close() {
	if s.body != nil {
		_ = s.body.Close()
		s.body = nil
	}
}
