package reload_test

import (
	"crypto/x509"
	"crypto/x509/pkix"
	"testing"

	"github.com/kvnode/kvnode/internal/reload"
)

// TestPeerNamesAllow: exact names and one-label wildcards match DNS names
// without regard to case or a trailing dot; a wildcard matches one label
// only; a wildcard certificate matches the same pattern only; the
// common name never counts; no names allow everything.
func TestPeerNamesAllow(t *testing.T) {
	peers, err := reload.ParsePeerNames([]string{"*.kvnode-peers.default.svc.cluster.local", "Seed.Example.com."})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		dns  []string
		cn   string
		want bool
	}{
		{[]string{"kvnode-0.kvnode-peers.default.svc.cluster.local"}, "", true},
		{[]string{"KVNODE-1.kvnode-peers.default.svc.cluster.local."}, "", true},
		{[]string{"kvnode.default.svc", "kvnode-2.kvnode-peers.default.svc.cluster.local"}, "", true},
		{[]string{"seed.example.com"}, "", true},
		{[]string{"a.b.kvnode-peers.default.svc.cluster.local"}, "", false},
		{[]string{"kvnode-peers.default.svc.cluster.local"}, "", false},
		// One wildcard certificate shared by the members: the same pattern.
		{[]string{"*.kvnode-peers.default.svc.cluster.local"}, "", true},
		{[]string{"*.default.svc.cluster.local"}, "", false},
		{[]string{"x.seed.example.com"}, "", false},
		{[]string{"billing.default.svc.cluster.local"}, "", false},
		{nil, "kvnode-0.kvnode-peers.default.svc.cluster.local", false},
		{nil, "", false},
	} {
		cert := &x509.Certificate{DNSNames: tc.dns, Subject: pkix.Name{CommonName: tc.cn}}
		if got := peers.Allow(cert); got != tc.want {
			t.Errorf("Allow(DNS %q, CN %q) = %v, want %v", tc.dns, tc.cn, got, tc.want)
		}
	}
	if !reload.PeerNames(nil).Allow(&x509.Certificate{}) {
		t.Error("no --peer-names refused a certificate; want every certificate of the CA allowed")
	}
}
