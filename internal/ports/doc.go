// Package ports finds TCP ports for tests whose servers stop and start
// again on the same port, as published container ports do.
//
// A port the kernel handed out with ":0" lies in its ephemeral range, from
// which it also picks the local port of every outgoing connection: while
// the server is down, any connection on the host (a busy CI machine has
// thousands) can take the port, and the restart fails with "address
// already in use". Docker's proxy binds 0.0.0.0, so a connection on any
// local address collides. Ports below the ephemeral range are handed out
// only to those who ask for them by number.
//
// ports is imported only by tests and imports nothing of kvnode.
package ports
