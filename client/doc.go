// Package client is kvnode's Go client: the whole REST API of
// docs/spec/rest-api.md and the management API, from a Go program.
//
//	c, err := client.New(client.Config{Endpoints: []string{"http://localhost:8080"}})
//	if err != nil { ... }
//	defer c.Close()
//	orders := c.Region("orders")
//	err = orders.Put(ctx, "1", map[string]any{"@type": "Order", "total": 12})
//	v, err := orders.Get(ctx, "1")
//
// # Stability
//
// The package is a stable API: what is exported stays, with the meaning
// documented here, across kvnode's releases; new methods and new Config
// fields may be added. It depends on the standard library only.
//
// # Values
//
// Entry values are JSON objects. A value given as json.RawMessage or
// []byte is sent as it is; any other value is encoded with encoding/json.
// Values read come back as json.RawMessage, byte for byte as stored.
//
// # Errors
//
// Every error of an answer is an *Error carrying the HTTP status and the
// API's message; errors.Is tells the kinds a program acts on: ErrNotFound,
// ErrConflict (the *Error's Current holds the value a put-if-absent or a
// compare-and-set found), ErrUnauthorized, ErrForbidden, ErrInvalid,
// ErrUnavailable, and ErrOutcomeUnknown: a write that may or may not have
// been applied.
//
// # Retries
//
// A request is sent again, to another member, only when it cannot have
// been applied (the connection was refused, or the member answered 503 and
// certified that nothing was written) or when sending it twice is harmless
// (reads, puts, listings). A put-if-absent, a replace, a compare-and-set, a
// delete or a function call whose outcome is unknown is never sent again:
// it fails with ErrOutcomeUnknown, and the program decides (puts too, with
// AtMostOnce). A member that
// cannot be reached is skipped for a while (Config.SkipFor), then tried
// again.
//
// # Single hop
//
// Every write of a key goes through the leader of the key's Raft group,
// and so does a linearizable read. The client reads the routing document
// (GET /management/v1/routing: the partition table's owner of each bucket
// and each group's leader), hashes each key as the members do, and sends
// the request straight to that leader, saving the member that would
// otherwise forward it. A member that had to forward it anyway says so,
// and the client reads the document again. Without CLUSTER:READ, or with
// Config.DisableSingleHop, requests go to the members in turn; answers are
// the same either way.
package client
