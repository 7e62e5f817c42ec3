// Package oqlspec holds the rows of ../shared/spec/oql.md as test data: a
// small dataset of orders (missing members, nulls, empty and null item
// lists) and, per feature, a query and its answer as the REST API writes
// it. Package oql runs them against the engine (whole and as merged
// partials), package rest through HTTP on both region kinds.
//
// oqlspec is test data: only tests import it, and it imports nothing of
// kvnode but region.
package oqlspec
