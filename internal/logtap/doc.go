// Package logtap records what a test's nodes log, each record as one line
// of text ("node: message key=value ..."), so a test can wait for the line
// that proves something happened (an attempt was made and refused)
// instead of sleeping and hoping it did, or check what was logged.
//
// Only tests (and the test harness node/nodetest) import it.
package logtap
