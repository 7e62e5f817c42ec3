// Package indexset keeps the secondary indexes of one region exact while
// its entries change, and builds new ones without stopping the writes.
//
// It owns:
//
//   - a region's set of indexes (Set): the installed ones, kept in step
//     with every write its owner reports (Put, Delete, Clear), and the ones
//     still being built, which do not exist for readers (Index reports them
//     missing, so a query scans instead and gets the same answer);
//   - reconciling the set with its definitions (Define): what is still
//     defined over the same path is kept, builds included, what is not goes
//     at once, so a reader never gets an index over another path than its
//     name's definition;
//   - the background builds: a build indexes an O(1) copy-on-write clone of
//     the entries with no lock held, records the keys written meanwhile,
//     and replays them under the owner's lock to install an index that is
//     exact (DESIGN.md has the argument); it holds the lock only for short
//     steps, so a million-entry build does not stall the owner's writes.
//
// It is a package of its own because it is the one part of the state
// machine that runs concurrently with it: its correctness argument (which
// writes a build must see, when it may install) is independent of what the
// commands mean, and it is tested here over a plain B-tree. Its owner,
// package fsm, keeps the contract (every write reported, Abandon when a
// region leaves its state) and decides when indexes are defined; package
// index is the index itself.
//
// indexset must not import fsm (or its codec), store, oql, cluster, rest,
// raft, memberlist or Echo (imports_test.go checks).
package indexset
