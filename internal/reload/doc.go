// Package reload keeps a member's files in force while it serves: the TLS
// certificate and key, the CAs and the security file are re-read when they
// change on disk or when the operator asks (SIGHUP), and a file that does
// not load leaves the one before it in force.
//
// It owns two things:
//   - Watcher: files watched with fsnotify, through their DIRECTORIES, not
//     the files themselves. Kubernetes updates a secret volume by writing
//     a new timestamped directory and swapping the `..data` symlink
//     atomically, and editors replace a file by renaming a new one over
//     it; a watch on the file's inode would see neither (it follows the
//     old inode, or dies with it). Any event in a watched directory starts
//     a short quiet period (debounce, so one swap or one save is one
//     reload; bounded, so a directory that is never quiet, with a log
//     file in it, still gets its files read), after which every file is
//     read again and loaded only if its contents changed (SHA-256), so
//     unrelated files in the directory, or a save that changed nothing,
//     reload nothing. Each attempt is logged and reported to an Observer
//     (the node's metrics).
//   - TLS: the certificate, key and CA a member's TLS configurations read
//     at every handshake (tls.Config's GetCertificate, GetConfigForClient,
//     GetClientCertificate and VerifyConnection), so new connections
//     use what was loaded last without a restart, and connections already
//     open keep what they shook hands with. On the internal port it also
//     checks a peer's certificate names against --peer-names (PeerNames);
//     on the REST port, under --client-cert-auth, it requires a client
//     certificate of the clients' CA (ClientAuthConfig), whose common name
//     package rest then takes for the user.
//
// Peers are verified by their CA chain and, with PeerNames, by the DNS
// names (subject alternative names) of their certificate; never by the
// subject's common name, which Go's own verification stopped honouring
// in Go 1.15 and which a CA may not check at all: a certificate with no
// DNS name is refused when PeerNames are set. Host names are not checked
// against the address dialled, because members dial the addresses gossip
// advertises (often IPs that change as pods move).
//
// reload knows files, TLS and log/slog only: it imports no kvnode package,
// nor Raft, memberlist, Echo or Prometheus; package node wires it to the
// listeners, the security file and the metrics (imports_test.go checks
// this). Only node imports it.
package reload
