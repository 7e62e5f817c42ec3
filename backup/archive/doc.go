// Package archive is the format of a kvnode backup: one file holding a
// manifest (what the backup contains) and the state-machine snapshot of
// every Raft group, covered by one SHA-256 checksum.
//
// The layout, version 1 (all integers big endian):
//
//	"KVBACKUP" | version (1 byte)
//	'M' | uint64 length | the manifest, JSON (Manifest), exactly once, first
//	'G' | uint64 length | uint64 group ID | the group's fsm snapshot stream
//	...   one 'G' section per group, in the manifest's order
//	'E' | SHA-256 of every byte before it, 'E' included
//	end of file
//
// Why not tar (manifest.json first, a checksum file last)? A reader must
// refuse an archive with any byte flipped, before anything is restored.
// tar leaves bytes that no checksum covers: the padding of the last
// member, the trailing zero blocks, the unused tail after them. Here every
// byte is either covered by the checksum or is the checksum, and the file
// must end right after it, so one flipped byte anywhere, or any
// truncation, is refused (Verify); the table tests flip every byte. The
// framing is a few dozen lines, and the manifest is plain JSON an operator
// can read with `kvnode restore --verify-only` (or `head -c`).
//
// The format carries its version; a reader refuses versions it does not
// know, naming them, so that a backup is never half-understood.
//
// archive imports nothing of kvnode and nothing outside the standard
// library: the snapshots it carries are opaque bytes here (package fsm
// reads them).
package archive
