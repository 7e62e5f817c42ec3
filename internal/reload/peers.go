package reload

import (
	"crypto/x509"
	"fmt"
	"strings"
)

// PeerNames are the names a certificate must carry to take part on the
// internal port (--peer-names): DNS names, or patterns whose leftmost
// label is "*", matching exactly one label as in RFC 6125's wildcards
// (*.kvnode-peers.default.svc.cluster.local matches
// kvnode-0.kvnode-peers.default.svc.cluster.local, not
// a.b.kvnode-peers.default.svc.cluster.local nor the bare suffix). Names
// compare without regard to case. Empty PeerNames allow every certificate
// the CA signed.
//
// A certificate is matched by its DNS subject alternative names only:
// never by its subject's common name (free text that Go stopped honouring
// as a host name in Go 1.15 and that a CA may not check), nor by its IP
// addresses (members move between IPs). One matching name is enough.
type PeerNames []string

// ParsePeerNames checks and normalises the names and patterns of
// --peer-names.
func ParsePeerNames(list []string) (PeerNames, error) {
	out := make(PeerNames, 0, len(list))
	for _, raw := range list {
		name := strings.TrimSuffix(strings.ToLower(strings.TrimSpace(raw)), ".")
		if err := checkPattern(name); err != nil {
			return nil, fmt.Errorf("--peer-names %q: %w", raw, err)
		}
		out = append(out, name)
	}
	return out, nil
}

// checkPattern refuses what cannot be a DNS name or a one-label wildcard
// over one.
func checkPattern(name string) error {
	if name == "" {
		return fmt.Errorf("empty name")
	}
	labels := strings.Split(name, ".")
	for i, l := range labels {
		switch {
		case l == "*" && i == 0:
			if len(labels) < 3 {
				return fmt.Errorf("a wildcard needs at least two labels after it (*.example.com), or it allows nearly any certificate")
			}
		case l == "" || len(l) > 63:
			return fmt.Errorf("label %q: want 1 to 63 characters", l)
		default:
			for _, c := range l {
				if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-' || c == '_') {
					return fmt.Errorf("label %q: want letters, digits, '-' and '_' (and '*' only as the whole leftmost label)", l)
				}
			}
		}
	}
	return nil
}

// Allow reports whether cert may take part: p is empty, or one of the
// certificate's DNS names matches one of p's.
func (p PeerNames) Allow(cert *x509.Certificate) bool {
	if len(p) == 0 {
		return true
	}
	for _, dns := range cert.DNSNames {
		dns = strings.TrimSuffix(strings.ToLower(dns), ".")
		for _, pat := range p {
			if matchName(pat, dns) {
				return true
			}
		}
	}
	return false
}

// matchName matches a normalised pattern against a normalised DNS name.
// A wildcard in the certificate's name is not expanded: a certificate
// for *.example.com matches the pattern *.example.com only.
func matchName(pattern, name string) bool {
	if pattern == name {
		return true
	}
	suffix, ok := strings.CutPrefix(pattern, "*")
	if !ok {
		return false
	}
	first, rest, ok := strings.Cut(name, ".")
	return ok && first != "" && first != "*" && "."+rest == suffix
}
