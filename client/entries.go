package client

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/kvnode/kvnode/client/internal/jsonscan"
)

// Region is a handle on one region's entries; it holds nothing but the
// name, so making one is free. Its methods are safe for concurrent use.
type Region struct {
	c    *Client
	name string
}

// Region returns the handle of the region called name. It does not check
// that the region exists: its operations answer ErrNotFound if not.
func (c *Client) Region(name string) *Region { return &Region{c: c, name: name} }

// Name is the region's name.
func (r *Region) Name() string { return r.name }

// Entry is a key and its value, for PutAll.
type Entry struct {
	Key   string
	Value any // json.RawMessage and []byte are sent as they are
}

// Option adjusts one operation: WithTTL and AtMostOnce for writes, Stale
// for reads.
type Option func(*options)

type options struct {
	ttl    time.Duration
	ttlSet bool
	stale  bool
	once   bool
}

// WithTTL gives the entries a write stores a time to live: they expire d
// after the write (rounded up to whole seconds); 0 means never. Without
// it an entry gets the region's default time to live.
func WithTTL(d time.Duration) Option {
	return func(o *options) { o.ttl, o.ttlSet = max(d, 0), true }
}

// Stale lets a read be served by any member's replica, possibly behind the
// latest writes, instead of linearizably (the default) through its group's
// leader.
func Stale() Option { return func(o *options) { o.stale = true } }

// AtMostOnce sends a Put or PutAll again only when it cannot have been
// applied, as a put-if-absent: an unknown outcome is ErrOutcomeUnknown.
// For programs that count writes: a put applied twice is two changes to
// a watch, and may overwrite another client's write made between them.
func AtMostOnce() Option { return func(o *options) { o.once = true } }

func collect(opts []Option) options {
	var o options
	for _, f := range opts {
		f(&o)
	}
	return o
}

// query is the query parameters of o (nil when none).
func (o options) query() url.Values {
	q := url.Values{}
	if o.ttlSet {
		secs := (o.ttl + time.Second - 1) / time.Second
		q.Set("ttl", strconv.FormatInt(int64(secs), 10))
	}
	if o.stale {
		q.Set("consistency", "stale")
	}
	if len(q) == 0 {
		return nil
	}
	return q
}

// regionPath is /kv/v1/{region}.
func (r *Region) regionPath() string { return "/kv/v1/" + url.PathEscape(r.name) }

// keysPath is /kv/v1/{region}/{k1},{k2}...; the single key "keys" is
// written %6Beys, which the members read as the key and not as the
// /{region}/keys listing.
func (r *Region) keysPath(keys []string) (string, error) {
	if len(keys) == 0 {
		return "", fmt.Errorf("%w: no key given", ErrInvalidArgument)
	}
	esc := make([]string, len(keys))
	for i, k := range keys {
		if k == "" || strings.Contains(k, ",") {
			return "", fmt.Errorf("%w: key %q: keys are not empty and have no comma", ErrInvalidArgument, k)
		}
		esc[i] = url.PathEscape(k)
	}
	if len(keys) == 1 && keys[0] == "keys" {
		esc[0] = "%6Beys"
	}
	return r.regionPath() + "/" + strings.Join(esc, ","), nil
}

// ErrInvalidArgument: a call's arguments were refused before anything was
// sent (no key, a value that is not JSON).
var ErrInvalidArgument = errors.New("client: invalid argument")

// encode is value as JSON.
func encode(value any) ([]byte, error) {
	var data []byte
	switch v := value.(type) {
	case json.RawMessage:
		data = v
	case []byte:
		data = v
	default:
		var err error
		if data, err = json.Marshal(value); err != nil {
			return nil, fmt.Errorf("%w: encoding the value: %w", ErrInvalidArgument, err)
		}
	}
	if !jsonscan.Valid(data) {
		return nil, fmt.Errorf("%w: the value is not JSON", ErrInvalidArgument)
	}
	return data, nil
}

// Get reads key's value; ErrNotFound when the key (or the region) does
// not exist.
func (r *Region) Get(ctx context.Context, key string, opts ...Option) (json.RawMessage, error) {
	o := collect(opts)
	path, err := r.keysPath([]string{key})
	if err != nil {
		return nil, err
	}
	resp, err := r.c.do(ctx, &request{method: http.MethodGet, path: path, query: o.query(), idempotent: true,
		region: r.name, key: key, toLeader: !o.stale})
	if err != nil {
		return nil, err
	}
	return json.RawMessage(resp.body), nil
}

// GetMany reads the values of keys, in their order: nil where a key does
// not exist. ErrNotFound only when the region does not.
func (r *Region) GetMany(ctx context.Context, keys []string, opts ...Option) ([]json.RawMessage, error) {
	o := collect(opts)
	path, err := r.keysPath(keys)
	if err != nil {
		return nil, err
	}
	q := o.query()
	if q == nil {
		q = url.Values{}
	}
	q.Set("ignoreMissingKey", "true")
	resp, err := r.c.do(ctx, &request{method: http.MethodGet, path: path, query: q, idempotent: true,
		region: r.name, key: keys[0], toLeader: !o.stale})
	if err != nil {
		return nil, err
	}
	if len(keys) == 1 {
		// One key is answered as its value, not as a list.
		return []json.RawMessage{json.RawMessage(resp.body)}, nil
	}
	var doc map[string][]json.RawMessage
	if err := json.Unmarshal(resp.body, &doc); err != nil {
		return nil, &decodeError{what: "values", err: err}
	}
	values := doc[r.name]
	if len(values) != len(keys) {
		return nil, &decodeError{what: "values", err: fmt.Errorf("%d values for %d keys", len(values), len(keys))}
	}
	for i, v := range values {
		if string(v) == "null" {
			values[i] = nil
		}
	}
	return values, nil
}

// Put stores value at key, whether the key exists or not.
func (r *Region) Put(ctx context.Context, key string, value any, opts ...Option) error {
	body, err := encode(value)
	if err != nil {
		return err
	}
	path, err := r.keysPath([]string{key})
	if err != nil {
		return err
	}
	o := collect(opts)
	_, err = r.c.do(ctx, &request{method: http.MethodPut, path: path, query: o.query(), body: body, idempotent: !o.once,
		region: r.name, key: key, toLeader: true})
	return err
}

// PutAll stores every entry in one request. In a partitioned region the
// entries of each partition group are applied together, the groups
// independently: after a failure some groups' entries may be stored, and
// sending the request again (which PutAll does while it may, unless
// AtMostOnce) stores them all.
func (r *Region) PutAll(ctx context.Context, entries []Entry, opts ...Option) error {
	keys, values, err := split(entries)
	if err != nil {
		return err
	}
	o := collect(opts)
	return r.putMany(ctx, keys, values, "", !o.once, o)
}

// split is the keys and the encoded values of entries.
func split(entries []Entry) ([]string, []json.RawMessage, error) {
	keys := make([]string, len(entries))
	values := make([]json.RawMessage, len(entries))
	for i, e := range entries {
		keys[i] = e.Key
		v, err := encode(e.Value)
		if err != nil {
			return nil, nil, fmt.Errorf("entry %q: %w", e.Key, err)
		}
		values[i] = v
	}
	return keys, values, nil
}

// ReplaceAll stores each entry only if every key exists; ErrNotFound, and
// nothing stored, when one does not (in a partitioned region: per group,
// and a refusal may leave other groups' entries stored).
func (r *Region) ReplaceAll(ctx context.Context, entries []Entry, opts ...Option) error {
	keys, values, err := split(entries)
	if err != nil {
		return err
	}
	return absent(r.putMany(ctx, keys, values, "REPLACE", false, collect(opts)))
}

// Swap is a key of CompareAndSetAll: its value becomes New if it is Old.
type Swap struct {
	Key      string
	Old, New any
}

// CompareAndSetAll stores each New only if every key holds its Old (as
// CompareAndSet compares); else ErrConflict, its *Error's Current the
// value of the first key that does not, or ErrNotFound, nothing stored
// (per group, as ReplaceAll says).
func (r *Region) CompareAndSetAll(ctx context.Context, swaps []Swap, opts ...Option) error {
	keys := make([]string, len(swaps))
	values := make([]json.RawMessage, len(swaps))
	for i, sw := range swaps {
		keys[i] = sw.Key
		v, err := casBody(sw.Old, sw.New)
		if err != nil {
			return fmt.Errorf("entry %q: %w", sw.Key, err)
		}
		values[i] = v
	}
	return absent(r.putMany(ctx, keys, values, "CAS", false, collect(opts)))
}

// putMany sends PUT /kv/v1/{region}/{keys}[?op=] with values as the
// body's array.
func (r *Region) putMany(ctx context.Context, keys []string, values []json.RawMessage, op string, idempotent bool, o options) error {
	if len(keys) == 0 {
		return nil
	}
	path, err := r.keysPath(keys)
	if err != nil {
		return err
	}
	// One key's body is its value, not a list of one.
	body := []byte(values[0])
	if len(keys) > 1 {
		if body, err = json.Marshal(values); err != nil {
			return fmt.Errorf("%w: %w", ErrInvalidArgument, err)
		}
	}
	q := o.query()
	if op != "" {
		if q == nil {
			q = url.Values{}
		}
		q.Set("op", op)
	}
	_, err = r.c.do(ctx, &request{method: http.MethodPut, path: path, query: q, body: body, idempotent: idempotent,
		region: r.name, key: keys[0], toLeader: true})
	return err
}

// Create stores value at key only if the key does not exist
// (put-if-absent) and returns the key. When it exists the error is
// ErrConflict and its *Error's Current is the value found. With key "",
// the member makes up a new key and Create returns it.
func (r *Region) Create(ctx context.Context, key string, value any, opts ...Option) (string, error) {
	body, err := encode(value)
	if err != nil {
		return "", err
	}
	q := collect(opts).query()
	if key != "" {
		if q == nil {
			q = url.Values{}
		}
		q.Set("key", key)
	}
	resp, err := r.c.do(ctx, &request{method: http.MethodPost, path: r.regionPath(), query: q, body: body,
		region: r.name, key: key, toLeader: key != ""})
	if err != nil {
		return "", err
	}
	if key != "" {
		return key, nil
	}
	return keyOfLocation(resp.header.Get("Location"))
}

// keyOfLocation is the key that ends an entry's Location.
func keyOfLocation(loc string) (string, error) {
	i := strings.LastIndexByte(loc, '/')
	if loc == "" || i < 0 {
		return "", &decodeError{what: "created entry's Location", err: fmt.Errorf("%q", loc)}
	}
	key, err := url.PathUnescape(loc[i+1:])
	if err != nil {
		return "", &decodeError{what: "created entry's Location", err: err}
	}
	return key, nil
}

// Replace stores value at key only if the key exists; ErrNotFound when it
// does not.
func (r *Region) Replace(ctx context.Context, key string, value any, opts ...Option) error {
	body, err := encode(value)
	if err != nil {
		return err
	}
	return absent(r.putMany(ctx, []string{key}, []json.RawMessage{body}, "REPLACE", false, collect(opts)))
}

// CompareAndSet stores newValue at key only if its value is now oldValue
// (compared as JSON: member order does not matter, 1 is not 1.0). When it
// is not, the error is ErrConflict and its *Error's Current is the value
// found; ErrNotFound when the key does not exist.
func (r *Region) CompareAndSet(ctx context.Context, key string, oldValue, newValue any, opts ...Option) error {
	body, err := casBody(oldValue, newValue)
	if err != nil {
		return err
	}
	return absent(r.putMany(ctx, []string{key}, []json.RawMessage{body}, "CAS", false, collect(opts)))
}

// casBody is a compare-and-set's {"@old": oldValue, "@new": newValue}.
func casBody(oldValue, newValue any) (json.RawMessage, error) {
	oldJSON, err := encode(oldValue)
	if err != nil {
		return nil, err
	}
	newJSON, err := encode(newValue)
	if err != nil {
		return nil, err
	}
	body, err := json.Marshal(struct {
		Old json.RawMessage `json:"@old"`
		New json.RawMessage `json:"@new"`
	}{oldJSON, newJSON})
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalidArgument, err)
	}
	return body, nil
}

// absentMessage is how the members say that a REPLACE or CAS found no key
// (a 400, as Geode answers it).
const absentMessage = "key not present in region"

// absent makes a REPLACE's or CAS's missing key an ErrNotFound.
func absent(err error) error {
	var e *Error
	if errors.As(err, &e) && e.Status == http.StatusBadRequest && strings.Contains(e.Message, absentMessage) {
		e.absent = true
	}
	return err
}

// Delete removes keys, all or none: ErrNotFound (and nothing removed) when
// one does not exist.
func (r *Region) Delete(ctx context.Context, keys ...string) error {
	path, err := r.keysPath(keys)
	if err != nil {
		return err
	}
	_, err = r.c.do(ctx, &request{method: http.MethodDelete, path: path, region: r.name, key: keys[0], toLeader: true})
	return err
}

// Clear removes every entry of a replicated region (a partitioned region
// answers 405).
func (r *Region) Clear(ctx context.Context) error {
	_, err := r.c.do(ctx, &request{method: http.MethodDelete, path: r.regionPath(), idempotent: true, region: r.name, toLeader: true})
	return err
}

// Count is the number of entries.
func (r *Region) Count(ctx context.Context, opts ...Option) (int, error) {
	o := collect(opts)
	resp, err := r.c.do(ctx, &request{method: http.MethodHead, path: r.regionPath(), query: o.query(), idempotent: true})
	if err != nil {
		return 0, err
	}
	n, err := strconv.Atoi(resp.header.Get("Resource-Count"))
	if err != nil {
		return 0, &decodeError{what: "Resource-Count", err: err}
	}
	return n, nil
}
