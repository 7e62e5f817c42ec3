package store

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"

	"github.com/kvnode/kvnode/fsm/codec"
	"github.com/kvnode/kvnode/region"
	"github.com/kvnode/kvnode/store/catalog"
	"github.com/kvnode/kvnode/store/transport"
)

// What server-side functions (package function, wired by cmd/kvnode) need
// of the store: a way onto the internal port, where partition groups are
// led, data-aware access to the replicas this node hosts, and a small
// metadata API for deployed functions.

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
	addr, ok := s.internalAddrs()[member]
	if !ok {
		return nil, fmt.Errorf("member %s: %w: not alive in gossip", member, transport.ErrUnreachable)
	}
	return s.client.Call(ctx, http.MethodPost, addr, path, body)
}

// PartitionLeaders returns P and the member leading each partition group
// (a group nobody reports leading goes to its preferred member).
func (s *Store) PartitionLeaders(ctx context.Context) (int, map[uint64]string, error) {
	p, err := s.partitions(ctx)
	if err != nil {
		return 0, nil, err
	}
	t, _, ok := s.table()
	if !ok {
		return 0, nil, errNoTable
	}
	status := s.groupLeaders(ctx, t)
	out := make(map[uint64]string, p)
	for _, pg := range t.Groups {
		if gs, ok := status[pg.ID]; ok && gs.Leader != "" {
			out[pg.ID] = gs.Leader
		} else if len(pg.Members) > 0 {
			out[pg.ID] = pg.Members[0]
		}
	}
	return p, out, nil
}

// localPart returns this node's replica of partition group gid after a
// read barrier; an error when the node does not host it (any more).
func (s *Store) localPart(ctx context.Context, gid uint64) (*group, error) {
	g := s.localFor(gid)
	if g == nil {
		return nil, fmt.Errorf("partition group %d is not hosted on %s: %w", gid, s.name, errNotHosted)
	}
	if err := s.localRead(ctx, g, region.Linearizable, catchUpWait); err != nil {
		return nil, err
	}
	return g, nil
}

// ScanLocal iterates this node's copy of a region: for a replicated one
// (groups empty) group 0's, for a partitioned one the named partition
// groups' parts, which this node must host. Reads are linearizable.
func (s *Store) ScanLocal(ctx context.Context, name string, groups []uint64, fn func(key string, value json.RawMessage) bool) error {
	ref, err := s.resolve(ctx, name, region.Linearizable)
	if err != nil {
		return err
	}
	if ref.kind != region.Partition {
		g0, err := s.readGroup(ctx, region.Linearizable)
		if err != nil {
			return err
		}
		return g0.fsm.Scan(name, 0, fn)
	}
	for _, gid := range groups {
		g, err := s.localPart(ctx, gid)
		if err != nil {
			return err
		}
		more := true
		if err := g.fsm.Scan(name, ref.id, func(k string, v json.RawMessage) bool {
			more = fn(k, v)
			return more
		}); err != nil {
			return err
		}
		if !more {
			return nil
		}
	}
	return nil
}

// CountLocal counts this node's copy of a region: one count for a
// replicated region, one per group for a partitioned one.
func (s *Store) CountLocal(ctx context.Context, name string, groups []uint64) ([]int, error) {
	ref, err := s.resolve(ctx, name, region.Linearizable)
	if err != nil {
		return nil, err
	}
	if ref.kind != region.Partition {
		g0, err := s.readGroup(ctx, region.Linearizable)
		if err != nil {
			return nil, err
		}
		n, err := g0.fsm.Count(name, 0)
		return []int{n}, err
	}
	out := make([]int, len(groups))
	for i, gid := range groups {
		g, err := s.localPart(ctx, gid)
		if err != nil {
			return nil, err
		}
		if out[i], err = g.fsm.Count(name, ref.id); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// ClearLocal clears a replicated region (groups empty) or the named
// partition groups' parts of a partitioned one, each through its Raft
// group and atomically.
func (s *Store) ClearLocal(ctx context.Context, name string, groups []uint64) error {
	ref, err := s.refresh(ctx, name)
	if err != nil {
		return err
	}
	if ref.kind != region.Partition {
		return s.Clear(ctx, name)
	}
	errs := parallel(groups, func(_ int, gid uint64) error {
		_, err := s.applyTo(ctx, gid, &codec.Command{Op: codec.OpClearPart, Region: name, RegionID: ref.id})
		return err
	})
	return firstError(errs)
}

// ---- the control group's metadata, for package catalog ----

// Meta reads a metadata key of the control group at consistency c.
func (s *Store) Meta(ctx context.Context, c region.Consistency, key string) ([]byte, uint64, bool, error) {
	g0, err := s.readGroup(ctx, c)
	if err != nil {
		return nil, 0, false, err
	}
	v, version, ok := g0.fsm.Meta(key)
	return v, version, ok, nil
}

// MetaList reads the metadata keys under prefix at consistency c, in key
// order.
func (s *Store) MetaList(ctx context.Context, c region.Consistency, prefix string) ([]catalog.Entry, error) {
	g0, err := s.readGroup(ctx, c)
	if err != nil {
		return nil, err
	}
	list := g0.fsm.MetaList(prefix)
	out := make([]catalog.Entry, len(list))
	for i, e := range list {
		out[i] = catalog.Entry{Key: e.Key, Value: e.Value, Version: e.Version}
	}
	return out, nil
}

// SetMeta writes a metadata key by compare-and-set (catalog.Meta says
// how). The partition table and index definitions are the store's own
// and refused here.
func (s *Store) SetMeta(ctx context.Context, key string, version uint64, value []byte) error {
	if strings.HasPrefix(key, tableKey) || strings.HasPrefix(key, indexKeyPrefix) {
		return fmt.Errorf("%w: metadata key %q belongs to the store", region.ErrInvalid, key)
	}
	return s.setMeta(ctx, key, version, value)
}

func (s *Store) setMeta(ctx context.Context, key string, version uint64, value []byte) error {
	_, err := s.apply(ctx, &codec.Command{Op: codec.OpSetMeta, MetaKey: key, MetaVersion: version, MetaValue: value})
	return err
}

// ownMeta is the store's metadata as a catalog.Meta that may also write the
// store's own keys (index definitions use the catalog's compare-and-set
// loop until they move into the catalog).
type ownMeta struct{ *Store }

func (m ownMeta) SetMeta(ctx context.Context, key string, version uint64, value []byte) error {
	return m.setMeta(ctx, key, version, value)
}
