package raftgroup

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/kvnode/kvnode/fsm/codec"
	"github.com/kvnode/kvnode/region"
)

// Group commit above Raft. hashicorp/raft coalesces only the entries that
// arrive while the leader writes the previous ones to its log, so a group
// with modest concurrency commits nearly one entry per fsync, on the leader
// and on every follower. With several partition groups per node (each its
// own log file), that multiplies the fsyncs per write. The batcher keeps at
// most maxInflightBatches entries of a group in Raft at once; entry commands
// that arrive meanwhile wait and go into Raft together as one OpBatch entry
// (each still gets its own result). An idle group sends a command at once,
// so a lone writer pays no extra latency; a busy one trades a little
// latency for many fewer fsyncs.
const (
	maxInflightBatches = 1
	maxBatchCommands   = 512
	maxBatchBytes      = 4 << 20
)

type batcher struct {
	g *Group

	mu       sync.Mutex
	queue    []*pendingApply
	inflight int
}

type pendingApply struct {
	ctx  context.Context // the caller's: once it ends, the command is not sent
	data []byte
	done chan applyOutcome // buffered: the batcher never blocks on a waiter
}

type applyOutcome struct {
	res *codec.Result
	err error
}

func newBatcher(g *Group) *batcher { return &batcher{g: g} }

// apply submits an encoded entry command and waits for its result. A
// command still queued when ctx ends is taken out of the queue and never
// sent: the caller is told so (a definite "not applied"); only one already
// handed to Raft has an unknown outcome.
func (b *batcher) apply(ctx context.Context, data []byte) (*codec.Result, error) {
	p := &pendingApply{ctx: ctx, data: data, done: make(chan applyOutcome, 1)}
	b.mu.Lock()
	b.queue = append(b.queue, p)
	var batch []*pendingApply
	start := b.inflight < maxInflightBatches
	if start {
		b.inflight++
		batch = b.takeLocked()
	}
	b.mu.Unlock()
	if start {
		go b.run(batch)
	}
	select {
	case o := <-p.done:
		return o.res, o.err
	case <-ctx.Done():
	}
	b.mu.Lock()
	queued := b.unqueueLocked(p)
	b.mu.Unlock()
	if queued {
		return nil, ContextError(ctx, "wait for the group's previous entry to commit (this write was not sent)", nil)
	}
	select {
	case o := <-p.done: // finished meanwhile (or dropped by takeLocked)
		return o.res, o.err
	default:
		return nil, fmt.Errorf("%w: %v while the entry was being committed", region.ErrIndeterminate, ctx.Err())
	}
}

// unqueueLocked removes p from the queue and reports whether it was there.
func (b *batcher) unqueueLocked(p *pendingApply) bool {
	for i, q := range b.queue {
		if q == p {
			b.queue = append(b.queue[:i], b.queue[i+1:]...)
			return true
		}
	}
	return false
}

// takeLocked removes the next batch from the queue. Commands whose caller
// has given up are dropped, unsent, with a definite answer.
func (b *batcher) takeLocked() []*pendingApply {
	live := b.queue[:0]
	for _, p := range b.queue {
		if err := p.ctx.Err(); err != nil {
			p.done <- applyOutcome{err: ContextError(p.ctx, "wait for the group's previous entry to commit (this write was not sent)", nil)}
			continue
		}
		live = append(live, p)
	}
	clear(b.queue[len(live):])
	b.queue = live
	n, size := 0, 0
	for n < len(b.queue) && n < maxBatchCommands {
		size += len(b.queue[n].data)
		if n > 0 && size > maxBatchBytes {
			break
		}
		n++
	}
	batch := b.queue[:n:n]
	b.queue = append([]*pendingApply(nil), b.queue[n:]...)
	return batch
}

// run commits batch, then keeps committing whatever queued meanwhile, until
// the queue is empty.
func (b *batcher) run(batch []*pendingApply) {
	for {
		if len(batch) > 0 {
			b.commit(batch)
		}
		b.mu.Lock()
		if len(b.queue) == 0 {
			b.inflight--
			b.mu.Unlock()
			return
		}
		batch = b.takeLocked()
		b.mu.Unlock()
	}
}

// enqueueTimeout bounds how long raft.Apply may wait to take the batch: the
// latest deadline of its callers, at most InternalTimeout.
func enqueueTimeout(batch []*pendingApply) time.Duration {
	var latest time.Time
	for _, p := range batch {
		dl, ok := p.ctx.Deadline()
		if !ok {
			return InternalTimeout
		}
		if dl.After(latest) {
			latest = dl
		}
	}
	return min(max(time.Until(latest), time.Millisecond), InternalTimeout)
}

// commit sends one Raft entry for batch and hands every waiter its result.
func (b *batcher) commit(batch []*pendingApply) {
	data := batch[0].data
	if len(batch) > 1 {
		cmd := codec.Command{Op: codec.OpBatch, Batch: make([][]byte, len(batch))}
		for i, p := range batch {
			cmd.Batch[i] = p.data
		}
		data = cmd.Encode(nil)
	}
	f := b.g.raft.Apply(data, enqueueTimeout(batch))
	var out []applyOutcome
	if err := f.Error(); err != nil {
		err = FromRaft(err)
		for range batch {
			out = append(out, applyOutcome{err: err})
		}
	} else {
		res, ok := f.Response().(*codec.Result)
		switch {
		case !ok:
			err := fmt.Errorf("group %d: unexpected state machine response %T", b.g.id, f.Response())
			for range batch {
				out = append(out, applyOutcome{err: err})
			}
		case len(batch) == 1:
			out = append(out, applyOutcome{res: res})
		case len(res.Batch) != len(batch):
			err := fmt.Errorf("group %d: batch of %d commands got %d results", b.g.id, len(batch), len(res.Batch))
			for range batch {
				out = append(out, applyOutcome{err: err})
			}
		default:
			for _, r := range res.Batch {
				out = append(out, applyOutcome{res: r})
			}
		}
	}
	for i, p := range batch {
		p.done <- out[i]
	}
}
