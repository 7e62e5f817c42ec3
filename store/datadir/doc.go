// Package datadir owns a member's data directory on disk: its layout (who
// owns it, where each Raft group lives), its small state files and the
// rules that make them survive a power cut.
//
// The state files, node-name and each partition group's group.json, are
// written with internal/durable (temporary file, fsync, rename, fsync of
// the directory), so a crash leaves each either as it was or complete.
// They are read strictly: a missing, empty, truncated or unparsable one,
// or one that holds what it should not, is ErrDamaged naming the file and
// what to do — a member that guessed instead would run under a wrong Raft
// identity or with the wrong number of partition groups. A partition
// group's dir is deleted by a durable rename first (Drop), so a crash
// never leaves half a group dir.
//
// The dir records its format version (format): a member refuses a dir
// of a newer format than its own, with a clear error, and records its own
// over an older one, which it reads (downgrade is not supported, upgrade
// is in place).
//
// The store opens groups in the dirs named here; tools that work on a
// stopped member's data (backup, restore, recovery) read the same layout.
// datadir must not import store, fsm, raft or anything above them.
package datadir
