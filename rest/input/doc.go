// Package input turns what a REST client sends into checked values: the
// key list of a path, the values of query parameters, and the JSON bodies
// of writes (a multi-key PUT's array, a CAS pair), of a named query's run
// (its bind values) and of the management API (a region, an index in
// kvnode's or Geode's shape, a function deployment).
//
// Package rest reads the request (path unescaping, which parameter is
// present, Content-Type, the body size limit) and hands the strings and
// bytes it read to input; input decides what they mean and which are
// refused. Keeping the two apart keeps these rules testable as plain
// functions, without a server or a request.
//
// Its invariants:
//   - every refusal wraps region.ErrInvalid, so that rest answers it 400
//     through its one error table; input never chooses a status;
//   - a value a client sends is kept as the bytes it sent
//     (json.RawMessage, normalized by region.NormalizeValue only), never
//     decoded and re-encoded, so that member order, 10.0 and 2^63−1
//     survive;
//   - decoding is strict: an unknown member, a duplicate, or data after
//     the closing bracket is refused rather than ignored, because a client
//     whose setting is dropped silently must learn so.
//
// input is pure: no I/O, no state. It must not import Echo or net/http
// (reading requests is rest's), nor any kvnode package but region, whose
// validation and sentinel errors it uses (imports_test.go checks). Bind
// values are parsed here but bound by oql in rest: FuzzBindArgs checks the
// seam, that every value ParseBindArgs accepts binds or fails with
// oql.ErrBind.
package input
