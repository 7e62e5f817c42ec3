// Package workload is the load a chaos run puts on kvnode's REST API:
// the clients whose history is checked, the ledger of acknowledged
// writes, and the watcher of the clients' keys.
//
// It owns:
//   - the clients (workload.go, Clients): concurrent clients doing the
//     model's operations (chaos/model's Kind, single- and multi-key, and
//     queries) on families of keys of one region, each through a member
//     picked at random, every answer recorded in a model.History; the
//     REST form of every operation and the reading of every answer
//     (ValueJSON, ParseValue), and which failures mean the request was
//     never sent (IsRefused);
//   - the ledger (ledger.go, Ledger): keys written once each, and the
//     check at the end that every acknowledged one is on every member;
//   - the watcher (watch.go, Watcher): a client of GET /kv/v1/watch on the
//     clients' keys that reads the Server-Sent Events, and whenever its
//     stream ends (a member killed, paused past the idle timeout, cut off,
//     an `error` event) resumes on another member with Last-Event-ID,
//     recording every event for model.CheckWatch.
//
// Why a package of its own: turning the model's operations into HTTP
// requests and the answers back into the model's outputs is one concern,
// tested on its own (the families' placement, the inputs drawn, the
// answers parsed); a run only starts it and reads what it recorded. It
// speaks to members only through their URLs, and must not import kvnode's
// server packages (the API is reached over HTTP), nor chaos/backend,
// chaos/netproxy or chaos/powerfs: what runs the members is not its
// business (imports_test.go checks). It uses partition for the placement
// of keys in partition groups, which the API exposes. No build tag.
package workload
