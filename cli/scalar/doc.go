// Package scalar is the command line's typed values, TYPE:VALUE (--bind
// int:5, --arg string:x): their checking, the API's JSON form of them
// ({"@type":"int","@value":"5"}), and their OQL literals, which kvnode
// query writes into an ad-hoc query's text since that endpoint takes no
// bind values. Its errors name the flag and the value; cli makes them the
// command line's fault (exit code 2).
//
// It is pure text: it must not import any package of kvnode, nor do I/O.
package scalar
