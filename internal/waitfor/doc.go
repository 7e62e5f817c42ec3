// Package waitfor is the one way kvnode's tests wait for a condition:
// poll it, and fail the test naming what was awaited when it does not
// hold in time. Tests of every kind use it (unit, in-process clusters,
// real processes, containers), so it polls with a backoff: 10 ms at first,
// for conditions that come quickly, growing to 250 ms, so that a long wait
// on containers or processes does not busy the machine it measures.
//
// Only tests import it (imports_test.go checks).
package waitfor
