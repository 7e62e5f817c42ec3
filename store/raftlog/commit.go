package raftlog

import (
	"errors"
	"sync"
	"sync/atomic"

	"go.etcd.io/bbolt"
)

// committer puts the writes of every group into bbolt together. A write
// that arrives while no commit is under way is committed at once (a lone
// writer pays nothing); writes that arrive while one is under way wait and
// go into the next commit together, whatever group they belong to. A
// commit is one bbolt transaction, so each batch costs one pair of fsyncs
// on this member instead of one pair per group.
type committer struct {
	db *bbolt.DB

	mu      sync.Mutex
	pending []*write
	busy    bool
	closed  bool

	// commits counts the transactions committed (for tests and metrics).
	commits atomic.Uint64
}

// write is one group's change: apply runs inside the transaction and
// returns what to do once it is committed (nil for nothing).
type write struct {
	apply func(tx *bbolt.Tx) (after func(), err error)
	done  chan error
}

var errClosed = errors.New("the raft log is closed")

// submit commits apply's change and returns once it is durable.
func (c *committer) submit(apply func(tx *bbolt.Tx) (after func(), err error)) error {
	w := &write{apply: apply, done: make(chan error, 1)}
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return errClosed
	}
	c.pending = append(c.pending, w)
	start := !c.busy
	c.busy = true
	c.mu.Unlock()
	if start {
		go c.run()
	}
	return <-w.done
}

// run commits batches until nothing is pending.
func (c *committer) run() {
	for {
		c.mu.Lock()
		batch := c.pending
		c.pending = nil
		if len(batch) == 0 {
			c.busy = false
			c.mu.Unlock()
			return
		}
		c.mu.Unlock()
		c.commit(batch)
	}
}

// commit applies batch in one transaction and answers every write, in
// order, once it is durable. A write whose change fails must not take the
// others' with it, and a transaction keeps whatever part of a failed change
// happened: so when one fails, the transaction is rolled back and each
// write is committed on its own (a path that a healthy disk never takes:
// keys are 8 bytes and entries far below bbolt's value limit).
func (c *committer) commit(batch []*write) {
	afters := make([]func(), len(batch))
	c.commits.Add(1)
	err := c.db.Update(func(tx *bbolt.Tx) error {
		for i, w := range batch {
			var err error
			if afters[i], err = w.apply(tx); err != nil {
				return errOneFailed
			}
		}
		return nil
	})
	if errors.Is(err, errOneFailed) && len(batch) > 1 {
		for _, w := range batch {
			c.commit([]*write{w})
		}
		return
	}
	if errors.Is(err, errOneFailed) {
		// Alone: its own error, from a transaction of its own.
		var after func()
		err = c.db.Update(func(tx *bbolt.Tx) error {
			var err error
			after, err = batch[0].apply(tx)
			return err
		})
		afters[0] = after
	}
	for i, w := range batch {
		if err == nil && afters[i] != nil {
			afters[i]()
		}
		w.done <- err
	}
}

// errOneFailed rolls back a batch in which a write's change failed.
var errOneFailed = errors.New("a write of the batch failed")

// close makes later writes fail; writes under way finish.
func (c *committer) close() {
	c.mu.Lock()
	c.closed = true
	c.mu.Unlock()
}
