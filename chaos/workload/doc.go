// Package workload is the load a chaos run puts on kvnode's REST API:
// the clients whose history is checked, the ledger of acknowledged
// writes, and the watcher of the clients' keys.
//
// It owns:
//   - the clients (workload.go, Clients): concurrent clients doing the
//     model's operations (chaos/model's Kind, single- and multi-key, and
//     queries) on families of keys of one region, through package client
//     (half of them by single hop, half to the members in turn), every
//     answer recorded in a model.History; the client call of every
//     operation and the reading of every answer into the model's outputs
//     (Do, ValueJSON, ParseValue), and which failures mean the request
//     never took effect (IsRefused; a certified 503);
//   - the recorder (recorder.go): the clients' HTTP transport, which notes
//     the member that answered each operation and the status it sent;
//   - the ledger (ledger.go, Ledger): keys written once each, and the
//     check at the end that every acknowledged one is on every member;
//   - the watcher (watch.go, Watcher): client.Watch on the clients' keys,
//     which resumes on another member with Last-Event-ID whenever its
//     stream ends (a member killed, paused past the idle timeout, cut off,
//     an `error` event), recording every event, and each stream's member
//     and end, for model.CheckWatch.
//
// No raw HTTP path: every operation goes through package client, whose
// retries hide nothing the model must see once Do uses it as it does.
// Writes are never sent again once they may have been applied (the client
// never resends a put-if-absent, REPLACE, CAS or DELETE of unknown
// outcome, and PUT and put-all are sent with client.AtMostOnce): a put
// applied twice is not the one operation the history records, and the
// watcher would see its value twice. Reads are sent again freely: the
// operation's interval covers every try. The client's Watch delivers each
// stream's events as they came (it drops and repeats none when no initial
// entries are asked for), so the watcher's checks judge the members'
// streams; client.WatchOptions.OnStream gives it each stream's member, the
// token it resumed after, and why it ended.
//
// Why a package of its own: turning the model's operations into HTTP
// requests and the answers back into the model's outputs is one concern,
// tested on its own (the families' placement, the inputs drawn, the
// answers parsed); a run only starts it and reads what it recorded. It
// speaks to members only through package client and their URLs, and must
// not import kvnode's server packages (the API is reached over HTTP), nor
// chaos/backend, chaos/netproxy or chaos/powerfs: what runs the members is
// not its business (imports_test.go checks). It uses partition for the placement
// of keys in partition groups, which the API exposes. No build tag.
package workload
