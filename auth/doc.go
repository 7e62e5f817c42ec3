// Package auth is kvnode's security model: the security file (users with
// bcrypt password hashes, roles with permissions), authentication of HTTP
// Basic credentials, and Geode's permissions RESOURCE:OPERATION[:REGION[:KEY]]
// with their implication rule. Package rest decides which permission each
// request needs and asks an Authenticator.
//
// bcrypt is slow on purpose (tens of milliseconds), too slow to pay on
// every request: a password that verified once is remembered as its
// SHA-256 for its user, and later requests compare that in constant time.
// Reloading the file forgets every remembered password.
package auth
