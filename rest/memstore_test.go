package rest

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math/big"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/kvnode/kvnode/region"
)

// newTestStore is the one constructor every test of real handlers goes
// through. It returns an in-memory stand-in with the documented semantics of
// the Store interface; the real single-node store replaces it here once it
// exists, so tests must not depend on anything but the interface.
func newTestStore(tb testing.TB) Store {
	tb.Helper()
	return &memStore{regions: map[string]*memRegion{}}
}

// memStore is a test-only Store: a map of regions behind one mutex.
type memStore struct {
	mu      sync.Mutex
	regions map[string]*memRegion
	nextKey int
}

type memRegion struct {
	kind    region.Kind
	entries map[string]json.RawMessage
}

func (m *memStore) region(name string) (*memRegion, error) {
	r, ok := m.regions[name]
	if !ok {
		return nil, fmt.Errorf("region %q: %w", name, region.ErrRegionNotFound)
	}
	return r, nil
}

func (m *memStore) Regions(ctx context.Context, _ region.Consistency) ([]region.Info, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	infos := []region.Info{}
	for name, r := range m.regions {
		infos = append(infos, region.Info{Name: name, Kind: r.kind})
	}
	slices.SortFunc(infos, func(a, b region.Info) int { return strings.Compare(a.Name, b.Name) })
	return infos, nil
}

func (m *memStore) CreateRegion(ctx context.Context, info region.Info) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if err := region.ValidateName(info.Name); err != nil {
		return err
	}
	kind, err := region.ParseKind(string(info.Kind))
	if err != nil {
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, ok := m.regions[info.Name]; ok {
		return fmt.Errorf("region %q: %w", info.Name, region.ErrRegionExists)
	}
	m.regions[info.Name] = &memRegion{kind: kind, entries: map[string]json.RawMessage{}}
	return nil
}

func (m *memStore) DestroyRegion(ctx context.Context, name string) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, err := m.region(name); err != nil {
		return err
	}
	delete(m.regions, name)
	return nil
}

func (m *memStore) Get(ctx context.Context, _ region.Consistency, name string, keys []string) ([]json.RawMessage, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	r, err := m.region(name)
	if err != nil {
		return nil, err
	}
	out := make([]json.RawMessage, len(keys))
	for i, k := range keys {
		if v, ok := r.entries[k]; ok {
			out[i] = slices.Clone(v)
		}
	}
	return out, nil
}

func (m *memStore) List(ctx context.Context, _ region.Consistency, name string, limit int) ([]region.Entry, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	r, err := m.region(name)
	if err != nil {
		return nil, err
	}
	keys := sortedKeys(r)
	if limit >= 0 && limit < len(keys) {
		keys = keys[:limit]
	}
	out := make([]region.Entry, len(keys))
	for i, k := range keys {
		out[i] = region.Entry{Key: k, Value: slices.Clone(r.entries[k])}
	}
	return out, nil
}

func sortedKeys(r *memRegion) []string {
	keys := make([]string, 0, len(r.entries))
	for k := range r.entries {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

func (m *memStore) Keys(ctx context.Context, _ region.Consistency, name string) ([]string, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	r, err := m.region(name)
	if err != nil {
		return nil, err
	}
	return sortedKeys(r), nil
}

func (m *memStore) Count(ctx context.Context, _ region.Consistency, name string) (int, error) {
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	r, err := m.region(name)
	if err != nil {
		return 0, err
	}
	return len(r.entries), nil
}

func (m *memStore) Put(ctx context.Context, name string, entries []region.Entry) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	r, err := m.region(name)
	if err != nil {
		return err
	}
	for _, e := range entries {
		r.entries[e.Key] = slices.Clone(e.Value)
	}
	return nil
}

func (m *memStore) PutIfAbsent(ctx context.Context, name string, e region.Entry) (string, error) {
	if err := ctx.Err(); err != nil {
		return "", err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	r, err := m.region(name)
	if err != nil {
		return "", err
	}
	key := e.Key
	if key == "" {
		for key == "" || r.entries[key] != nil {
			m.nextKey++
			key = strconv.Itoa(m.nextKey)
		}
	}
	if cur, ok := r.entries[key]; ok {
		return "", &region.ConflictError{Err: region.ErrKeyExists, Key: key, Current: slices.Clone(cur)}
	}
	r.entries[key] = slices.Clone(e.Value)
	return key, nil
}

func (m *memStore) Replace(ctx context.Context, name string, entries []region.Entry) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	r, err := m.region(name)
	if err != nil {
		return err
	}
	for _, e := range entries {
		if _, ok := r.entries[e.Key]; !ok {
			return fmt.Errorf("replace %q in region %q: %w", e.Key, name, region.ErrKeyAbsent)
		}
	}
	for _, e := range entries {
		r.entries[e.Key] = slices.Clone(e.Value)
	}
	return nil
}

func (m *memStore) CAS(ctx context.Context, name string, pairs []region.CASPair) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	r, err := m.region(name)
	if err != nil {
		return err
	}
	for _, p := range pairs {
		cur, ok := r.entries[p.Key]
		if !ok {
			return fmt.Errorf("compare-and-set %q in region %q: %w", p.Key, name, region.ErrKeyAbsent)
		}
		if !jsonEqual(cur, p.Old) {
			return &region.ConflictError{Err: region.ErrCASMismatch, Key: p.Key, Current: slices.Clone(cur)}
		}
	}
	for _, p := range pairs {
		r.entries[p.Key] = slices.Clone(p.New)
	}
	return nil
}

func (m *memStore) Delete(ctx context.Context, name string, keys []string) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	r, err := m.region(name)
	if err != nil {
		return err
	}
	for _, k := range keys {
		if _, ok := r.entries[k]; !ok {
			return fmt.Errorf("delete %q in region %q: %w", k, name, region.ErrKeyNotFound)
		}
	}
	for _, k := range keys {
		delete(r.entries, k)
	}
	return nil
}

func (m *memStore) Clear(ctx context.Context, name string) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	r, err := m.region(name)
	if err != nil {
		return err
	}
	if r.kind == region.Partition {
		return fmt.Errorf("clear region %q: %w", name, region.ErrNotSupported)
	}
	clear(r.entries)
	return nil
}

// jsonEqual compares two JSON documents as CAS does: objects member by
// member whatever their order, arrays element-wise, numbers by kind (integer
// or decimal) and value, so 1 ≠ 1.0.
func jsonEqual(a, b []byte) bool {
	va, errA := decodeJSON(a)
	vb, errB := decodeJSON(b)
	return errA == nil && errB == nil && equalValues(va, vb)
}

func decodeJSON(raw []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	err := dec.Decode(&v)
	return v, err
}

func equalValues(a, b any) bool {
	switch a := a.(type) {
	case map[string]any:
		b, ok := b.(map[string]any)
		if !ok || len(a) != len(b) {
			return false
		}
		for k, va := range a {
			vb, ok := b[k]
			if !ok || !equalValues(va, vb) {
				return false
			}
		}
		return true
	case []any:
		b, ok := b.([]any)
		if !ok || len(a) != len(b) {
			return false
		}
		for i := range a {
			if !equalValues(a[i], b[i]) {
				return false
			}
		}
		return true
	case json.Number:
		b, ok := b.(json.Number)
		return ok && equalNumbers(string(a), string(b))
	default:
		return a == b
	}
}

func equalNumbers(a, b string) bool {
	isDecimal := func(s string) bool { return strings.ContainsAny(s, ".eE") }
	if isDecimal(a) != isDecimal(b) {
		return false
	}
	fa, _, errA := big.ParseFloat(a, 10, 256, big.ToNearestEven)
	fb, _, errB := big.ParseFloat(b, 10, 256, big.ToNearestEven)
	return errA == nil && errB == nil && fa.Cmp(fb) == 0
}
