// Package oql is kvnode's query engine for Geode's Object Query Language,
// following ../shared/spec/oql.md (the contract): a hand-written lexer and
// recursive-descent parser, an AST that prints back to OQL, a compiler that
// resolves names and turns expressions into closures, and an evaluator over
// a small Source interface. It is pure: no cluster, Raft or HTTP imports.
//
// Values stay close to the stored JSON. A stored object is an Object over
// its JSON text and a member is read only when a query asks for it (with
// tidwall/gjson), so a predicate over one member of 100,000 entries never
// decodes the rest of them. JSON numbers keep their kind: an integer is an
// int64, a number with a fraction or exponent a float64, so integer
// division truncates as in Geode.
//
// Execution is split so that partitioned regions can be queried where their
// data lives: ExecutePartial runs WHERE, the projection, DISTINCT and a
// per-share ORDER BY/LIMIT or partial aggregation over one share of the
// first FROM region, and Merge combines the shares (ORDER BY, LIMIT,
// DISTINCT, COUNT/SUM/AVG/MIN/MAX, GROUP BY). Execute is both over all the
// data at once. Partials encode for the wire (EncodePartial).
//
// Continuous queries (NewCQ, for watches) test one entry at a time with the
// same compiled WHERE: an entry matches iff the query over a region holding
// only that entry would return it. So a CQ is SELECT * (or its one iterator
// variable) over /r, /r.values, /r.keySet or /r.entrySet (e.key, e.value:
// key predicates), and NewCQ refuses, wrapping ErrNotContinuous, what needs
// other rows or other data: joins, DISTINCT, aggregates, GROUP BY, ORDER BY,
// LIMIT, other projections, and any region read in WHERE (a subquery over
// an entry's own members is fine).
//
// Decisions where oql.md leaves a choice:
//   - Parse checks syntax only, as Geode does when a named query is
//     stored; names, GROUP BY rules and aggregate placement are checked when
//     the query is first run (Check), and every such error is a 500 there.
//   - TYPE hints and IMPORT are accepted and ignored: JSON data has no Java
//     classes to check them against.
//   - Sorting values of different kinds (which Geode cannot do) orders them
//     by kind instead of failing.
//   - MIN/MAX compare numbers numerically across kinds (oql.md says not to
//     copy Geode's per-class comparison).
//   - UNDEFINED in a result is written as null; a struct field name that a
//     projection cannot give gets field$N, N its 1-based position.
package oql
