package store

import (
	"context"
	"fmt"
	"net/http"

	"github.com/kvnode/kvnode/fsm"
	"github.com/kvnode/kvnode/fsm/codec"
	"github.com/kvnode/kvnode/partition"
	"github.com/kvnode/kvnode/region"
	"github.com/kvnode/kvnode/store/catalog"
	"github.com/kvnode/kvnode/store/transport"
)

// What server-side functions (package function, wired by package node)
// need of the store: a way onto the internal port and where partition
// groups are led (their data-aware access to the replicas this node hosts
// is package regions'); and the control group's metadata.

// HandleRPC serves h for pattern (http.ServeMux syntax, e.g. "POST
// /v1/functions") on the internal port, beside the store's own RPCs. The
// request's context carries the caller's remaining deadline (CallMember
// sends it), as the store's own RPCs do.
func (s *Store) HandleRPC(pattern string, h http.Handler) {
	s.rpc.mux.Handle(pattern, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ctx, cancel := transport.RequestContext(r)
		defer cancel()
		h.ServeHTTP(w, r.WithContext(ctx))
	}))
}

// CallMember POSTs body to path on a live member's internal port, with the
// caller's deadline, and returns the answer of a 200.
func (s *Store) CallMember(ctx context.Context, member, path string, body []byte) ([]byte, error) {
	addr, ok := s.router.view.internalAddrs()[member]
	if !ok {
		return nil, fmt.Errorf("member %s: %w: not alive in gossip", member, transport.ErrUnreachable)
	}
	return s.client.Call(ctx, http.MethodPost, addr, path, body)
}

// PartitionLeaders returns the partition table and the member leading
// each partition group (a group nobody reports leading goes to its
// preferred member).
func (s *Store) PartitionLeaders(ctx context.Context) (partition.Table, map[uint64]string, error) {
	t, err := s.router.Placement(ctx)
	if err != nil {
		return t, nil, err
	}
	status := s.groupLeaders(ctx, t)
	out := make(map[uint64]string, t.P())
	for _, pg := range t.Groups {
		if gs, ok := status[pg.ID]; ok && gs.Leader != "" {
			out[pg.ID] = gs.Leader
		} else if len(pg.Members) > 0 {
			out[pg.ID] = pg.Members[0]
		}
	}
	return t, out, nil
}

// ---- the control group's metadata ----

// Meta reads a metadata key of the control group at consistency c. Router
// is a catalog.Meta: package catalog keeps named queries and functions
// there (behind a guard of its own prefixes), package regions index
// definitions, the store the partition table.
func (r *Router) Meta(ctx context.Context, c region.Consistency, key string) ([]byte, uint64, bool, error) {
	f, err := r.Control(ctx, c)
	if err != nil {
		return nil, 0, false, err
	}
	v, version, ok := f.Meta(key)
	return v, version, ok, nil
}

// MetaList reads the metadata keys under prefix at consistency c, in key
// order.
func (r *Router) MetaList(ctx context.Context, c region.Consistency, prefix string) ([]catalog.Entry, error) {
	f, err := r.Control(ctx, c)
	if err != nil {
		return nil, err
	}
	return metaEntries(f.MetaList(prefix)), nil
}

// metaEntries are the state machine's metadata entries as the catalog
// has them.
func metaEntries(list []fsm.MetaEntry) []catalog.Entry {
	out := make([]catalog.Entry, len(list))
	for i, e := range list {
		out[i] = catalog.Entry{Key: e.Key, Value: e.Value, Version: e.Version}
	}
	return out
}

// SetMeta writes a metadata key by compare-and-set (catalog.Meta says
// how).
func (r *Router) SetMeta(ctx context.Context, key string, version uint64, value []byte) error {
	_, err := r.Apply(ctx, controlGroup, &codec.Command{Op: codec.OpSetMeta, MetaKey: key, MetaVersion: version, MetaValue: value})
	return err
}
