// Package sse reads a Server-Sent Events stream (the WHATWG HTML
// standard's "text/event-stream" format) into events, as a browser's
// EventSource parses it: lines ending in CRLF, LF or CR, comments, data
// spread over several lines, the last event ID kept across events and
// updated by an id line even in a block that dispatches nothing (a
// keep-alive), and the server's retry hint.
//
// It is a reader of the wire format only: what to do with an event, and
// when and where to reconnect, belongs to its caller (cli's watch). It
// owns one thing so that the parsing rules can be tested on their own.
//
// It must not import any kvnode package (imports_test.go checks): it is
// a format, nothing of the server or of the client commands.
package sse
