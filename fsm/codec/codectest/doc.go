// Package codectest holds what the tests of the command codec and of its
// users (the state machine, the store) compare results with: one rule for
// when two Results say the same thing to a caller.
//
// codectest is imported only by tests.
package codectest
