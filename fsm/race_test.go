//go:build race

package fsm

// raceEnabled: the tests run under the race detector, which slows them
// down several times; load tests size themselves down.
const raceEnabled = true
