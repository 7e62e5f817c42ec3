package client_test

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/kvnode/kvnode/client"
	"github.com/kvnode/kvnode/node"
	"github.com/kvnode/kvnode/node/nodetest"
)

// TestAnswerAndWatchData: WithAnswer hands over a call's answer as it
// came (a management answer's statusMessage, a value's bytes, a streamed
// listing's headers without its body) and leaves it alone on an error; a
// watch's events carry their data as sent, and a destroyed region ends
// the watch with a *WatchEndedError saying why.
func TestAnswerAndWatchData(t *testing.T) {
	tc := startCluster(t, 1, nil)
	c := tc.c
	var a client.Answer
	if err := c.CreateRegion(client.WithAnswer(ctx(t), &a), client.RegionInfo{Name: "raw", Type: client.Replicate}); err != nil {
		t.Fatal(err)
	}
	if a.Status != http.StatusCreated || !strings.Contains(string(a.Body), `"statusMessage":"region raw created"`) || a.Member == "" {
		t.Fatalf("CreateRegion's answer: %d %q from %q", a.Status, a.Body, a.Member)
	}
	r := c.Region("raw")
	value := `{"total":10.0,"name":"a"}`
	if err := r.Put(ctx(t), "k", json.RawMessage(value)); err != nil {
		t.Fatal(err)
	}
	if _, err := r.Get(client.WithAnswer(ctx(t), &a), "k"); err != nil || string(a.Body) != value || a.Status != http.StatusOK {
		t.Fatalf("Get's answer: %v, %d %q; want %q", err, a.Status, a.Body, value)
	}
	if _, err := r.Get(client.WithAnswer(ctx(t), &a), "absent"); !errors.Is(err, client.ErrNotFound) || string(a.Body) != value {
		t.Fatalf("a failed Get: %v, answer %q; want ErrNotFound and the former answer left alone", err, a.Body)
	}
	for _, err := range r.Keys(client.WithAnswer(ctx(t), &a)) {
		if err != nil {
			t.Fatal(err)
		}
	}
	if a.Body != nil || !strings.HasPrefix(a.Header.Get("Content-Type"), "application/json") {
		t.Fatalf("Keys' answer: body %q, Content-Type %q; want no body and the headers", a.Body, a.Header.Get("Content-Type"))
	}

	wctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	var events []client.Event
	var end error
	for ev, err := range c.Watch(wctx, client.WatchOptions{Region: "raw"}) {
		if err != nil {
			end = err
			break
		}
		events = append(events, ev)
		switch ev.Type {
		case client.EventReady:
			if err := r.Put(ctx(t), "k2", json.RawMessage(`{"n":1.50}`)); err != nil {
				t.Fatal(err)
			}
		case client.EventCreate:
			if err := c.DestroyRegion(ctx(t), "raw"); err != nil {
				t.Fatal(err)
			}
		}
	}
	if len(events) != 2 || string(events[1].Data) != `{"type":"create","region":"raw","key":"k2","value":{"n":1.50}}` {
		t.Fatalf("events %+v: want ready, then the create with its data as sent", events)
	}
	var ended *client.WatchEndedError
	if !errors.As(end, &ended) || !errors.Is(end, client.ErrWatchEnded) || !strings.Contains(ended.Cause, `"raw" was destroyed`) ||
		!strings.Contains(string(ended.Data), `"type":"end"`) {
		t.Fatalf("the watch ended with %v (%+v), want a *WatchEndedError saying the region was destroyed", end, ended)
	}
}

// TestWatchFirstEndpointFirst: a new client's watch starts on its first
// endpoint; a stream the member ends is told to OnStream, and the watch
// goes on on the next one.
func TestWatchFirstEndpointFirst(t *testing.T) {
	sse := func(blocks ...string) func(http.ResponseWriter, *http.Request) {
		return func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "text/event-stream")
			for _, b := range blocks {
				fmt.Fprint(w, b)
			}
		}
	}
	first := newStub(t, sse("event: ready\nid: 0:1.0\ndata: {\"type\":\"ready\",\"region\":\"r\",\"token\":\"0:1.0\"}\n\n",
		"event: error\nid: 0:1.0\ndata: {\"type\":\"error\",\"cause\":\"too slow\",\"token\":\"0:1.0\"}\n\n"))
	second := newStub(t, sse("event: create\nid: 0:2.0\ndata: {\"type\":\"create\",\"region\":\"r\",\"key\":\"a\",\"value\":{}}\n\n"))
	c := stubClient(t, first.srv.URL, second.srv.URL)
	var told []string
	opts := client.WatchOptions{Region: "r", OnStream: func(s client.WatchStream) {
		if s.Err != nil {
			told = append(told, s.Err.Error())
		}
	}}
	for ev, err := range c.Watch(ctx(t), opts) {
		if err != nil {
			t.Fatal(err)
		}
		if ev.Type == client.EventCreate {
			break
		}
	}
	if len(told) != 1 || !strings.Contains(told[0], "too slow") {
		t.Fatalf("OnStream was told %q, want once, with the member's cause", told)
	}
	if first.calls.Load() != 1 || second.calls.Load() != 1 {
		t.Fatalf("calls: %d, %d; want the first endpoint first, then the second", first.calls.Load(), second.calls.Load())
	}
}

// TestMoreKinds: the statuses a member answers besides those of the
// entries' tests map to the kinds a program acts on; Retry-After is read.
func TestMoreKinds(t *testing.T) {
	for status, kind := range map[int]error{
		http.StatusMethodNotAllowed:     client.ErrInvalid,
		http.StatusRequestURITooLong:    client.ErrInvalid,
		http.StatusTooManyRequests:      client.ErrUnauthorized,
		http.StatusUnsupportedMediaType: client.ErrInvalid,
	} {
		s := newStub(t, func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Retry-After", "30")
			w.WriteHeader(status)
		})
		err := stubClient(t, s.srv.URL).Region("r").Clear(context.Background())
		var e *client.Error
		if !errors.Is(err, kind) || !errors.As(err, &e) || e.RetryAfter != 30*time.Second {
			t.Errorf("%d: %v, want %v and RetryAfter 30 s", status, err, kind)
		}
	}
}

// TestCertificates: against a member that requires client certificates,
// a client without one, or with one of another CA, is refused at once
// with ErrUnauthorized, never ErrOutcomeUnknown, a write too (the member
// did not read it); a client that does not trust the member's
// certificate fails at once with ErrUnavailable.
func TestCertificates(t *testing.T) {
	dir := t.TempDir()
	ca := nodetest.NewCA(t, "client test CA")
	caPath := dir + "/ca.pem"
	if err := os.WriteFile(caPath, ca.PEM, 0o600); err != nil {
		t.Fatal(err)
	}
	nc := nodetest.New(t)
	nc.Tune = func(name string, cfg *node.Config) {
		cfg.TLSCert, cfg.TLSKey = ca.Issue(t, dir, name)
		cfg.TLSCA, cfg.ClientCertAuth = caPath, true
	}
	url := nc.Start("m1", 1).RESTURL()
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(ca.PEM)
	load := func(certPath, keyPath string) []tls.Certificate {
		pair, err := tls.LoadX509KeyPair(certPath, keyPath)
		if err != nil {
			t.Fatal(err)
		}
		return []tls.Certificate{pair}
	}
	newClient := func(cfg *tls.Config) *client.Client {
		c, err := client.New(client.Config{Endpoints: []string{url, url}, TLS: cfg, DisableSingleHop: true})
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	good := newClient(&tls.Config{RootCAs: pool, Certificates: load(ca.Issue(t, dir, "app"))})
	if _, err := good.Regions(ctx(t)); err != nil {
		t.Fatal(err)
	}
	other := nodetest.NewCA(t, "another CA")
	for name, cfg := range map[string]*tls.Config{
		"no certificate": {RootCAs: pool},
		"another CA's":   {RootCAs: pool, Certificates: load(other.Issue(t, t.TempDir(), "app"))},
	} {
		c := newClient(cfg)
		start := time.Now()
		_, err := c.Region("r").Create(ctx(t), "k", map[string]int{"a": 1})
		if !errors.Is(err, client.ErrUnauthorized) || errors.Is(err, client.ErrOutcomeUnknown) || !strings.Contains(err.Error(), "certificate") {
			t.Errorf("%s: Create = %v, want ErrUnauthorized, not ErrOutcomeUnknown", name, err)
		}
		if _, err := c.Regions(ctx(t)); !errors.Is(err, client.ErrUnauthorized) {
			t.Errorf("%s: Regions = %v, want ErrUnauthorized", name, err)
		}
		if d := time.Since(start); d > 3*time.Second {
			t.Errorf("%s: refused after %v, want at once", name, d)
		}
	}
	start := time.Now()
	_, err := newClient(&tls.Config{Certificates: load(ca.Issue(t, dir, "app"))}).Regions(ctx(t))
	if !errors.Is(err, client.ErrUnavailable) || !strings.Contains(err.Error(), "certificate") || time.Since(start) > 3*time.Second {
		t.Errorf("a member's certificate not trusted: %v after %v, want ErrUnavailable at once", err, time.Since(start))
	}
}
