// Package golden compares what a test produced with a golden file under
// the test's testdata, or rewrites the file when asked: the one way the
// tests pin an on-disk format (the command codec, snapshots). Each test
// package keeps its own -update flag and passes its value.
//
// golden is imported only by tests.
package golden
