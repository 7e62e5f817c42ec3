package regions

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/kvnode/kvnode/fsm"
	"github.com/kvnode/kvnode/fsm/history"
	"github.com/kvnode/kvnode/partition"
	"github.com/kvnode/kvnode/region"
)

// Watches. A region's changes are its groups' events (fsm/events.go):
// group 0's for a replicated region, every partition group's for a
// partitioned one. A watch follows each group from a position, on this
// member's replica when it hosts one and otherwise through the watch RPC
// on a member that does, so it works on any member. Its token is the
// vector of those positions; since every replica holds the same events at
// the same positions, a token resumes on any member, exactly after the
// last event delivered.

// watchRPC names the RPC that reads a group's events on another member.
const watchRPC = "watch"

const (
	// batchEvents bounds one read of a group's events (and so the
	// memory a watch holds: one batch per group).
	batchEvents = 256
	// keptBatch bounds the batch storage a watch of one group keeps for
	// its next read (~120 bytes an event): larger batches, rare, are
	// allocated each time instead of held by every idle watch.
	keptBatch = 64
	// defaultBuffer is how far behind its groups' newest events a watch
	// may fall when WatchOptions.Buffer is 0.
	defaultBuffer = 4096
	// remoteWait is how long the watch RPC waits for new events before
	// it answers with none: the poll interval of an idle remote group.
	remoteWait = 2 * time.Second
	// fencePoll is how often a reader held at a fence checks whether the
	// watch has read the fence's source far enough (only while a bucket
	// has just moved and the source's events are still being taken).
	fencePoll = 5 * time.Millisecond
	// regionCheck is how often an idle watch checks that its region
	// still exists (a partitioned region's destruction produces no event
	// in its partition groups).
	regionCheck = time.Second
)

type watchReq struct {
	Region string      `json:"region"`
	ID     uint64      `json:"id"`
	After  history.Pos `json:"after"`
	Max    int         `json:"max"`
	WaitMs int64       `json:"waitMs"`
	// Position asks only for the replica's current position (in Next).
	Position bool `json:"position,omitempty"`
	// Capture asks for the region's entries here and the position after
	// them (a watch's initial results).
	Capture bool `json:"capture,omitempty"`
}

type watchResp struct {
	Events []history.Event `json:"events,omitempty"`
	Next   history.Pos     `json:"next"`
	Behind int             `json:"behind"`
	// Gone is the history's floor when After is older than it.
	Gone *history.Pos `json:"gone,omitempty"`
	// Entries answer Capture.
	Entries []region.Entry `json:"entries,omitempty"`
}

// Watch opens a watch of region name's changes on this member (see
// region.Watch). Errors: region.ErrRegionNotFound (also for a replicated
// region's token from before the name was destroyed and created again),
// region.ErrInvalid (a token that is not one of this region's),
// *region.GoneError.
func (r *API) Watch(ctx context.Context, name string, opts region.WatchOptions) (region.Watch, error) {
	ref, err := r.parts.Resolve(ctx, name, region.Linearizable)
	if err != nil {
		return nil, err
	}
	gids := []uint64{controlGroup}
	if ref.Kind == region.Partition {
		t, err := r.groups.Placement(ctx)
		if err != nil {
			return nil, err
		}
		gids = watchedGroups(t)
	}
	w := &watch{api: r, ref: ref, gids: gids, pos: make([]history.Pos, len(gids)), behind: make([]int, len(gids)), buffer: opts.Buffer}
	if w.buffer <= 0 {
		w.buffer = defaultBuffer
	}
	switch {
	case opts.From != "":
		id, pos, err := parseToken(opts.From, gids)
		if err != nil {
			return nil, err
		}
		if id != ref.ID {
			// An older incarnation of the name: its events carry its id,
			// and the watch would skip them all silently.
			return nil, fmt.Errorf("region %q was destroyed and created again after resume token %q: watch it afresh: %w", name, opts.From, region.ErrRegionNotFound)
		}
		w.pos = pos
		if err := w.checkHistory(ctx, opts.From); err != nil {
			return nil, err
		}
	case opts.Initial != nil:
		for i, gid := range gids {
			if w.pos[i], err = w.capture(ctx, gid, opts.Initial); err != nil {
				return nil, err
			}
		}
	default:
		for i, gid := range gids {
			if w.pos[i], err = w.position(ctx, gid); err != nil {
				return nil, err
			}
		}
	}
	w.start()
	return w, nil
}

// watchedGroups is the partition groups a watch of a partitioned region
// reads: every one of t (groups are only ever added, at the end).
func watchedGroups(t partition.Table) []uint64 { return AllGroups(t.P()) }

// watch is one open watch. A watch of one group (a replicated region)
// is read by Next itself (nextDirect); a watch of several has a reader
// per group feeding batches to Next, so that one idle group does not hold
// up the others.
type watch struct {
	api    *API
	ref    Ref
	gids   []uint64
	pos    []history.Pos // delivered, by index in gids
	buffer int
	// behind is how far behind each group's previous batch was: a watch
	// past its buffer is slow only if it is not catching up.
	behind []int

	// lease bounds nextDirect's waits, and buf holds its batches, reused
	// (one group).
	lease *waitLease
	buf   []history.Event

	// mu guards gids and pos for the readers' fence checks (passed);
	// only Next's goroutine changes them.
	mu sync.Mutex

	// With readers (several groups):
	batches chan groupBatch
	ctx     context.Context // the readers'
	cancel  context.CancelFunc
	// tick paces Next's check that an idle watch's region still exists;
	// one per watch, not one per Next: Next runs once per batch.
	tick *time.Ticker
}

type groupBatch struct {
	i   int // index in gids
	b   history.Batch
	err error
}

// start runs a reader per group, when there are several. Each holds at
// most one batch not taken by Next yet, so a watch's memory is bounded
// whatever its consumer does.
func (w *watch) start() {
	if w.ref.Kind != region.Partition {
		return // nextDirect: one group, which never grows
	}
	ctx, cancel := context.WithCancel(context.Background())
	w.ctx, w.cancel, w.batches, w.tick = ctx, cancel, make(chan groupBatch), time.NewTicker(regionCheck)
	for i, gid := range w.gids {
		go w.follow(ctx, i, gid, w.pos[i])
	}
}

// follow reads group gid's events from after on, until ctx ends or an
// error (sent to Next) stops it.
func (w *watch) follow(ctx context.Context, i int, gid uint64, after history.Pos) {
	lease := &waitLease{parent: ctx, wait: remoteWait}
	defer lease.stop()
	for {
		req := watchReq{Region: w.ref.Name, ID: w.ref.ID, After: after, Max: batchEvents, WaitMs: remoteWait.Milliseconds()}
		b, err := w.api.visitEvents(ctx, gid, req, lease, nil)
		if ctx.Err() != nil {
			return
		}
		if err == nil && len(b.Events) == 0 && b.Next == after {
			continue // a remote poll that found nothing
		}
		var fence *history.FenceInfo
		if err == nil {
			b, fence = w.cutAtFence(b)
		}
		if err != nil || len(b.Events) > 0 || b.Next != after {
			select {
			case w.batches <- groupBatch{i: i, b: b, err: err}:
			case <-ctx.Done():
				return
			}
		}
		if err != nil {
			return
		}
		after = b.Next
		if fence != nil && !w.awaitFence(ctx, *fence) {
			return
		}
	}
}

// cutAtFence drops from b the fences (history.Fence) the watch has passed
// already, and cuts it before the first one it has not: the events after
// that fence wait until the watch has read the fence's source past the
// bucket's release (awaitFence), so that a key's events stay in order
// across a move; b.Next stays before the fence meanwhile, and so does the
// token, so that a watch resumed from it holds them too.
func (w *watch) cutAtFence(b history.Batch) (history.Batch, *history.FenceInfo) {
	out := b.Events[:0]
	for _, e := range b.Events {
		if e.Type != history.Fence {
			out = append(out, e)
			continue
		}
		f, ok := history.FenceOf(e)
		if !ok || w.passed(f) {
			continue
		}
		b.Events, b.Next = out, history.Pos{Index: e.Pos.Index, N: e.Pos.N - 1}
		return b, &f
	}
	b.Events = out
	return b, nil
}

// passed reports whether the watch has delivered f's source group up to
// the bucket's release. A source it does not read yet (groups it has not
// grown to) has not been passed.
func (w *watch) passed(f history.FenceInfo) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	for j, gid := range w.gids {
		if gid == f.From {
			return !w.pos[j].Less(f.After())
		}
	}
	return false
}

// awaitFence waits until the watch has passed f, or ctx ends (false). The
// source's reader does not wait on this one (its release came before this
// adopt, and a fence only ever waits on an earlier release), so the wait
// ends as soon as the consumer has taken the source's events.
func (w *watch) awaitFence(ctx context.Context, f history.FenceInfo) bool {
	for !w.passed(f) {
		select {
		case <-time.After(fencePoll):
		case <-ctx.Done():
			return false
		}
	}
	return true
}

// waitLease is how long a reader may wait on a local replica: until
// wait after the lease began, then the reader visits the group again (and
// notices a replica that moved away) under a new lease. One deadline
// serves every read until it passes: a context.WithTimeout per read (a
// reader reads once per batch, about once per applied entry per watcher)
// was a tenth of a busy member's CPU.
type waitLease struct {
	parent context.Context
	wait   time.Duration
	ctx    context.Context
	cancel context.CancelFunc
}

// get returns the lease's context, a new one when the last has passed.
func (l *waitLease) get() context.Context {
	if l.ctx == nil || l.ctx.Err() != nil {
		l.stop()
		l.ctx, l.cancel = context.WithTimeout(l.parent, l.wait)
	}
	return l.ctx
}

func (l *waitLease) stop() {
	if l != nil && l.cancel != nil {
		l.cancel()
	}
}

// read returns group gid's events of the region after a position, from a
// replica here or on a member, waiting up to wait for some.
func (w *watch) read(ctx context.Context, gid uint64, after history.Pos, wait time.Duration) (history.Batch, error) {
	req := watchReq{Region: w.ref.Name, ID: w.ref.ID, After: after, Max: batchEvents, WaitMs: wait.Milliseconds()}
	lease := &waitLease{parent: ctx, wait: wait}
	defer lease.stop()
	return w.api.visitEvents(ctx, gid, req, lease, nil)
}

// visitEvents runs req on a replica of group gid, here (waiting as long
// as lease lets it; the events in buf's storage when they fit) or on a
// member (waiting up to req.WaitMs).
func (r *API) visitEvents(ctx context.Context, gid uint64, req watchReq, lease *waitLease, buf []history.Event) (history.Batch, error) {
	var b history.Batch
	err := r.groups.Visit(ctx, gid, region.Stale, "watch", func(f *fsm.FSM) error {
		var err error
		b, err = localEvents(ctx, lease.get(), f, req, buf)
		return err
	}, func(addr string) error {
		body, err := json.Marshal(req)
		if err != nil {
			return err
		}
		data, err := r.groups.Call(ctx, addr, gid, watchRPC, body)
		if err != nil {
			return err
		}
		var resp watchResp
		if err := json.Unmarshal(data, &resp); err != nil {
			return fmt.Errorf("watch answer from %s: %w", addr, err)
		}
		if resp.Gone != nil {
			return &history.GoneError{Asked: req.After, Oldest: *resp.Gone}
		}
		b = history.Batch{Events: resp.Events, Next: resp.Next, Behind: resp.Behind}
		return nil
	})
	return b, err
}

// localEvents reads a local replica's events for req, waiting until wctx
// (derived from ctx) ends when there are none yet.
func localEvents(ctx, wctx context.Context, f *fsm.FSM, req watchReq, buf []history.Event) (history.Batch, error) {
	if req.Position {
		return history.Batch{Next: f.History().Position()}, nil
	}
	b, err := f.History().EventsInto(wctx, buf, req.Region, req.After, req.Max)
	if err != nil && errors.Is(err, context.DeadlineExceeded) && ctx.Err() == nil {
		return b, nil // nothing new within wait
	}
	return b, err
}

// serveWatch answers another member's watch of this member's replica.
func (pt *Parts) serveWatch(ctx context.Context, replica func(region.Consistency) (*fsm.FSM, error), body []byte) ([]byte, error) {
	var req watchReq
	if err := json.Unmarshal(body, &req); err != nil {
		return nil, fmt.Errorf("%w: watch request: %v", region.ErrInvalid, err)
	}
	f, err := replica(region.Stale)
	if err != nil {
		return nil, err
	}
	if req.Capture {
		return captureAnswer(f, req)
	}
	req.Max = min(max(req.Max, 1), batchEvents)
	wctx, cancel := context.WithTimeout(ctx, min(time.Duration(req.WaitMs)*time.Millisecond, remoteWait))
	defer cancel()
	b, err := localEvents(ctx, wctx, f, req, nil)
	var gone *history.GoneError
	var resp watchResp
	switch {
	case errors.As(err, &gone):
		resp.Gone = &gone.Oldest
	case err != nil:
		return nil, err
	default:
		resp = watchResp{Events: b.Events, Next: b.Next, Behind: b.Behind}
	}
	out, err := encodeAnswer(resp)
	if err != nil {
		return nil, fmt.Errorf("encode watch answer: %w", err)
	}
	return out, nil
}

// encodeAnswer is json.Marshal without its HTML escaping, which would
// turn "<" in a stored value into \u003c: values travel byte for byte.
func encodeAnswer(resp any) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(resp); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n")), nil
}

// position is group gid's current position, after everything applied.
func (w *watch) position(ctx context.Context, gid uint64) (history.Pos, error) {
	b, err := w.api.visitEvents(ctx, gid, watchReq{Position: true}, &waitLease{parent: ctx}, nil)
	return b.Next, err
}

// capture sends group gid's part of the region to fn and returns the
// position after the state it saw.
func (w *watch) capture(ctx context.Context, gid uint64, fn func(string, json.RawMessage) error) (history.Pos, error) {
	id := w.ref.ID
	if gid == controlGroup {
		id = 0
	}
	var pos history.Pos
	err := w.api.groups.Visit(ctx, gid, region.Stale, "watch", func(f *fsm.FSM) error {
		z, err := f.Freeze(w.ref.Name, id)
		if err != nil {
			return err
		}
		pos = z.Position()
		return sendFrozen(z, fn)
	}, func(addr string) error {
		body, err := json.Marshal(watchReq{Region: w.ref.Name, ID: id, Capture: true})
		if err != nil {
			return err
		}
		data, err := w.api.groups.Call(ctx, addr, gid, watchRPC, body)
		if err != nil {
			return fmt.Errorf("initial results of partition group %d from %s: %w", gid, addr, err)
		}
		var resp watchResp
		if err := json.Unmarshal(data, &resp); err != nil {
			return fmt.Errorf("initial results from %s: %w", addr, err)
		}
		pos = resp.Next
		for _, e := range resp.Entries {
			if err := fn(e.Key, e.Value); err != nil {
				return err
			}
		}
		return nil
	})
	return pos, err
}

// captureAnswer is the watch RPC's answer to a capture: every entry of the
// region's part here and the position after them, in one frame (a part
// larger than the frame limit is refused whole: watch from a member that
// hosts the group).
func captureAnswer(f *fsm.FSM, req watchReq) ([]byte, error) {
	z, err := f.Freeze(req.Region, req.ID)
	if err != nil {
		return nil, err
	}
	resp := watchResp{Next: z.Position()}
	err = sendFrozen(z, func(k string, v json.RawMessage) error {
		resp.Entries = append(resp.Entries, region.Entry{Key: k, Value: v})
		return nil
	})
	if err != nil {
		return nil, err
	}
	out, err := encodeAnswer(resp)
	if err != nil {
		return nil, fmt.Errorf("encode the initial results: %w", err)
	}
	return out, nil
}

// sendFrozen calls fn with every entry of z, in key order.
func sendFrozen(z *fsm.Frozen, fn func(string, json.RawMessage) error) error {
	cur, buf := z.Cursor(), make([]region.Entry, 256)
	for n := cur.Read(buf); n > 0; n = cur.Read(buf) {
		for _, e := range buf[:n] {
			if err := fn(e.Key, e.Value); err != nil {
				return err
			}
		}
	}
	return nil
}

// checkHistory refuses a token older than some group's history.
func (w *watch) checkHistory(ctx context.Context, token string) error {
	oldest := make([]history.Pos, len(w.gids))
	gone := false
	for i, gid := range w.gids {
		_, err := w.read(ctx, gid, w.pos[i], 0)
		var g *history.GoneError
		switch {
		case errors.As(err, &g):
			oldest[i], gone = g.Oldest, true
		case err != nil:
			return err
		default:
			oldest[i] = w.pos[i]
		}
	}
	if gone {
		return &region.GoneError{Token: token, Oldest: formatToken(w.ref.ID, w.gids, oldest)}
	}
	return nil
}

// Next returns the next events (see region.Watch).
func (w *watch) Next(ctx context.Context) ([]region.Event, error) {
	if w.batches == nil {
		return w.nextDirect(ctx)
	}
	began := time.Now()
	for {
		select {
		case gb := <-w.batches:
			if events, err := w.take(gb); err != nil || len(events) > 0 {
				return events, err
			}
		case <-w.tick.C:
			w.grow(ctx)
			if time.Since(began) < regionCheck {
				continue // a tick from before this call: not idle for long
			}
			if err := w.alive(); err != nil {
				return nil, err
			}
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
}

// nextDirect is Next for a watch of one group: it reads the group itself,
// waiting at most regionCheck at a time (then it checks that the region
// still exists). Without a reader goroutine between the group and the
// stream, a batch costs one goroutine wake-up instead of two; with a
// thousand watchers of a busy region that was much of a member's CPU. A
// batch read when ctx ended is not taken: the next call reads it again.
func (w *watch) nextDirect(ctx context.Context) ([]region.Event, error) {
	if w.lease == nil || w.lease.parent != ctx {
		w.lease.stop()
		w.lease = &waitLease{parent: ctx, wait: regionCheck}
	}
	for {
		after := w.pos[0]
		req := watchReq{Region: w.ref.Name, ID: w.ref.ID, After: after, Max: batchEvents, WaitMs: regionCheck.Milliseconds()}
		b, err := w.api.visitEvents(ctx, w.gids[0], req, w.lease, w.buf)
		if cap(b.Events) > cap(w.buf) && cap(b.Events) <= keptBatch {
			w.buf = b.Events[:0]
		}
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		if err == nil && len(b.Events) == 0 && b.Next == after {
			// Nothing for regionCheck.
			if err := w.alive(); err != nil {
				return nil, err
			}
			continue
		}
		events, err := w.take(groupBatch{b: b, err: err})
		clear(b.Events) // the values are the events' now; buf keeps none alive
		if err != nil || len(events) > 0 {
			return events, err
		}
	}
}

// grow follows the partition groups added since the watch began (checked
// every regionCheck): a new group holds only buckets that moved into it,
// and their events all come after the move, so it is read from the start
// of its history. A replica whose history no longer reaches back that far
// ends the watch (as a slow consumer's: resuming its token is then a 410),
// never skipping events silently.
func (w *watch) grow(ctx context.Context) {
	if w.ref.Kind != region.Partition {
		return
	}
	t, err := w.api.groups.Placement(ctx)
	if err != nil {
		return // again at the next tick
	}
	gids := watchedGroups(t)
	if len(gids) <= len(w.gids) {
		return
	}
	for _, gid := range gids[len(w.gids):] {
		w.mu.Lock()
		w.gids = append(w.gids, gid)
		w.pos = append(w.pos, history.Pos{})
		w.mu.Unlock()
		w.behind = append(w.behind, 0)
		go w.follow(w.ctx, len(w.gids)-1, gid, history.Pos{})
	}
}

// take turns a group's batch into the watch's events.
func (w *watch) take(gb groupBatch) ([]region.Event, error) {
	var gone *history.GoneError
	switch {
	case errors.As(gb.err, &gone):
		// The reader fell behind the history: as slow as a consumer can be.
		return nil, fmt.Errorf("%w: its position is no longer in the history kept", region.ErrSlowConsumer)
	case gb.err != nil:
		return nil, gb.err
	}
	// A burst (a put-all, the events missed while a client reconnected)
	// puts a consumer that keeps up past its buffer for a batch or more:
	// it is slow when it was past it at the group's previous batch too,
	// and is no nearer now.
	if b, prev := gb.b.Behind, w.behind[gb.i]; b > w.buffer && prev > w.buffer && b >= prev {
		return nil, fmt.Errorf("%w: %d events behind and not catching up (its buffer holds %d)", region.ErrSlowConsumer, b, w.buffer)
	}
	w.behind[gb.i] = gb.b.Behind
	out := make([]region.Event, 0, len(gb.b.Events))
	w.mu.Lock()
	for _, e := range gb.b.Events {
		w.pos[gb.i] = e.Pos
		if e.RegionID != w.ref.ID || e.Type == history.Fence {
			continue // another incarnation of the name; a fence (cutAtFence)
		}
		out = append(out, region.Event{Type: e.Type, Key: e.Key, Value: e.Value, Old: e.Old, Token: formatToken(w.ref.ID, w.gids, w.pos)})
	}
	w.pos[gb.i] = gb.b.Next
	w.mu.Unlock()
	if len(out) == 0 {
		if err := w.alive(); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// alive checks that the region watched still exists, as the same
// incarnation, in this member's copy of the control group.
func (w *watch) alive() error {
	f, err := w.api.groups.ControlState()
	if err != nil {
		return err
	}
	if ref, ok := Lookup(f, w.ref.Name); !ok || ref.ID != w.ref.ID {
		return fmt.Errorf("region %q was destroyed: %w", w.ref.Name, region.ErrRegionNotFound)
	}
	return nil
}

// Token is the position after every event delivered.
func (w *watch) Token() string { return formatToken(w.ref.ID, w.gids, w.pos) }

// Close stops the watch's readers.
func (w *watch) Close() {
	w.lease.stop()
	if w.cancel != nil {
		w.cancel()
		w.tick.Stop()
	}
}

// formatToken writes the region's id, "@", and the positions as
// "gid:index.n" per group, comma separated, groups ascending: a token
// of a destroyed incarnation of the name is then told apart.
// Every event of every watch gets one, so it is built in a stack buffer
// and allocated once (a replicated region's fits the buffer).
func formatToken(id uint64, gids []uint64, pos []history.Pos) string {
	var buf [64]byte
	b := strconv.AppendUint(buf[:0], id, 10)
	b = append(b, '@')
	for i, gid := range gids {
		if i > 0 {
			b = append(b, ',')
		}
		b = strconv.AppendUint(b, gid, 10)
		b = append(b, ':')
		b = strconv.AppendUint(b, pos[i].Index, 10)
		b = append(b, '.')
		b = strconv.AppendUint(b, uint64(pos[i].N), 10)
	}
	return string(b)
}

// parseToken reads a token of the groups gids: the region's id and the
// positions.
func parseToken(token string, gids []uint64) (uint64, []history.Pos, error) {
	bad := func(why string) error {
		return fmt.Errorf("%w: resume token %q is not one of this region's (%s): use an event's id as it was sent", region.ErrInvalid, token, why)
	}
	idText, positions, ok := strings.Cut(token, "@")
	id, err := strconv.ParseUint(idText, 10, 64)
	if !ok || err != nil {
		return 0, nil, bad("it does not start with the region's id and @")
	}
	parts := strings.Split(positions, ",")
	if len(parts) > len(gids) {
		return 0, nil, bad(fmt.Sprintf("it names %d groups, the region has %d", len(parts), len(gids)))
	}
	// A token from before partition groups were added names fewer: it
	// resumes them from the start of their history (see watch.grow), or
	// is a 410 when their history no longer reaches back that far.
	pos := make([]history.Pos, len(gids))
	for i, part := range parts {
		g, rest, ok1 := strings.Cut(part, ":")
		idx, n, ok2 := strings.Cut(rest, ".")
		gid, err1 := strconv.ParseUint(g, 10, 64)
		index, err2 := strconv.ParseUint(idx, 10, 64)
		num, err3 := strconv.ParseUint(n, 10, 32)
		if !ok1 || !ok2 || err1 != nil || err2 != nil || err3 != nil {
			return 0, nil, bad(fmt.Sprintf("part %q is not group:index.number", part))
		}
		if gid != gids[i] {
			return 0, nil, bad(fmt.Sprintf("part %d is group %d, not %d", i+1, gid, gids[i]))
		}
		pos[i] = history.Pos{Index: index, N: uint32(num)}
	}
	return id, pos, nil
}
