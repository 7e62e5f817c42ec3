// Package scalar is the command line's typed values, TYPE:VALUE (--bind
// int:5, --arg string:x): their checking, so that a typo is the command
// line's fault (exit code 2) rather than a query's failure on the server,
// and their API form ({"@type":"int","@value":"5"}), which cli hands to
// package client (which writes an ad-hoc query's bind values into its
// text as OQL literals). Its errors name the flag and the value.
//
// It is pure text: it must not import any package of kvnode, nor do I/O.
package scalar
