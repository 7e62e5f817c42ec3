// Package jsonout owns the bytes of the REST API's JSON answers: response
// documents encoded without HTML escaping (the answers are JSON, not HTML:
// "<" in a cause reads as "<"), stored entry values written byte for byte
// (never decoded and re-encoded, so 10.0 stays 10.0), and keys written as
// encoding/json would write them, without an allocation for a plain key.
// Package rest writes its answers with it; a streamed listing and an answer
// built at once are byte for byte the same because both use these.
//
// jsonout must not import Echo, net/http, raft, memberlist or any kvnode
// package but region (the entry type).
package jsonout
