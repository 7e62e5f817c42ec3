// Package watch owns the answer of GET /kv/v1/watch: a region's changes
// streamed to a client as Server-Sent Events (docs: README's "Watching
// changes", the OpenAPI document). It reads the request's parameters,
// opens a region.Watch through its Source, turns each batch of events into
// SSE blocks (filtered by keys, a prefix or a continuous query), and ends
// the stream with an error or end event when the watch is over.
//
// It is plain net/http (http.ResponseWriter, *http.Request,
// http.ResponseController): package rest registers the route and wraps
// Handler.Serve, so that rest stays the only importer of Echo. It declares
// what it calls: Source (the data API's Watch), Queries (named queries'
// text), Compiler (OQL text into a continuous query's Matcher; the real one
// is oql's, adapted by rest) and Observer (its metrics, implemented by
// package metrics). It must not import raft, memberlist, store, fsm,
// Echo or package rest.
//
// Decisions worth knowing:
//
//   - Errors found before the first byte (a bad parameter, a region or
//     named query not found, no permission, a token older than the history,
//     too many watchers) are returned by Serve for rest's one error table to
//     answer as JSON; only the 410 is written here, because its body carries
//     oldestToken. Once the 200 is sent, the stream ends with an event.
//   - Every write to the connection is preceded by a write deadline
//     (Config.WriteTimeout, 10 s): a client that stops reading (its TCP
//     window full) would otherwise block the writing goroutine, and the
//     watch's buffer with it, for as long as the connection lives. Past it
//     the write fails and the watch is released. The server's own
//     ReadTimeout is lifted for the stream, because net/http cancels a
//     request's context when the connection's read deadline passes.
//   - One batch from Next is one flush, not one per event: under load the
//     events of a batch travel in as few packets as the socket allows.
//   - Keep-alive: when Next has given nothing for Config.KeepAlive (15 s),
//     or only events the filters dropped, the stream carries a comment and
//     the current token (id:), so proxies keep it open and a reconnect
//     resumes from there. Next is called with a context that ends at the
//     keep-alive; a Watch treats its context's end as "nothing yet", not
//     as the end of the watch.
//   - Initial entries (?initial=true) are written as the store hands them
//     over, not gathered first: a region's size never becomes the member's
//     memory. They carry no id: a position inside a listing cannot be
//     resumed, so a client cut off before ready starts over. With a
//     resume token (from, Last-Event-ID) initial is ignored: a browser that
//     reconnects resends the URL it opened, initial=true included, and has
//     seen the entries already.
//   - A continuous query turns a change into what it means for the query's
//     result: create when an entry starts to match, update while it keeps
//     matching, destroy when it stops matching, is destroyed or expires.
//     An entry the query cannot evaluate (Matcher's error) does not match,
//     as a WHERE that is UNDEFINED selects nothing in OQL; ending the
//     watch instead would end it again at every reconnect.
//   - Config.MaxWatchers is a member-wide count of open watches; past it a
//     watch is refused at once (503 with Retry-After), never queued.
//   - Shutdown ends every stream with an error event carrying the token, so
//     that clients resume on another member at once rather than wait for
//     the connection to drop, and http.Server.Shutdown is not held up by
//     streams that never end on their own.
package watch
