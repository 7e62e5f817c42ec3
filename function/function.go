package function

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strconv"
)

// DefaultPermission is what running a function requires unless it says
// otherwise (rest-details.md, Security).
const DefaultPermission = "DATA:WRITE"

// Errors of a function request. region.ErrInvalid marks a malformed one.
var (
	// ErrUnknownFunction: no function has that id (404).
	ErrUnknownFunction = errors.New("no such function")
	// ErrUnknownTarget: onRegion, onMembers or onGroups names a region,
	// member or member group that does not exist (404).
	ErrUnknownTarget = errors.New("no such target")
)

// MemberError is a function that failed on one member: a 500 naming it.
type MemberError struct {
	Member string
	Err    error
}

func (e *MemberError) Error() string {
	return fmt.Sprintf("function failed on member %s: %v", e.Member, e.Err)
}

func (e *MemberError) Unwrap() error { return e.Err }

// Function is a server-side function.
type Function struct {
	ID          string
	Description string
	// Permission is what a caller needs to run it (default DATA:WRITE).
	Permission string
	// HasResult: the function answers with the members' results; without
	// it the answer has an empty body.
	HasResult bool
	// DataAware: the function runs where a region's data lives and needs
	// onRegion.
	DataAware bool
	// Run runs the function on one member and returns that member's
	// results (a member may send several, or none).
	Run func(ctx context.Context, c *Call) ([]any, error)
	// Reduce, when set, turns the results every member sent, in member
	// order, into the answer (a total, an order of keys).
	Reduce func(c *Request, results []json.RawMessage) ([]json.RawMessage, error)
}

// Request is one execution of a function, as the client asked for it.
type Request struct {
	ID        string
	Args      []Arg
	OnRegion  string
	OnMembers []string
	OnGroups  []string
	Filter    []string
}

// Call is what a function sees on the member that runs it.
type Call struct {
	// Member is this member's name.
	Member string
	Args   []Arg
	// Region is the onRegion region, "" without one; Partitioned says its
	// kind.
	Region      string
	Partitioned bool
	// Groups are the partition groups of Region this member runs for (it
	// leads them); empty for a replicated region.
	Groups []uint64
	// Filter are the filter keys that belong to Groups.
	Filter []string
	// Data reads and writes through this member.
	Data Data
}

// Data is a member's access to the cluster's data for a running function.
// Writes go through Raft like every other write; reads are linearizable.
type Data interface {
	// Get returns a value, nil when the key is absent.
	Get(ctx context.Context, region, key string) (json.RawMessage, error)
	// GetMany returns values aligned with keys, nil where absent.
	GetMany(ctx context.Context, region string, keys []string) ([]json.RawMessage, error)
	Put(ctx context.Context, region, key string, value json.RawMessage) error
	// PutIfAbsent stores the value when the key is absent and returns nil;
	// otherwise it stores nothing and returns the current value.
	PutIfAbsent(ctx context.Context, region, key string, value json.RawMessage) (json.RawMessage, error)
	// Replace stores newValue if the current value equals old (JSON
	// equality) and reports whether it did.
	Replace(ctx context.Context, region, key string, old, newValue json.RawMessage) (bool, error)
	// Remove deletes the key and returns the value it had (nil if absent),
	// atomically: the value returned is the one deleted, even when others
	// write the key meanwhile.
	Remove(ctx context.Context, region, key string) (json.RawMessage, error)
	// Count is the number of entries of the region.
	Count(ctx context.Context, region string) (int, error)
	// Query runs OQL with bind values and returns the result array.
	Query(ctx context.Context, oql string, params []any) (json.RawMessage, error)

	// Local, data-aware access. For a partitioned region, groups are
	// partition groups this member hosts; for a replicated region groups
	// is empty and the member's copy is used.
	ScanLocal(ctx context.Context, region string, groups []uint64, fn func(key string, value json.RawMessage) bool) error
	CountLocal(ctx context.Context, region string, groups []uint64) ([]int, error)
	// ClearLocal clears a replicated region (groups empty), or the given
	// partition groups' parts of a partitioned one, each atomically.
	ClearLocal(ctx context.Context, region string, groups []uint64) error

	// MemberInfo describes this member (the MemberInfo function).
	MemberInfo(ctx context.Context) (any, error)
}

// Arg is one function argument: a scalar (Value) or an object (Fields).
type Arg struct {
	Type string
	// Value is the scalar: int64, float64, float32, string, bool or nil.
	Value any
	// Fields are an object argument's members (scalars), in body order.
	Fields []Field
}

// Field is one member of an object argument.
type Field struct {
	Name  string
	Value any
}

// IsObject reports whether the argument is an object.
func (a Arg) IsObject() bool { return a.Fields != nil }

// MarshalJSON writes the argument as the REST body has it.
func (a Arg) MarshalJSON() ([]byte, error) {
	var b []byte
	b = append(b, `{"@type":`...)
	t, _ := json.Marshal(a.Type)
	b = append(b, t...)
	if !a.IsObject() {
		v, err := marshalScalar(a.Value)
		if err != nil {
			return nil, err
		}
		b = append(b, `,"@value":`...)
		b = append(b, v...)
	}
	for _, f := range a.Fields {
		k, _ := json.Marshal(f.Name)
		v, err := marshalScalar(f.Value)
		if err != nil {
			return nil, err
		}
		b = append(b, ',')
		b = append(b, k...)
		b = append(b, ':')
		b = append(b, v...)
	}
	return append(b, '}'), nil
}

// UnmarshalJSON reads an argument in its REST form (how arguments travel
// between members too, so their kinds survive the hop).
func (a *Arg) UnmarshalJSON(b []byte) error {
	parsed, err := parseArg(b)
	if err != nil {
		return err
	}
	*a = parsed
	return nil
}

// marshalScalar writes a scalar so that it reads back with the same kind:
// a whole float keeps a fraction (2.0, not 2, which would read as an int).
func marshalScalar(v any) ([]byte, error) {
	switch f := v.(type) {
	case float64:
		if f == math.Trunc(f) && !math.IsInf(f, 0) && math.Abs(f) < 1e15 {
			return []byte(strconv.FormatFloat(f, 'f', 1, 64)), nil
		}
	case float32:
		return marshalScalar(float64(f))
	}
	return json.Marshal(v)
}
