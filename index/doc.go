// Package index is kvnode's secondary index: an ordered map from the value
// of one member path of a region's JSON entries (customerId, address.city)
// to the keys of the entries holding it. Each replica keeps its own,
// derived from its entries, so indexes are never replicated or
// snapshotted; package fsm maintains them as entries change (its
// fsm/indexset builds them and keeps them exact) and package oql's planner
// scans them for =, <, <=, >, >=, IN SET(...) and prefix LIKE.
//
// Keys order as OQL compares values: numbers numerically across integer
// and floating-point kinds, strings as Java's String.compareTo (UTF-16
// code units), booleans false before true; values of different kinds
// order by kind (booleans, numbers, strings) and never compare equal.
// Only scalars are indexed: an entry whose member is absent, null, an
// object or an array is not in the index, which is exactly the set of
// entries no indexable predicate with a non-null operand can match.
//
// It is a package of its own, beside the packages design.md §3 lists,
// because two of them need it and must not import each other's worlds:
// fsm maintains indexes and oql plans with their order, and oql must not
// import fsm.
package index
