// Package auth is kvnode's security model: the security file (users with
// bcrypt password hashes, roles with permissions), authentication of HTTP
// Basic credentials or of a client certificate the listener verified
// (its common name is the user; Basic credentials win), and Geode's
// permissions RESOURCE:OPERATION[:REGION[:KEY]] with their implication
// rule. Package rest decides which permission each request needs and asks
// an Authenticator.
//
// bcrypt is slow on purpose (tens of milliseconds), too slow to pay on
// every request: a password that verified once is remembered as its
// SHA-256 for its user, and later requests compare that in constant time.
// Reloading the file forgets every remembered password.
//
// Failed logins are counted per client address (10 a minute, then 429
// until the minute is over) in a table of bounded size whose operations
// are O(1), so that a flood from many addresses can neither exhaust memory
// nor stall logins; limiter's doc says why it is an LRU and what an
// attacker with many addresses can and cannot do with it.
package auth
