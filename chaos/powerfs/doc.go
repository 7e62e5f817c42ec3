// Package powerfs is a pass-through file system that can lose power: it
// keeps track of what a program wrote but did not make durable, and on
// Cut it discards exactly that, leaving the files as a disk would hold
// them after a power failure. The chaos suite mounts one under every
// member's data directory so that its power-loss nemeses can cut a member
// the way a pulled plug does, not only kill its process.
//
// # The model
//
// Disk holds the model; Mount puts a FUSE file system (go-fuse's loopback
// node) in front of it. After Cut:
//
//   - A file holds the bytes and the size it had at its last fsync or
//     fdatasync (both count the same), or, if it has never been synced
//     since it was created, nothing: it is empty. Every write, truncate,
//     extension and hole punched since is undone. A file the FS found
//     when it was mounted counts as synced then.
//   - A directory lists the names it listed at its last fsync (or at the
//     mount), each naming the inode it named then; a directory created
//     since and never fsynced is empty. So a create, mkdir, link,
//     symlink, unlink, rmdir or rename is undone unless the directory it
//     changed was fsynced after it; a rename that replaced a file is
//     undone to the old file, with that file's durable content. A rename
//     between two directories changes each of them: fsyncing only the
//     source makes the name's removal durable (the file is then lost),
//     fsyncing only the target keeps it under both names (as hard links;
//     a directory only under the first name the walk from the root meets).
//   - Inodes no durable directory reaches are gone.
//   - Kept, beyond what was made durable: nothing. Ownership, modes,
//     timestamps and extended attributes are not modelled and stay as they
//     were last set.
//
// This is stricter than POSIX requires in one place and stricter than
// Linux file systems behave in several: ext4, XFS and btrfs make a newly
// created file's name durable when the file itself is fsynced, and ext4's
// journal commits every earlier namespace change with any fsync; here only
// an fsync of the directory does. Data is never torn inside a write, and
// writes are not reordered: a write either is before the last fsync of
// its file (kept) or after it (lost). LazyFS, which etcd's robustness
// tests use, models only the first rule (it buffers unsynced file data in
// its own page cache and passes namespace operations straight to the
// disk); this package also loses namespace changes, because a program
// that renames a temporary file over its state file without fsyncing the
// directory is a classic way to lose that state.
//
// # Design
//
// Writes go through to the backing directory, and the model keeps what it
// needs to undo them: for every file changed since its last fsync, its
// size then and the durable bytes overwritten since (saved just before the
// first write over them); for every directory changed since its last
// fsync, its entries then (name → inode number and kind). An inode that a
// durable directory still names but the live tree no longer does (it was
// unlinked or replaced) is moved to a limbo directory beside the tree
// instead of being deleted, and deleted once no durable directory names it.
// Cut then rebuilds the tree: it moves every inode into limbo, named by
// its inode number, rolls every file back, and renames inodes into place
// following the durable directories from the root (renames keep inode
// numbers, so this works on any ordinary backing file system).
//
// The other classic design, buffering unsynced writes in memory and
// overlaying them on reads, keeps the backing directory durable at all
// times but must serve every read, mmap included, through the overlay and
// needs a second namespace in memory. Write-through keeps reads plain
// pass-through (bbolt reads its file through mmap), costs memory only for
// overwritten durable bytes (an append-mostly log saves almost nothing),
// and its undo is applied only when power is cut.
//
// After a cut the kernel must not serve pages it cached before: Cut
// unmounts (the program using the mount must be dead), rolls back and
// mounts again, so the kernel starts from an empty cache.
//
// The real fsync is still made on the backing file, so a program on the
// mount pays what it would on disk; the model counts a sync from the
// moment it is asked for (a cut while it runs may keep or lose it, as a
// real power cut may).
package powerfs
