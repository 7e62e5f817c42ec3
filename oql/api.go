package oql

import (
	"context"
	"errors"
	"fmt"
)

// Source is the data a query reads: the regions it names, by full path
// ("/orders"). The store implements it over its replicas; tests use a map.
// Every method returns an error wrapping region.ErrRegionNotFound for a
// region that does not exist: the one "region not found" of kvnode, which a
// query answers as a 500 (rest wraps every query error in its queryError)
// and a region operation as a 404.
type Source interface {
	// Scan calls fn with every entry of the region, in any order, until fn
	// returns false. value is the stored JSON; fn must not keep it past
	// the call unless the source says its values are immutable (ours are).
	Scan(ctx context.Context, region string, fn func(key string, value []byte) bool) error
	// Get returns the value stored under key; ok is false when absent.
	Get(ctx context.Context, region, key string) (value []byte, ok bool, err error)
	// Size returns the number of entries.
	Size(ctx context.Context, region string) (int, error)
}

// ImmutableSource is a Source whose values never change once Scan or Get
// has passed them (the store's: a write replaces a value, never edits it).
// The engine then reads them in place instead of copying each one into a
// string first: an eighth of the time of a full scan with a predicate, and
// most of its garbage. Results may keep parts of such values.
type ImmutableSource interface {
	Source
	ValuesImmutable()
}

// Errors a query can fail with, beyond syntax (*SyntaxError) and evaluation
// errors (*EvalError). All of them are a 500 over REST.
var (
	// ErrTooManyRows: the result passed Options.MaxRows.
	ErrTooManyRows = errors.New("query result too large")
	// ErrBind: the bind values do not fit the query (count, kind, text).
	ErrBind = errors.New("bad bind parameter")
)

// SyntaxError is a query text that does not parse or compile; Line and
// Column are 1-based and point at the offending token.
type SyntaxError struct {
	Line, Column int
	Msg          string
}

func (e *SyntaxError) Error() string {
	return fmt.Sprintf("syntax error at line %d, column %d: %s", e.Line, e.Column, e.Msg)
}

// EvalError is a query that parsed but failed while running: a type error,
// an unresolvable name, a division by zero, an index out of range.
type EvalError struct {
	Msg string
}

func (e *EvalError) Error() string { return e.Msg }

// Options bound one execution.
type Options struct {
	// MaxRows caps the result (and any intermediate row set kept for
	// ORDER BY, DISTINCT or GROUP BY); 0 means no cap. Past it the query
	// fails with ErrTooManyRows.
	MaxRows int
}
