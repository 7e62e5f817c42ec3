package catalog

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/kvnode/kvnode/region"
)

// Meta is the control group's versioned metadata.
type Meta interface {
	// Meta reads key at consistency c: its value and version, ok false
	// when absent.
	Meta(ctx context.Context, c region.Consistency, key string) (value []byte, version uint64, ok bool, err error)
	// MetaList reads every key under prefix, in key order.
	MetaList(ctx context.Context, c region.Consistency, prefix string) ([]Entry, error)
	// SetMeta writes key by compare-and-set: version 0 creates it
	// (region.ErrVersionConflict when it exists); another version
	// replaces it, or deletes it when value is nil, while that is still
	// its version (region.ErrVersionConflict when not,
	// region.ErrKeyNotFound when it is gone).
	SetMeta(ctx context.Context, key string, version uint64, value []byte) error
}

// Entry is one metadata key with its value and version.
type Entry struct {
	Key     string
	Value   []byte
	Version uint64
}

// Key prefixes of the definitions the catalog keeps.
const (
	QueryPrefix    = "query/"
	FunctionPrefix = "function/"
)

// RebalancePrefix is where rebalance operations live among the metadata
// (package store/rebalance): one record per operation, by its ID.
const RebalancePrefix = "operation/rebalance/"

// TableKey is where the partition table lives among the metadata: the
// store's own key (package partition encodes the table).
const TableKey = "partition/table"

// Catalog is the definitions of a cluster, read and changed through Meta.
type Catalog struct {
	meta Meta
	// conflictHook, when set (tests only), runs in CreateQuery between a
	// name conflict and the read of the definition that won.
	conflictHook func()
}

// New is the catalog kept in meta.
func New(meta Meta) *Catalog { return &Catalog{meta: own{meta: meta}} }

// own is Meta as the catalog may use it: its writes reach only its own
// keys (named queries and functions), never the partition table or index
// definitions, whoever else keeps metadata beside it.
type own struct{ meta Meta }

func (m own) Meta(ctx context.Context, c region.Consistency, key string) ([]byte, uint64, bool, error) {
	return m.meta.Meta(ctx, c, key)
}

func (m own) MetaList(ctx context.Context, c region.Consistency, prefix string) ([]Entry, error) {
	return m.meta.MetaList(ctx, c, prefix)
}

func (m own) SetMeta(ctx context.Context, key string, version uint64, value []byte) error {
	if !strings.HasPrefix(key, QueryPrefix) && !strings.HasPrefix(key, FunctionPrefix) {
		return fmt.Errorf("%w: metadata key %q belongs to the store", region.ErrInvalid, key)
	}
	return m.meta.SetMeta(ctx, key, version, value)
}

// ---- named queries ----

// Queries lists the named queries, by id.
func (c *Catalog) Queries(ctx context.Context, cons region.Consistency) ([]region.NamedQuery, error) {
	entries, err := c.meta.MetaList(ctx, cons, QueryPrefix)
	if err != nil {
		return nil, err
	}
	out := make([]region.NamedQuery, len(entries))
	for i, e := range entries {
		out[i] = region.NamedQuery{ID: strings.TrimPrefix(e.Key, QueryPrefix), OQL: string(e.Value)}
	}
	return out, nil
}

// NamedQuery returns one named query; region.ErrKeyNotFound if none.
func (c *Catalog) NamedQuery(ctx context.Context, cons region.Consistency, id string) (region.NamedQuery, error) {
	v, _, ok, err := c.meta.Meta(ctx, cons, QueryPrefix+id)
	if err != nil {
		return region.NamedQuery{}, err
	}
	if !ok {
		return region.NamedQuery{}, fmt.Errorf("named query %q: %w", id, region.ErrKeyNotFound)
	}
	return region.NamedQuery{ID: id, OQL: string(v)}, nil
}

// CreateQuery stores a new named query. An existing id is a
// *region.ConflictError (ErrKeyExists) whose Current is the stored query
// as {"id","oql"}.
func (c *Catalog) CreateQuery(ctx context.Context, id, text string) error {
	if err := region.ValidateKey(id); err != nil {
		return fmt.Errorf("query id: %w", err)
	}
	if text == "" {
		return fmt.Errorf("%w: the query text is empty", region.ErrInvalid)
	}
	var cur region.NamedQuery
	for {
		err := c.meta.SetMeta(ctx, QueryPrefix+id, 0, []byte(text))
		if !errors.Is(err, region.ErrVersionConflict) {
			return err
		}
		if c.conflictHook != nil {
			c.conflictHook()
		}
		var gerr error
		cur, gerr = c.NamedQuery(ctx, region.Linearizable, id)
		if gerr == nil {
			break
		}
		if !errors.Is(gerr, region.ErrKeyNotFound) {
			return fmt.Errorf("query %q exists; reading its text: %w", id, gerr)
		}
		// Deleted between the conflict and the read: the id is free, so
		// the create is tried again.
	}
	var body bytes.Buffer
	enc := json.NewEncoder(&body)
	enc.SetEscapeHTML(false) // "<" in a query reads as "<"
	_ = enc.Encode(cur)      // two strings always encode
	return &region.ConflictError{Err: region.ErrKeyExists, Key: id, Current: bytes.TrimSpace(body.Bytes())}
}

// UpdateQuery replaces a named query's text; region.ErrKeyNotFound if the
// id is unknown.
func (c *Catalog) UpdateQuery(ctx context.Context, id, text string) error {
	if text == "" {
		return fmt.Errorf("%w: the query text is empty", region.ErrInvalid)
	}
	return Change(ctx, c.meta, QueryPrefix+id, []byte(text), fmt.Sprintf("named query %q", id))
}

// DeleteQuery removes a named query; region.ErrKeyNotFound if unknown.
func (c *Catalog) DeleteQuery(ctx context.Context, id string) error {
	return Change(ctx, c.meta, QueryPrefix+id, nil, fmt.Sprintf("named query %q", id))
}

// ---- deployed functions (their JSON is package function's business) ----

// Function returns a deployed function's definition.
func (c *Catalog) Function(ctx context.Context, id string) ([]byte, bool, error) {
	v, _, ok, err := c.meta.Meta(ctx, region.Linearizable, FunctionPrefix+id)
	return v, ok, err
}

// Functions returns every deployed function's definition, by id.
func (c *Catalog) Functions(ctx context.Context) (map[string][]byte, error) {
	entries, err := c.meta.MetaList(ctx, region.Linearizable, FunctionPrefix)
	if err != nil {
		return nil, err
	}
	out := make(map[string][]byte, len(entries))
	for _, e := range entries {
		out[strings.TrimPrefix(e.Key, FunctionPrefix)] = e.Value
	}
	return out, nil
}

// PutFunction creates or replaces a function's definition and reports
// whether it was created.
func (c *Catalog) PutFunction(ctx context.Context, id string, def []byte) (created bool, err error) {
	if len(def) == 0 {
		return false, fmt.Errorf("%w: an empty function definition", region.ErrInvalid)
	}
	key := FunctionPrefix + id
	for {
		err := c.meta.SetMeta(ctx, key, 0, def)
		if err == nil {
			return true, nil
		}
		if !errors.Is(err, region.ErrVersionConflict) {
			return false, err
		}
		err = Change(ctx, c.meta, key, def, "deployed function "+id)
		if errors.Is(err, region.ErrKeyNotFound) {
			continue // deleted in between: create it
		}
		return false, err
	}
}

// DeleteFunction removes a function's definition; region.ErrKeyNotFound if
// there is none.
func (c *Catalog) DeleteFunction(ctx context.Context, id string) error {
	return Change(ctx, c.meta, FunctionPrefix+id, nil, fmt.Sprintf("deployed function %q", id))
}

// Change sets (or with nil, deletes) an existing key of meta by
// compare-and-set on its version, retrying when another change won; a
// missing key is region.ErrKeyNotFound, reported as what. The store uses
// it for its index definitions too.
func Change(ctx context.Context, meta Meta, key string, value []byte, what string) error {
	for {
		_, version, ok, err := meta.Meta(ctx, region.Linearizable, key)
		if err != nil {
			return err
		}
		if !ok {
			return fmt.Errorf("%s: %w", what, region.ErrKeyNotFound)
		}
		err = meta.SetMeta(ctx, key, version, value)
		switch {
		case errors.Is(err, region.ErrVersionConflict):
			continue
		case errors.Is(err, region.ErrKeyNotFound):
			return fmt.Errorf("%s: %w", what, region.ErrKeyNotFound)
		}
		return err
	}
}
