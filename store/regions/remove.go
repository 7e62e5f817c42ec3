package regions

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/kvnode/kvnode/fsm/codec"
	"github.com/kvnode/kvnode/partition"
	"github.com/kvnode/kvnode/region"
)

// Remove deletes key and returns the value it deleted, nil when there was
// none. It is atomic: it reads the value, then deletes the key only if it
// still holds exactly that value (codec.OpDeleteIf). When a write came in
// between, the refusal carries the newer value and the delete is tried
// against that one; when a delete came in between, the key is absent and
// the answer is nil. So the value returned is always the one removed, and
// a value written after the read is never removed unseen. A read followed
// by a plain delete had neither property.
//
// Under a steady stream of writes to the key each attempt may lose the
// race again; ctx bounds the retries.
func (r *API) Remove(ctx context.Context, name, key string) (json.RawMessage, error) {
	vals, err := r.Get(ctx, region.Linearizable, name, []string{key})
	if err != nil {
		return nil, err
	}
	old := vals[0]
	for old != nil {
		err := r.deleteIf(ctx, name, region.Entry{Key: key, Value: old})
		var ce *region.ConflictError
		switch {
		case err == nil:
			return old, nil
		case errors.Is(err, region.ErrKeyNotFound):
			return nil, nil
		case errors.Is(err, region.ErrCASMismatch) && errors.As(err, &ce) && ce.Current != nil:
			old = ce.Current
		default:
			return nil, err
		}
		if err := ctx.Err(); err != nil {
			return nil, fmt.Errorf("remove %s/%s: the value kept changing: %w", name, key, err)
		}
	}
	return nil, nil
}

// deleteIf deletes e.Key if it holds exactly e.Value (see codec.OpDeleteIf).
func (r *API) deleteIf(ctx context.Context, name string, e region.Entry) error {
	_, err := withRegion(ctx, r.parts, name, region.Linearizable, func(ref Ref) (none, error) {
		cmd := &codec.Command{Op: codec.OpDeleteIf, Region: name, Entries: []region.Entry{e}}
		if ref.Kind != region.Partition {
			_, err := r.groups.Apply(ctx, controlGroup, cmd)
			return none{}, err
		}
		cmd.RegionID = ref.ID
		return none{}, r.parts.rerouted(ctx, func(t partition.Table) error {
			_, err := r.groups.Apply(ctx, t.GroupFor(e.Key), cmd)
			return err
		})
	})
	return err
}
