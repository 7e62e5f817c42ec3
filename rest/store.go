package rest

import (
	"context"
	"encoding/json"

	"github.com/kvnode/kvnode/region"
)

// Store is the node's data layer as the handlers use it. Every method honours ctx's deadline.
//
// It is declared here, by its caller, so that the handlers can be tested over
// any implementation; package store provides the real one.
type Store interface {
	Regions(ctx context.Context, c region.Consistency) ([]region.Info, error) // sorted by name
	CreateRegion(ctx context.Context, info region.Info) error                 // region.ErrRegionExists
	DestroyRegion(ctx context.Context, name string) error                     // region.ErrRegionNotFound
	// Get returns values aligned with keys, nil for a missing key; ErrRegionNotFound if the region is unknown.
	Get(ctx context.Context, c region.Consistency, name string, keys []string) ([]json.RawMessage, error)
	List(ctx context.Context, c region.Consistency, name string, limit int) ([]region.Entry, error) // ascending keys; limit<0 = all
	Keys(ctx context.Context, c region.Consistency, name string) ([]string, error)
	Count(ctx context.Context, c region.Consistency, name string) (int, error)
	Put(ctx context.Context, name string, entries []region.Entry) error                   // upsert all
	PutIfAbsent(ctx context.Context, name string, e region.Entry) (key string, err error) // e.Key=="" → generated; exists → *region.ConflictError{Err: ErrKeyExists}
	Replace(ctx context.Context, name string, entries []region.Entry) error               // missing → ErrKeyAbsent, nothing changes
	CAS(ctx context.Context, name string, pairs []region.CASPair) error                   // missing → ErrKeyAbsent; mismatch → *region.ConflictError{Err: ErrCASMismatch}
	Delete(ctx context.Context, name string, keys []string) error                         // missing → ErrKeyNotFound, nothing deleted
	Clear(ctx context.Context, name string) error                                         // PARTITION → ErrNotSupported
}

// Members lists the REST base URLs of live cluster members, for GET /servers.
type Members interface {
	RESTURLs() []string
}
