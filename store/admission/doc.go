// Package admission decides which members may enter a Raft
// configuration. Gossip tells who claims to be a member and where its
// internal port is, but anyone who reaches the gossip port can claim that
// (and, without --gossip-key, anyone can). So no member is added to the
// control group or to a partition group, nor has its recorded address
// moved, nor counts toward a bootstrap, on gossip's word alone: it must
// first have proved its identity over the internal port, at the address
// gossip gives for it.
//
// The proof is a challenge this member sends to the candidate's internal
// port (Checker). The candidate answers with its name and its advertised
// address (Identity.Answer), and:
//
//   - with mutual TLS on the internal port, the call itself is the proof:
//     the candidate takes part in a handshake in which it presents a
//     certificate that must chain to the CA in force and carry a name
//     --peer-names allows (package reload checks both), and it sees ours;
//   - with a gossip key, the answer also carries an HMAC-SHA256 under the
//     key over the challenge's nonce, the verifier's name and the
//     candidate's name and address, so it proves the key without showing
//     it, cannot be replayed to another verifier, and cannot be relayed
//     from a member at another address;
//   - with neither, the answer proves only that a kvnode that calls itself
//     by that name answers at that address (nothing stops a stranger: the
//     cluster is open, and the start log says so).
//
// The name and the address in the answer must be the ones gossip gives.
// A candidate whose proof fails is refused, with the reason (the
// handshake's error, a wrong name, a wrong proof), listed by
// /management/v1/cluster, counted in a metric and logged at most once a
// minute; it is checked again every RecheckEvery, so a member whose
// certificate is fixed joins without a restart. A candidate that cannot
// be reached is unverified, not refused: it may be starting. The
// reconcile loops also refuse, for a while, a member they removed for not
// catching up (Refuse).
//
// Every member checks the candidates it sees on its own, so that whichever
// member leads a group knows whom it may add, and every member's
// /management/v1/cluster shows the refusals.
//
// admission must not import store, raftgroup, reconcile, rest, memberlist
// or Echo; it reaches other members through a Caller (the store's RPC
// client over package transport).
package admission
