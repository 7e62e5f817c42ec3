package store

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"

	"github.com/kvnode/kvnode/region"
	"github.com/kvnode/kvnode/store/raftgroup"
	"github.com/kvnode/kvnode/store/transport"
)

// A group's state-machine snapshot on demand, for backups (package
// store/backup assembles them): taken from this node's replica, or
// streamed from a member that hosts the group, after the read barrier of
// a linearizable read, so that it holds every write acknowledged before
// the call began. The FSM's Snapshot is a copy-on-write clone: writes go
// on while it is written out. (The RPC: rpc.go's list.)

// headerTerm carries the group's term with a snapshot.
const headerTerm = "Kv-Term"

// Snapshot writes group gid's snapshot (package fsm's stream) to the
// writer open returns, and returns the group's term when it was taken.
// Each attempt calls open again (a retried read starts over: open must
// give a fresh, empty writer).
func (r *Router) Snapshot(ctx context.Context, gid uint64, open func() (io.Writer, error)) (uint64, error) {
	return retryPart(ctx, r, gid, "snapshot", func(attempt int) (uint64, error) {
		if g := r.view.localFor(gid); g != nil {
			err := r.localRead(ctx, g, region.Linearizable, catchUpWait)
			if err == nil {
				w, err := open()
				if err != nil {
					return 0, err
				}
				return writeSnapshot(g, w, nil)
			}
			if !errors.Is(err, errLagging) {
				return 0, err
			}
		}
		addr, err := r.view.hostFor(gid, attempt)
		if err != nil {
			return 0, err
		}
		return r.client.snapshot(ctx, addr, gid, open)
	})
}

// writeSnapshot writes g's state machine's snapshot to w, telling head
// (when set) the group's term before the first byte. The term is read once
// the snapshot is cloned, so it is at least that of every entry in it.
func writeSnapshot(g *raftgroup.Group, w io.Writer, head func(term uint64)) (uint64, error) {
	snap, err := g.FSM().Snapshot()
	if err != nil {
		return 0, err
	}
	defer snap.Release()
	term := g.Raft().CurrentTerm()
	if head != nil {
		head(term)
	}
	if err := snap.Persist(&writerSink{w: w}); err != nil {
		return 0, err
	}
	return term, nil
}

// writerSink is a raft.SnapshotSink (fsm's Persist takes one) over a
// plain writer.
type writerSink struct{ w io.Writer }

func (s *writerSink) Write(p []byte) (int, error) { return s.w.Write(p) }
func (s *writerSink) Close() error                { return nil }
func (s *writerSink) Cancel() error               { return nil }
func (s *writerSink) ID() string                  { return "backup" }

// snapshotRPC serves POST /v1/groups/{gid}/snapshot: this replica's
// snapshot after the linearizable read barrier.
func (r *rpcServer) snapshotRPC(w http.ResponseWriter, req *http.Request) {
	g, ok := r.group(w, req)
	if !ok {
		return
	}
	ctx, cancel := transport.RequestContext(req)
	defer cancel()
	if !r.readable(ctx, w, g, false) {
		return
	}
	w.Header().Set("Content-Type", "application/octet-stream")
	head := func(term uint64) { w.Header().Set(headerTerm, strconv.FormatUint(term, 10)) }
	// An error before the first byte is an answer; after it, a cut stream,
	// which the caller refuses (the snapshot ends with its checksum).
	if _, err := writeSnapshot(g, w, head); err != nil {
		rpcCodes.WriteError(w, err)
	}
}

// snapshot fetches group gid's snapshot from the member at addr into the
// writer open gives.
func (c *rpcClient) snapshot(ctx context.Context, addr string, gid uint64, open func() (io.Writer, error)) (uint64, error) {
	resp, err := c.Open(ctx, addr, groupRPCPath(gid, "snapshot"), nil)
	if err != nil {
		return 0, readRPCErr(ctx, err)
	}
	defer resp.Body.Close()
	term, err := strconv.ParseUint(resp.Header.Get(headerTerm), 10, 64)
	if err != nil {
		return 0, fmt.Errorf("rpc to %s: snapshot of group %d without a valid %s header", addr, gid, headerTerm)
	}
	w, err := open()
	if err != nil {
		return 0, err
	}
	if _, err := io.Copy(w, resp.Body); err != nil {
		return 0, readRPCErr(ctx, fmt.Errorf("rpc to %s: snapshot of group %d: %w", addr, gid, err))
	}
	return term, nil
}
