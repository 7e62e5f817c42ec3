//go:build !race

package fsm

// raceEnabled: see race_test.go.
const raceEnabled = false
