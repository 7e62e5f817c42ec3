// Package rebalance moves buckets between partition groups while the
// cluster serves, and runs Geode's rebalance operation over those moves.
//
// A move of bucket b from group S to group T (Mover.Move) is driven from
// the control group's leader, every decision in a Raft log:
//
//  1. the partition table records the move (Moves: bucket, from, to, id);
//  2. T expects b (takes imports of it, serves none of it);
//  3. S's entries of b, read a page at a time at a linearizable point
//     while S still takes writes of b, are imported into T with their
//     deadlines, and after every page what S's change history names since
//     the page before (a delta answers the position it read up to, so the
//     history has to reach back one page's time);
//  4. S seals b (its writes are refused with ErrWrongGroup and go again
//     once the table changes; reads go on), and the keys of b that S's
//     change history names after the last delta are copied again as they
//     are now, or dropped at T when S has none: writes of b pause only for
//     this last pass. When the history no longer reaches back (or a region
//     was cleared, or too much changed), T drops its copy and b is copied
//     again, sealed;
//  5. the table marks the move switching; S releases b (drops it, and
//     answers the release's log index), T adopts it (owns it, and records
//     a fence in its history so that a watch delivers S's events of b
//     before T's);
//  6. the table makes T the owner and forgets the move.
//
// Every step is idempotent and names the move, so a step is simply sent
// again after an unknown outcome, and a late step of an abandoned move
// changes nothing. A move that fails before it switches is abandoned (T
// drops what it imported, S unseals); one that has switched is finished.
// A new control leader does the same with the moves it finds in the table
// (Mover.Resume). A client never sees a wrong answer: a write to S after
// the seal, or to either group during the switch, is refused before
// anything is applied and sent again to the owner the table names next.
//
// Before the first move every partition group's ownership is made
// explicit from the table (fsm's bucket init), and only once every member
// reads format 4 (fsm.FormatBuckets).
//
// rebalance reaches the store through interfaces (Store, Pages) that
// store.Router and regions.Parts implement, and must not import store,
// raftgroup, transport, reconcile, cluster, rest, memberlist or Echo.
package rebalance
