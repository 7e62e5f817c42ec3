// Package durable writes the node's small state files (the data dir's
// node-name, a partition group's group.json) and creates its directories
// so that they survive a crash or power cut at any moment: afterwards a
// file holds its old complete content or its new complete content, never
// an empty or partial one, and once WriteFile or MkdirAll has returned,
// the change is on disk.
//
// A rename alone is atomic for running processes, not for the disk: the
// kernel may write the new directory entry before the file's data, so
// that after a power cut the name points at an empty file, or may not
// write the directory entry at all, so that a file the node relied on is
// missing. WriteFile therefore writes a temporary file in the same
// directory, fsyncs it, closes it, renames it over the target and fsyncs
// the directory, in that order; MkdirAll fsyncs the parent of every
// directory it creates.
//
// A crash between writing the temporary file and the rename leaves
// "<name>.tmp" beside the target, which still holds its old content (or
// does not exist): ReadFile removes it. Checking what a file holds is the
// caller's business: this package only gets the bytes there and back.
package durable
