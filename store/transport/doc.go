// Package transport is the internal port of a kvnode member: one TCP (or
// mutual-TLS) listener that carries every Raft group's connections and the
// node-to-node RPC, and the client side of both.
//
// It owns:
//   - the stream multiplexing (Mux): each connection starts with a short
//     header naming a Raft group (and the member it is meant for) or the
//     RPC server, so one port serves every group; RaftLayer is a group's
//     raft.StreamLayer over it;
//   - the RPC framing: HTTP/1.1 with the caller's deadline in a header,
//     answers read whole up to the frame limit and refused beyond it,
//     never cut (ReadFrame, FrameLimit);
//   - the error codec: refusals carry a code that turns back into the
//     same sentinel error on the caller's side (Codes, RemoteError), and
//     ErrUnreachable marks calls that certainly never reached the peer.
//
// What the RPCs mean (routes, bodies, which errors are retried) is the
// store's. transport must not import store, fsm, oql, cluster or rest; it
// speaks only region's sentinel vocabulary (imports_test.go checks).
package transport
