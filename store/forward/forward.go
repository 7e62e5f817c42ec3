package forward

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"sync"

	"github.com/kvnode/kvnode/fsm/codec"
	"github.com/kvnode/kvnode/internal/chunked"
	"github.com/kvnode/kvnode/region"
	"github.com/kvnode/kvnode/store/raftgroup"
	"github.com/kvnode/kvnode/store/transport"
)

// Forwarding in batches. A member that does not lead a group hands each
// write for it to the leader. One RPC per write made the forwarding hop
// the largest cost of a write sent to a follower (an HTTP request and
// answer on both members, for some 200 bytes of command): profiles of 64
// concurrent writers spread over three members showed the leader spending
// a quarter of its CPU serving them. The forwarder sends at most
// maxInflightForwards RPCs to a leader per group at once; commands that
// arrive meanwhile wait and go together in the next one (POST
// /v1/groups/{gid}/applybatch), where the leader applies them
// concurrently, so its own batcher puts them into Raft together. An idle
// forwarder sends a command at once: a lone writer pays no extra latency.
const (
	maxInflightForwards = 1
	maxForwardBatch     = 512
	// soloAbove is the size over which a command is forwarded by an RPC
	// of its own, never queued or batched.
	soloAbove = 1 << 20
)

// Single forwards one command by the store's apply RPC (POST
// /v1/groups/{gid}/apply) and returns its result.
type Single func(ctx context.Context, addr string, gid uint64, cmd []byte) (*codec.Result, error)

// Forwarder batches the commands this member forwards to group leaders.
type Forwarder struct {
	client *transport.Client
	codes  transport.Codes
	single Single
	limit  int64 // the frame limit: a batch never exceeds it

	mu     sync.Mutex
	queues map[fwdDest]*fwdQueue
}

// fwdDest is where forwarded commands go: a group's leader at addr.
type fwdDest struct {
	gid  uint64
	addr string
}

type fwdQueue struct {
	pending  []*fwdCall
	inflight int
}

type fwdCall struct {
	ctx  context.Context // the caller's: once it ends, the command is not sent
	data []byte
	done chan fwdOutcome // buffered: the forwarder never blocks on a caller
}

type fwdOutcome struct {
	res *codec.Result
	err error
}

// New is a forwarder over client (whose frame limit bounds a batch and
// each answer), decoding refusals with codes, sending a lone command with
// single.
func New(client *transport.Client, codes transport.Codes, single Single) *Forwarder {
	return &Forwarder{client: client, codes: codes, single: single, limit: client.Limit(), queues: map[fwdDest]*fwdQueue{}}
}

// Apply forwards an encoded command to gid's leader at addr and returns
// its result. A command still queued when ctx ends is never sent (a
// definite "not applied"); one sent has the outcome the leader reports, or
// an unknown one when the answer is lost.
func (f *Forwarder) Apply(ctx context.Context, addr string, gid uint64, data []byte) (*codec.Result, error) {
	if len(data) > soloAbove {
		// A large command goes on its own: in the queue its RPC (100 MiB
		// take seconds to commit) held every small write of the group
		// behind it, p99 over 1 s.
		return f.single(ctx, addr, gid, data)
	}
	call := &fwdCall{ctx: ctx, data: data, done: make(chan fwdOutcome, 1)}
	dest := fwdDest{gid: gid, addr: addr}
	f.mu.Lock()
	q := f.queues[dest]
	if q == nil {
		q = &fwdQueue{}
		f.queues[dest] = q
	}
	q.pending = append(q.pending, call)
	var batch []*fwdCall
	if q.inflight < maxInflightForwards {
		q.inflight++
		batch = f.takeLocked(q)
	}
	f.mu.Unlock()
	if batch != nil {
		go f.run(dest, q, batch)
	}
	select {
	case o := <-call.done:
		return o.res, o.err
	case <-ctx.Done():
	}
	f.mu.Lock()
	queued := q.remove(call)
	f.mu.Unlock()
	if queued {
		return nil, raftgroup.ContextError(ctx, "wait to forward the write to the leader (it was not sent)", nil)
	}
	select {
	case o := <-call.done: // answered meanwhile, or dropped by takeLocked
		return o.res, o.err
	default:
		return nil, fmt.Errorf("%w: %v while the forwarded write was being committed", region.ErrIndeterminate, ctx.Err())
	}
}

// remove takes call out of the queue and reports whether it was there.
func (q *fwdQueue) remove(call *fwdCall) bool {
	for i, c := range q.pending {
		if c == call {
			q.pending = append(q.pending[:i], q.pending[i+1:]...)
			return true
		}
	}
	return false
}

// takeLocked takes the next batch from q: calls whose caller gave up are
// answered "not sent" and dropped; a batch holds at most maxForwardBatch
// commands and fits the frame limit.
func (f *Forwarder) takeLocked(q *fwdQueue) []*fwdCall {
	live := q.pending[:0]
	for _, c := range q.pending {
		if err := c.ctx.Err(); err != nil {
			c.done <- fwdOutcome{err: raftgroup.ContextError(c.ctx, "wait to forward the write to the leader (it was not sent)", nil)}
			continue
		}
		live = append(live, c)
	}
	clear(q.pending[len(live):])
	q.pending = live
	n, size := 0, int64(0)
	for n < len(q.pending) && n < maxForwardBatch {
		size += int64(len(q.pending[n].data)) + binary.MaxVarintLen64
		if n > 0 && size > f.limit {
			break
		}
		n++
	}
	batch := q.pending[:n:n]
	q.pending = append([]*fwdCall(nil), q.pending[n:]...)
	return batch
}

// run sends batch, then whatever queued meanwhile, until the queue is
// empty.
func (f *Forwarder) run(dest fwdDest, q *fwdQueue, batch []*fwdCall) {
	for {
		if len(batch) > 0 {
			f.send(dest, batch)
		}
		f.mu.Lock()
		if len(q.pending) == 0 {
			q.inflight--
			if q.inflight == 0 {
				delete(f.queues, dest)
			}
			f.mu.Unlock()
			return
		}
		batch = f.takeLocked(q)
		f.mu.Unlock()
	}
}

// send forwards one batch and hands every caller its outcome. The RPC is
// bounded by the latest of the callers' deadlines.
func (f *Forwarder) send(dest fwdDest, batch []*fwdCall) {
	ctx, cancel := batchContext(batch)
	defer cancel()
	var outs []fwdOutcome
	if len(batch) == 1 {
		res, err := f.single(ctx, dest.addr, dest.gid, batch[0].data)
		outs = []fwdOutcome{{res: res, err: err}}
	} else {
		cmds := make([][]byte, len(batch))
		for i, c := range batch {
			cmds[i] = c.data
		}
		outs = f.applyBatch(ctx, dest.addr, dest.gid, cmds)
	}
	for i, c := range batch {
		c.done <- outs[i]
	}
}

// batchContext bounds a batch's RPC by the latest deadline among its
// callers (none when one of them has none).
func batchContext(batch []*fwdCall) (context.Context, context.CancelFunc) {
	var latest context.Context
	for _, c := range batch {
		dl, ok := c.ctx.Deadline()
		if !ok {
			return context.WithTimeout(context.Background(), raftgroup.InternalTimeout)
		}
		if latest == nil {
			latest = c.ctx
		} else if l, _ := latest.Deadline(); dl.After(l) {
			latest = c.ctx
		}
	}
	dl, _ := latest.Deadline()
	return context.WithDeadline(context.Background(), dl)
}

// ---- the batch RPC ----
//
//	POST /v1/groups/{gid}/applybatch
//	body:   for each command: uvarint length, the encoded command
//	answer: for each command, in order: a kind byte, uvarint length, payload;
//	        kind 0: the encoded codec.Result; kind 1: an error, as uvarint
//	        length and code (the error codec's), then the message.

const (
	batchResult byte = 0
	batchError  byte = 1
)

// applyBatch forwards cmds in one RPC and returns each one's outcome. A
// failure of the whole RPC is every command's: a refusal or a failure to
// connect says nothing was applied; a broken answer leaves the outcome of
// every command not yet answered unknown. The answer is read one command's
// answer at a time, each within the frame limit (a batch of conflicts
// carries as many current values as the commands one by one would have).
// A leader of an older build, which does not know the batch RPC, gets the
// commands one by one.
func (f *Forwarder) applyBatch(ctx context.Context, addr string, gid uint64, cmds [][]byte) []fwdOutcome {
	// Sized once and filled a step at a time: a batch may carry a command
	// of 100s of MiB (package chunked).
	size := 0
	for _, cmd := range cmds {
		size += binary.MaxVarintLen64 + len(cmd)
	}
	body := make([]byte, 0, size)
	for _, cmd := range cmds {
		body = binary.AppendUvarint(body, uint64(len(cmd)))
		body = chunked.Append(body, cmd)
	}
	outs := make([]fwdOutcome, len(cmds))
	all := func(err error) []fwdOutcome {
		for i := range outs {
			outs[i] = fwdOutcome{err: err}
		}
		return outs
	}
	path := "/v1/groups/" + strconv.FormatUint(gid, 10) + "/applybatch"
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, "http://"+addr+path, bytes.NewReader(body))
	if err != nil {
		return all(fmt.Errorf("rpc POST %s: %w", path, err))
	}
	transport.SetDeadline(ctx, req)
	resp, err := f.client.HTTP().Do(req)
	if err != nil {
		if transport.IsDialError(err) {
			return all(fmt.Errorf("rpc to %s: %w: %v", addr, transport.ErrUnreachable, err))
		}
		return all(fmt.Errorf("%w: forwarding to %s failed: %v", region.ErrIndeterminate, addr, err))
	}
	defer resp.Body.Close()
	switch resp.StatusCode {
	case http.StatusOK:
	case http.StatusNotFound:
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
		for i, cmd := range cmds {
			outs[i].res, outs[i].err = f.single(ctx, addr, gid, cmd)
		}
		return outs
	default:
		msg, err := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
		if err != nil {
			return all(fmt.Errorf("%w: batch answer from %s: %v", region.ErrIndeterminate, addr, err))
		}
		return all(f.codes.Refusal(resp, addr, path, string(msg)))
	}
	br := bufio.NewReader(resp.Body)
	for i := range outs {
		if err := f.readBatchAnswer(br, addr, &outs[i]); err != nil {
			// The leader answered, but the answer broke off or does not
			// read: what it applied from here on is unknown.
			for j := i; j < len(outs); j++ {
				outs[j] = fwdOutcome{err: fmt.Errorf("%w: batch answer from %s: %v", region.ErrIndeterminate, addr, err)}
			}
			return outs
		}
	}
	return outs
}

// readBatchAnswer reads one command's answer into out.
func (f *Forwarder) readBatchAnswer(br *bufio.Reader, addr string, out *fwdOutcome) error {
	field := func() ([]byte, error) {
		n, err := binary.ReadUvarint(br)
		if err != nil {
			return nil, err
		}
		if n > uint64(f.limit) {
			return nil, fmt.Errorf("an answer of %d bytes, over the frame limit", n)
		}
		// Memory grows with the bytes that arrive, not with the length a
		// broken answer declares.
		b, err := chunked.ReadAll(io.LimitReader(br, int64(n)), int64(min(n, 64<<10)), -1)
		if err == nil && uint64(len(b)) != n {
			err = io.ErrUnexpectedEOF
		}
		return b, err
	}
	kind, err := br.ReadByte()
	if err != nil {
		return err
	}
	switch kind {
	case batchResult:
		b, err := field()
		if err != nil {
			return err
		}
		res, err := codec.DecodeResult(b)
		if err != nil {
			return err
		}
		out.res = res
	case batchError:
		code, err := field()
		if err != nil {
			return err
		}
		msg, err := field()
		if err != nil {
			return err
		}
		out.err = f.codes.Decode(string(code), addr, string(msg))
	default:
		return fmt.Errorf("unknown answer kind %d", kind)
	}
	return nil
}

// ServeBatch answers a batch of forwarded commands (a batch RPC's body) on
// the group's leader: each command is applied by apply concurrently (the
// group's batcher then puts them into Raft together) and gets its own
// answer, encoded with codes; the answer is not one frame (each command's
// answer is within the limit, and all of them must reach the sender, who
// was told nothing yet of writes that are applied). A body that does not
// split into commands is refused whole, before anything is applied.
func ServeBatch(ctx context.Context, body []byte, codes transport.Codes, apply func(ctx context.Context, cmd []byte) (*codec.Result, error)) ([]byte, error) {
	var cmds [][]byte
	for len(body) > 0 {
		n, k := binary.Uvarint(body)
		if k <= 0 || uint64(len(body)-k) < n {
			return nil, errTruncated
		}
		cmds = append(cmds, body[k:k+int(n)])
		body = body[k+int(n):]
		// Each command is applied by a goroutine of its own: a batch of
		// a million empty commands from a broken peer must not start them.
		if len(cmds) > maxForwardBatch {
			return nil, fmt.Errorf("a batch of more than %d commands", maxForwardBatch)
		}
	}
	outs := make([]fwdOutcome, len(cmds))
	var wg sync.WaitGroup
	for i, cmd := range cmds {
		wg.Add(1)
		go func() {
			defer wg.Done()
			outs[i].res, outs[i].err = apply(ctx, cmd)
		}()
	}
	wg.Wait()
	var out []byte
	for _, o := range outs {
		if o.err != nil {
			out = append(out, batchError)
			code := codes.Code(o.err)
			out = binary.AppendUvarint(out, uint64(len(code)))
			out = append(out, code...)
			msg := o.err.Error()
			out = binary.AppendUvarint(out, uint64(len(msg)))
			out = append(out, msg...)
			continue
		}
		res := codec.EncodeResult(nil, o.res)
		out = append(out, batchResult)
		out = binary.AppendUvarint(out, uint64(len(res)))
		out = append(out, res...)
	}
	return out, nil
}

// errTruncated: a batch body whose last command is cut short.
var errTruncated = errors.New("a truncated batch")
