package client

import (
	"context"
	"encoding/json"
	"iter"
	"net/http"
	"net/url"
	"strconv"

	"github.com/kvnode/kvnode/client/internal/wire"
)

// Keys iterates over the region's keys in ascending order as the member
// streams them (GET /kv/v1/{region}/keys), so that a region of any size
// takes no more of the program's memory than one key. A stream that
// breaks ends the iteration with its error; it is not resumed (a listing
// is not a snapshot that could be continued).
func (r *Region) Keys(ctx context.Context, opts ...Option) iter.Seq2[string, error] {
	return func(yield func(string, error) bool) {
		resp, err := r.c.do(ctx, &request{method: http.MethodGet, path: r.regionPath() + "/keys",
			query: collect(opts).query(), idempotent: true, stream: true})
		if err != nil {
			yield("", err)
			return
		}
		defer resp.stream.Close()
		dec := json.NewDecoder(resp.stream)
		if err := wire.OpenList(dec, "keys"); err != nil {
			yield("", &decodeError{what: "listing", err: err})
			return
		}
		for dec.More() {
			var k string
			if err := dec.Decode(&k); err != nil {
				yield("", &decodeError{what: "key listing", err: err})
				return
			}
			if !yield(k, nil) {
				return
			}
		}
		if err := wire.CloseList(dec); err != nil {
			yield("", &decodeError{what: "key listing", err: err})
		}
	}
}

// Values iterates over the region's values in ascending order of their
// keys, at most limit of them (0: all), as the member streams them (GET
// /kv/v1/{region}?limit=). Like Keys, a broken stream ends the iteration
// with its error.
func (r *Region) Values(ctx context.Context, limit int, opts ...Option) iter.Seq2[json.RawMessage, error] {
	return func(yield func(json.RawMessage, error) bool) {
		q := collect(opts).query()
		if q == nil {
			q = url.Values{}
		}
		if limit > 0 {
			q.Set("limit", strconv.Itoa(limit))
		} else {
			q.Set("limit", "ALL")
		}
		resp, err := r.c.do(ctx, &request{method: http.MethodGet, path: r.regionPath(), query: q, idempotent: true, stream: true})
		if err != nil {
			yield(nil, err)
			return
		}
		defer resp.stream.Close()
		dec := json.NewDecoder(resp.stream)
		if err := wire.OpenList(dec, r.name); err != nil {
			yield(nil, &decodeError{what: "listing", err: err})
			return
		}
		for dec.More() {
			var v json.RawMessage
			if err := dec.Decode(&v); err != nil {
				yield(nil, &decodeError{what: "listing", err: err})
				return
			}
			if !yield(v, nil) {
				return
			}
		}
		if err := wire.CloseList(dec); err != nil {
			yield(nil, &decodeError{what: "listing", err: err})
		}
	}
}
