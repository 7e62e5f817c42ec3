package region

import (
	"context"
	"sync/atomic"
)

// Hops counts, for one request, the times its member had to ask another
// member to serve it: a write forwarded to its group's leader, or a
// linearizable read whose read index came from a leader elsewhere. A client
// that sends each key to its group's leader (single hop) asks for the count
// (package rest answers it in a header), so that it learns that the
// leadership it knew has moved.
type Hops struct{ n atomic.Int32 }

type hopsKey struct{}

// WithHops returns a context that counts its request's hops into the
// returned Hops.
func WithHops(ctx context.Context) (context.Context, *Hops) {
	h := &Hops{}
	return context.WithValue(ctx, hopsKey{}, h), h
}

// NoteHop counts one hop of ctx's request, if anyone counts them.
func NoteHop(ctx context.Context) {
	if h, ok := ctx.Value(hopsKey{}).(*Hops); ok {
		h.n.Add(1)
	}
}

// Count is the number of hops noted so far.
func (h *Hops) Count() int { return int(h.n.Load()) }
