package fsm

import "github.com/kvnode/kvnode/fsm/history"

// Change streams. Every change Apply makes to an entry is also an event in
// the group's history (package history): decided by Apply like everything
// else, identical on every replica at the same positions, carried by
// snapshots. Watches read it through History, and start from a Freeze
// (its Position) when they want the current entries first.

// History is the group's change history. It is the same Log for the
// state machine's lifetime: Restore resets it, waking its readers.
func (f *FSM) History() *history.Log { return f.events }
