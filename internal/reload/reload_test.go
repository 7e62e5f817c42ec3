package reload_test

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kvnode/kvnode/internal/logtap"
	"github.com/kvnode/kvnode/internal/reload"
	"github.com/kvnode/kvnode/internal/waitfor"
	"github.com/kvnode/kvnode/node/nodetest"
)

// observer counts what a Watcher and a TLS report.
type observer struct {
	mu            sync.Mutex
	ok, fail      map[string]int
	refused       map[string]int
	clientRefused int
}

func newObserver() *observer {
	return &observer{ok: map[string]int{}, fail: map[string]int{}, refused: map[string]int{}}
}

func (o *observer) Reloaded(file string, err error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if err != nil {
		o.fail[file]++
	} else {
		o.ok[file]++
	}
}

func (o *observer) PeerRefused(reason string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.refused[reason]++
}

func (o *observer) ClientRefused() {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.clientRefused++
}

func (o *observer) clientRefusals() int {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.clientRefused
}

func (o *observer) counts(file string) (ok, fail int) {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.ok[file], o.fail[file]
}

func (o *observer) refusals(reason string) int {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.refused[reason]
}

// issue returns the PEM certificate and key of a fresh certificate from
// ca with DNS names dns.
func issue(t *testing.T, ca *nodetest.CA, dns ...string) (certPEM, keyPEM []byte) {
	t.Helper()
	dir := t.TempDir()
	certPath, keyPath := ca.IssueNames(t, dir, "n", dns...)
	certPEM, err := os.ReadFile(certPath)
	if err != nil {
		t.Fatal(err)
	}
	keyPEM, err = os.ReadFile(keyPath)
	if err != nil {
		t.Fatal(err)
	}
	return certPEM, keyPEM
}

// issueCN returns a certificate from ca whose subject's common name is cn
// and that has no DNS name.
func issueCN(t *testing.T, ca *nodetest.CA, cn string) (certPEM, keyPEM []byte) {
	t.Helper()
	certPath, keyPath := ca.IssueNames(t, t.TempDir(), cn)
	certPEM, err := os.ReadFile(certPath)
	if err != nil {
		t.Fatal(err)
	}
	keyPEM, err = os.ReadFile(keyPath)
	if err != nil {
		t.Fatal(err)
	}
	return certPEM, keyPEM
}

// serial is the serial number of a PEM certificate.
func serial(t *testing.T, certPEM []byte) string {
	t.Helper()
	block, _ := pem.Decode(certPEM)
	c, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	return c.SerialNumber.Text(16)
}

// serve serves TLS with cfg on loopback; every accepted connection's
// handshake error (nil when it succeeded) goes to the channel.
func serve(t *testing.T, cfg *tls.Config) (addr string, handshakes <-chan error) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ln.Close() })
	ch := make(chan error, 100)
	go func() {
		for {
			conn, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer conn.Close()
				tc := tls.Server(conn, cfg)
				ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
				defer cancel()
				err := tc.HandshakeContext(ctx)
				select {
				case ch <- err:
				default:
				}
				if err == nil {
					_, _ = tc.Write([]byte("ok"))
				}
			}()
		}
	}()
	return ln.Addr().String(), ch
}

// presented is the serial of the certificate a new connection to addr
// is shown.
func presented(t *testing.T, addr string, pool *x509.CertPool) string {
	t.Helper()
	conn, err := tls.DialWithDialer(&net.Dialer{Timeout: 5 * time.Second}, "tcp", addr, &tls.Config{RootCAs: pool, ServerName: "localhost"})
	if err != nil {
		t.Fatalf("dial %s: %v", addr, err)
	}
	defer conn.Close()
	return conn.ConnectionState().PeerCertificates[0].SerialNumber.Text(16)
}

// TestCertificateRotationBySymlinkSwap: a certificate and key in a
// Kubernetes-style secret volume are replaced by a ..data swap; the next
// TLS connection is shown the new certificate, without a restart, while
// a connection opened before keeps working.
func TestCertificateRotationBySymlinkSwap(t *testing.T) {
	ca := nodetest.NewCA(t, "test CA")
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(ca.PEM)
	vol := nodetest.NewSecretVolume(t)
	cert1, key1 := issue(t, ca, "localhost")
	vol.Update(map[string][]byte{"tls.crt": cert1, "tls.key": key1})

	obs := newObserver()
	material := reload.NewTLS(nil, nil, obs)
	w := reload.NewWatcher(reload.Options{Observer: obs, Debounce: 50 * time.Millisecond})
	t.Cleanup(func() { _ = w.Close() })
	if err := w.Add(reload.File{Name: "tls", Title: "TLS certificate and key",
		Paths: []string{vol.Path("tls.crt"), vol.Path("tls.key")}, Load: material.LoadCertificate}); err != nil {
		t.Fatal(err)
	}
	w.Start()
	addr, _ := serve(t, material.ServerConfig())
	if got, want := presented(t, addr, pool), serial(t, cert1); got != want {
		t.Fatalf("before the rotation: serial %s, want %s", got, want)
	}
	before, err := tls.Dial("tcp", addr, &tls.Config{RootCAs: pool, ServerName: "localhost"})
	if err != nil {
		t.Fatal(err)
	}
	defer before.Close()

	cert2, key2 := issue(t, ca, "localhost")
	vol.Update(map[string][]byte{"tls.crt": cert2, "tls.key": key2})
	start := time.Now()
	want := serial(t, cert2)
	waitfor.Cond(t, 5*time.Second, "a new connection to be shown the new certificate", func() bool {
		return presented(t, addr, pool) == want
	})
	t.Logf("the new certificate was served %v after the ..data swap (debounce 50ms)", time.Since(start).Round(time.Millisecond))
	if ok, fail := obs.counts("tls"); ok != 2 || fail != 0 {
		t.Errorf("loads: %d ok, %d failed; want 2 ok (start and rotation), 0 failed", ok, fail)
	}
	buf := make([]byte, 2)
	if _, err := before.Read(buf); err != nil || string(buf) != "ok" {
		t.Errorf("the connection opened before the rotation: %q, %v", buf, err)
	}
}

// TestBadFilesKeepTheOldOne: a key that does not match its certificate,
// an empty certificate, a missing key and a CA file without a certificate
// are each refused, logged (never the key) and counted, and the previous
// material stays in force; a good file after them is taken.
func TestBadFilesKeepTheOldOne(t *testing.T) {
	ca := nodetest.NewCA(t, "test CA")
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(ca.PEM)
	dir := t.TempDir()
	certPath, keyPath, caPath := filepath.Join(dir, "tls.crt"), filepath.Join(dir, "tls.key"), filepath.Join(dir, "ca.crt")
	// replace writes a file as editors do: a new file renamed over the old.
	replace := func(path string, b []byte) {
		t.Helper()
		if err := os.WriteFile(path+".tmp", b, 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(path+".tmp", path); err != nil {
			t.Fatal(err)
		}
	}
	cert1, key1 := issue(t, ca, "localhost")
	replace(certPath, cert1)
	replace(keyPath, key1)
	replace(caPath, ca.PEM)

	tap := &logtap.Tap{}
	obs := newObserver()
	material := reload.NewTLS(nil, nil, obs)
	w := reload.NewWatcher(reload.Options{Observer: obs, Logger: tap.Logger("n", nil), Debounce: 50 * time.Millisecond})
	t.Cleanup(func() { _ = w.Close() })
	if err := w.Add(reload.File{Name: "tls", Title: "TLS certificate and key", Paths: []string{certPath, keyPath}, Load: material.LoadCertificate}); err != nil {
		t.Fatal(err)
	}
	if err := w.Add(reload.File{Name: "ca", Title: "CA", Paths: []string{caPath}, Load: material.LoadCA}); err != nil {
		t.Fatal(err)
	}
	w.Start()
	addr, _ := serve(t, material.ServerConfig())
	want := serial(t, cert1)

	cert2, key2 := issue(t, ca, "localhost")
	_, otherKey := issue(t, ca, "localhost")
	// One change at a time, each refused: the counts say which was seen.
	steps := []struct {
		what  string
		file  string
		fails int
		apply func()
		log   string
	}{
		{"a key that does not match the certificate", "tls", 1, func() { replace(keyPath, otherKey) }, "does not match"},
		{"an empty certificate", "tls", 2, func() { replace(certPath, nil) }, "failed to find any PEM data"},
		{"a missing key", "tls", 3, func() { _ = os.Remove(keyPath) }, "no such file"},
		{"a CA file with no certificate", "ca", 1, func() { replace(caPath, []byte("not a certificate\n")) }, "no PEM certificate"},
	}
	for _, s := range steps {
		s.apply()
		waitfor.Cond(t, 5*time.Second, s.what+" to be refused", func() bool {
			_, fail := obs.counts(s.file)
			return fail == s.fails
		})
		if !tap.Seen("n", "the previous one stays in force", s.log) {
			t.Errorf("%s: no error log saying why (%q) and that the old one stays: %q", s.what, s.log, tap.Matching("failed"))
		}
		if got := presented(t, addr, pool); got != want {
			t.Errorf("after %s a new connection is shown serial %s, want the old %s", s.what, got, want)
		}
	}
	for _, l := range tap.Matching("") {
		if strings.Contains(l, "PRIVATE KEY") || strings.Contains(l, string(otherKey[40:80])) {
			t.Fatalf("a log line quotes a key: %s", l)
		}
	}
	// The CA in force is still the good one: a peer it signed is let in.
	srvAddr, handshakes := serve(t, material.InternalServerConfig())
	client := reload.NewTLS(nil, nil, nil)
	if _, err := client.LoadCertificate([][]byte{cert1, key1}); err != nil {
		t.Fatal(err)
	}
	if _, err := client.LoadCA([][]byte{ca.PEM}); err != nil {
		t.Fatal(err)
	}
	if err := handshake(t, srvAddr, handshakes, client.InternalClientConfig()); err != nil {
		t.Errorf("a peer of the CA in force after a bad CA file: %v", err)
	}

	// Good files again: taken (the first alone may be refused, with the
	// missing key).
	replace(certPath, cert2)
	replace(keyPath, key2)
	want = serial(t, cert2)
	waitfor.Cond(t, 5*time.Second, "the fixed files to be taken", func() bool { return presented(t, addr, pool) == want })
	if !tap.Seen("n", "TLS certificate and key reloaded", "serial="+want) {
		t.Errorf("no info log of the reload with the new serial: %q", tap.Matching("reloaded"))
	}
}

// TestReloadComparesContents: an unchanged file is not loaded again
// unless forced (SIGHUP's path), and a bad file is reported once, not at
// every event in its directory.
func TestReloadComparesContents(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "security.json")
	if err := os.WriteFile(path, []byte("v1"), 0o600); err != nil {
		t.Fatal(err)
	}
	obs := newObserver()
	var loaded []string
	w := reload.NewWatcher(reload.Options{Observer: obs})
	err := w.Add(reload.File{Name: "security", Title: "security file", Paths: []string{path}, Load: func(c [][]byte) ([]slog.Attr, error) {
		if string(c[0]) == "bad" {
			return nil, errors.New("bad file")
		}
		loaded = append(loaded, string(c[0]))
		return nil, nil
	}})
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Reload(false); err != nil || len(loaded) != 1 {
		t.Fatalf("unchanged, not forced: %v, loads %q; want one (the start's)", err, loaded)
	}
	if err := w.Reload(true); err != nil || len(loaded) != 2 {
		t.Fatalf("unchanged, forced: %v, loads %q; want two", err, loaded)
	}
	_ = os.WriteFile(path, []byte("bad"), 0o600)
	if err := w.Reload(false); err == nil || !strings.Contains(err.Error(), "bad file") {
		t.Fatalf("a bad file: %v, want its refusal", err)
	}
	if err := w.Reload(false); err != nil {
		t.Fatalf("the same bad file again: %v, want it not tried again", err)
	}
	if _, fail := obs.counts("security"); fail != 1 {
		t.Errorf("failures counted: %d, want 1", fail)
	}
	if err := w.Reload(true); err == nil {
		t.Error("the same bad file, forced: nil error, want its refusal")
	}
	_ = os.WriteFile(path, []byte("v2"), 0o600)
	if err := w.Reload(false); err != nil || loaded[len(loaded)-1] != "v2" {
		t.Errorf("a good file after the bad: %v, loads %q", err, loaded)
	}
}

// TestAddRefusesBadFiles: a file that does not load at start is an error
// naming it, and is not watched.
func TestAddRefusesBadFiles(t *testing.T) {
	dir := t.TempDir()
	material := reload.NewTLS(nil, nil, nil)
	w := reload.NewWatcher(reload.Options{})
	err := w.Add(reload.File{Name: "tls", Paths: []string{filepath.Join(dir, "none.crt"), filepath.Join(dir, "none.key")}, Load: material.LoadCertificate})
	if err == nil || !strings.Contains(err.Error(), "none.crt") {
		t.Errorf("missing files: %v, want an error naming them", err)
	}
	empty := filepath.Join(dir, "empty.pem")
	_ = os.WriteFile(empty, nil, 0o600)
	if err := w.Add(reload.File{Name: "ca", Paths: []string{empty}, Load: material.LoadCA}); err == nil || !strings.Contains(err.Error(), "no PEM certificate") {
		t.Errorf("an empty CA: %v, want a refusal", err)
	}
}

// handshake dials addr with client (an internal-port configuration) and
// returns the server's verdict on the handshake (in TLS 1.3 a client
// learns of the refusal of its certificate only when it reads).
func handshake(t *testing.T, addr string, verdicts <-chan error, client *tls.Config) error {
	t.Helper()
	conn, err := tls.DialWithDialer(&net.Dialer{Timeout: 5 * time.Second}, "tcp", addr, client)
	if err != nil {
		// This side refused the server, or the server refused us early.
		select {
		case serverErr := <-verdicts:
			return errors.Join(err, serverErr)
		case <-time.After(5 * time.Second):
			return err
		}
	}
	defer conn.Close()
	select {
	case err := <-verdicts:
		return err
	case <-time.After(5 * time.Second):
		t.Fatal("the server reported no handshake")
		return nil
	}
}

// TestPeerNamesOnTheInternalPort: with PeerNames, the internal port lets
// in a certificate of the CA that carries an allowed DNS name, refuses one
// of the same CA for another name (and one with the name only in its
// common name) at the handshake, logging the names offered, and refuses
// one of another CA; the dialling side checks the server the same way.
func TestPeerNamesOnTheInternalPort(t *testing.T) {
	ca := nodetest.NewCA(t, "cluster CA")
	other := nodetest.NewCA(t, "another CA")
	peers, err := reload.ParsePeerNames([]string{"*.kvnode-peers.default.svc.cluster.local"})
	if err != nil {
		t.Fatal(err)
	}
	tap := &logtap.Tap{}
	obs := newObserver()
	material := func(signer *nodetest.CA, dns ...string) *reload.TLS {
		m := reload.NewTLS(peers, tap.Logger("n", nil), obs)
		c, k := issue(t, signer, dns...)
		if _, err := m.LoadCertificate([][]byte{c, k}); err != nil {
			t.Fatal(err)
		}
		if _, err := m.LoadCA([][]byte{ca.PEM}); err != nil {
			t.Fatal(err)
		}
		return m
	}
	server := material(ca, "kvnode-0.kvnode-peers.default.svc.cluster.local")
	addr, verdicts := serve(t, server.InternalServerConfig())

	member := material(ca, "kvnode-1.kvnode-peers.default.svc.cluster.local")
	if err := handshake(t, addr, verdicts, member.InternalClientConfig()); err != nil {
		t.Fatalf("a member with an allowed name: %v", err)
	}
	intruder := material(ca, "billing.default.svc.cluster.local")
	if err := handshake(t, addr, verdicts, intruder.InternalClientConfig()); err == nil || !strings.Contains(err.Error(), "--peer-names") {
		t.Errorf("a certificate of the same CA for another name: %v, want a refusal naming --peer-names", err)
	}
	if !tap.Seen("n", "refused a peer's certificate", "reason=name", "direction=inbound", "billing.default.svc.cluster.local", "remote=127.0.0.1:") {
		t.Errorf("no log of the refusal with the names offered and the remote: %q", tap.Matching("refused"))
	}
	// A member refused is dialled again and again: each refusal counts,
	// the log says it once a minute.
	before := obs.refusals("name")
	for range 3 {
		if err := handshake(t, addr, verdicts, intruder.InternalClientConfig()); err == nil {
			t.Fatal("the intruder was let in on a later try")
		}
	}
	if got := obs.refusals("name"); got != before+3 {
		t.Errorf("refusals counted after 3 more tries: %d, want %d", got, before+3)
	}
	if lines := tap.Matching("refused a peer's certificate", "direction=inbound", "billing.default.svc.cluster.local"); len(lines) != 1 {
		t.Errorf("the same refusal was logged %d times within a minute, want once: %q", len(lines), lines)
	}
	cnOnly := reload.NewTLS(peers, nil, nil)
	c, k := issueCN(t, ca, "kvnode-2.kvnode-peers.default.svc.cluster.local")
	if _, err := cnOnly.LoadCertificate([][]byte{c, k}); err != nil {
		t.Fatal(err)
	}
	_, _ = cnOnly.LoadCA([][]byte{ca.PEM})
	if err := handshake(t, addr, verdicts, cnOnly.InternalClientConfig()); err == nil {
		t.Error("a certificate with the allowed name only as its common name was let in")
	}
	stranger := material(other, "kvnode-3.kvnode-peers.default.svc.cluster.local")
	if err := handshake(t, addr, verdicts, stranger.InternalClientConfig()); err == nil || !strings.Contains(err.Error(), "not from the cluster's CA") {
		t.Errorf("a certificate of another CA: %v, want a refusal for its CA", err)
	}
	if n := obs.refusals("name"); n < 2 {
		t.Errorf("refusals for the name counted: %d, want at least 2", n)
	}
	if n := obs.refusals("ca"); n < 1 {
		t.Errorf("refusals for the CA counted: %d, want at least 1", n)
	}

	// Dialling out: a member refuses a server whose name is not allowed.
	impostor := material(ca, "billing.default.svc.cluster.local")
	impostorAddr, impostorVerdicts := serve(t, impostor.InternalServerConfig())
	before = obs.refusals("name")
	if err := handshake(t, impostorAddr, impostorVerdicts, member.InternalClientConfig()); err == nil {
		t.Error("a member completed a handshake with a server whose name --peer-names does not allow")
	}
	if !tap.Seen("n", "refused a peer's certificate", "direction=outbound", "billing.default.svc.cluster.local") || obs.refusals("name") <= before {
		t.Errorf("the outbound refusal was not logged and counted: %q", tap.Matching("outbound"))
	}
}

// TestCARotation: the CA is read at every handshake: after the CA file
// changes to another CA, a peer of the old CA is refused and one of the
// new is let in, without a restart; a dialling member's configuration
// presents the certificate loaded last.
func TestCARotation(t *testing.T) {
	oldCA, newCA := nodetest.NewCA(t, "old CA"), nodetest.NewCA(t, "new CA")
	dir := t.TempDir()
	caPath := filepath.Join(dir, "ca.crt")
	if err := os.WriteFile(caPath, oldCA.PEM, 0o600); err != nil {
		t.Fatal(err)
	}
	server := reload.NewTLS(nil, nil, nil)
	c, k := issue(t, oldCA, "localhost")
	if _, err := server.LoadCertificate([][]byte{c, k}); err != nil {
		t.Fatal(err)
	}
	w := reload.NewWatcher(reload.Options{Debounce: 50 * time.Millisecond})
	t.Cleanup(func() { _ = w.Close() })
	if err := w.Add(reload.File{Name: "ca", Title: "CA", Paths: []string{caPath}, Load: server.LoadCA}); err != nil {
		t.Fatal(err)
	}
	w.Start()
	addr, verdicts := serve(t, server.InternalServerConfig())
	peer := func(ca *nodetest.CA) *reload.TLS {
		m := reload.NewTLS(nil, nil, nil)
		c, k := issue(t, ca, "localhost")
		if _, err := m.LoadCertificate([][]byte{c, k}); err != nil {
			t.Fatal(err)
		}
		// The peer trusts both, so only the server's CA decides.
		if _, err := m.LoadCA([][]byte{append(append([]byte{}, oldCA.PEM...), newCA.PEM...)}); err != nil {
			t.Fatal(err)
		}
		return m
	}
	oldPeer, newPeer := peer(oldCA), peer(newCA)
	// The old peer's configuration is built once, as a member's is.
	oldCfg := oldPeer.InternalClientConfig()
	if err := handshake(t, addr, verdicts, oldCfg); err != nil {
		t.Fatalf("a peer of the CA in force: %v", err)
	}
	if err := handshake(t, addr, verdicts, newPeer.InternalClientConfig()); err == nil {
		t.Fatal("a peer of a CA not yet in force was let in")
	}
	if err := os.WriteFile(caPath+".tmp", newCA.PEM, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(caPath+".tmp", caPath); err != nil {
		t.Fatal(err)
	}
	waitfor.Cond(t, 5*time.Second, "a peer of the new CA to be let in", func() bool {
		return handshake(t, addr, verdicts, newPeer.InternalClientConfig()) == nil
	})
	if err := handshake(t, addr, verdicts, oldCfg); err == nil {
		t.Error("a peer of the old CA is still let in after the CA changed")
	}
	// The dialling side reloads too: the old peer gets a certificate of
	// the new CA, and the same configuration presents it.
	c, k = issue(t, newCA, "localhost")
	if _, err := oldPeer.LoadCertificate([][]byte{c, k}); err != nil {
		t.Fatal(err)
	}
	if err := handshake(t, addr, verdicts, oldCfg); err != nil {
		t.Errorf("the old peer with its reloaded certificate, same configuration: %v", err)
	}
}

// TestBusyDirectory: a directory that is never quiet (a log file written
// next to the certificate every few milliseconds) still has a changed
// certificate loaded, within a bounded wait.
func TestBusyDirectory(t *testing.T) {
	ca := nodetest.NewCA(t, "test CA")
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(ca.PEM)
	dir := t.TempDir()
	certPath, keyPath := filepath.Join(dir, "tls.crt"), filepath.Join(dir, "tls.key")
	cert1, key1 := issue(t, ca, "localhost")
	_ = os.WriteFile(certPath, cert1, 0o600)
	_ = os.WriteFile(keyPath, key1, 0o600)
	material := reload.NewTLS(nil, nil, nil)
	w := reload.NewWatcher(reload.Options{Debounce: 100 * time.Millisecond})
	t.Cleanup(func() { _ = w.Close() })
	if err := w.Add(reload.File{Name: "tls", Title: "TLS certificate and key", Paths: []string{certPath, keyPath}, Load: material.LoadCertificate}); err != nil {
		t.Fatal(err)
	}
	w.Start()
	addr, _ := serve(t, material.ServerConfig())

	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		f, err := os.Create(filepath.Join(dir, "node.log"))
		if err != nil {
			return
		}
		defer f.Close()
		tick := time.NewTicker(10 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-stop:
				return
			case <-tick.C:
				_, _ = f.WriteString("level=INFO msg=busy\n")
			}
		}
	}()
	defer func() { close(stop); <-done }()

	cert2, key2 := issue(t, ca, "localhost")
	_ = os.WriteFile(keyPath+".tmp", key2, 0o600)
	_ = os.WriteFile(certPath+".tmp", cert2, 0o600)
	_ = os.Rename(keyPath+".tmp", keyPath)
	_ = os.Rename(certPath+".tmp", certPath)
	start := time.Now()
	want := serial(t, cert2)
	waitfor.Cond(t, 5*time.Second, "the new certificate to be loaded while the directory is busy", func() bool {
		return presented(t, addr, pool) == want
	})
	t.Logf("loaded %v after the rename, with a write every 10ms in the directory", time.Since(start).Round(time.Millisecond))
}
