// Package netproxy is the network between the members of the chaos
// suite's process backend: TCP and UDP proxies on 127.0.0.0/8 in front of
// every member's member-to-member ports, which inject a fault into each
// direction of each link on demand.
//
// It owns:
//   - the fault table (Net, Set, Isolate, Heal): per direction of a link
//     between two members, Healthy, Blackhole (bytes held and released
//     intact on heal, like a silent firewall followed by TCP retransmits;
//     UDP dropped), Reset (connections closed, new ones refused) or Delay;
//   - the proxies (Proxy, Down, Up, Close): each member binds its own IP
//     and its outgoing connections leave from it, so a proxy knows which
//     member is calling; a dead member's proxies close, so that peers get
//     connection refused as from a dead host.
//
// Why a package of its own: a fault injector for links, with nothing of a
// cluster or a test run in it, that its own tests exercise on loopback in
// a second. It knows members only by index and IP. It uses the standard
// library alone and must not import anything of kvnode or of the rest of
// the chaos suite (imports_test.go checks the first): the process backend
// (chaos/backend) builds its clusters on it, not the other way round. No
// build tag.
package netproxy
