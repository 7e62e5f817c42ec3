package watchbench

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sync"

	"github.com/kvnode/kvnode/client"
)

// kvnodeTarget is a kvnode member, reached through package client as any
// Go program would: watches are client.Watch of one region, writes
// Region.Put. Each (HTTP client, member) pair has its own client.Client
// over that HTTP client's transport, so that the writers and the watchers
// keep their own connection pools and a request goes to the member the
// run chose (no single hop, no retry: a refusal is counted, not hidden).
type kvnodeTarget struct {
	region         string
	user, password string

	mu      sync.Mutex
	clients map[clientKey]*client.Client
}

type clientKey struct {
	hc   *http.Client
	base string
}

// client is the client.Client for requests through hc to base.
func (k *kvnodeTarget) client(hc *http.Client, base string) (*client.Client, error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	key := clientKey{hc, base}
	if c, ok := k.clients[key]; ok {
		return c, nil
	}
	c, err := client.New(client.Config{Endpoints: []string{base}, Username: k.user, Password: k.password,
		RetryFor: -1, DisableSingleHop: true, DisableCompression: true, Transport: hc.Transport})
	if err != nil {
		return nil, fmt.Errorf("client of %s: %w", base, err)
	}
	if k.clients == nil {
		k.clients = map[clientKey]*client.Client{}
	}
	k.clients[key] = c
	return c, nil
}

// watch follows the region on base until ctx ends or the stream ends:
// client.Watch would resume a broken stream, which a benchmark reports
// instead, so the first stream that ends ends the watch (OnStream).
func (k *kvnodeTarget) watch(ctx context.Context, hc *http.Client, base string, ready func(), value func([]byte)) error {
	c, err := k.client(hc, base)
	if err != nil {
		return err
	}
	parent := ctx
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var ended error
	started := false
	// Undecoded: a stamp is found in an event's data by a byte search, and
	// at a million events a second decoding them would be the tool's
	// cost measured, not the member's.
	opts := client.WatchOptions{Region: k.region, Undecoded: true, OnStream: func(s client.WatchStream) {
		if s.Err != nil {
			ended, started = s.Err, s.Member != ""
			cancel()
		}
	}}
	for ev, err := range c.Watch(ctx, opts) {
		if err != nil {
			if errors.Is(err, client.ErrWatchEnded) {
				return fmt.Errorf("%w: %w", errEnded, err)
			}
			return fmt.Errorf("watch: %w", err)
		}
		switch ev.Type {
		case client.EventReady:
			ready()
		case client.EventCreate, client.EventUpdate:
			value(ev.Data)
		}
	}
	switch {
	case parent.Err() != nil:
		return parent.Err()
	case ended == nil:
		return fmt.Errorf("%w: the watch stopped without a reason", errEnded)
	case started:
		return fmt.Errorf("%w: %w", errEnded, ended)
	case errors.Is(ended, client.ErrUnavailable):
		return fmt.Errorf("watch: %w (the member serves at most --max-watchers watches: start it with more)", ended)
	}
	return fmt.Errorf("watch: %w", ended) // refused: no stream started
}

// put writes v to key through base, within hc's timeout.
func (k *kvnodeTarget) put(ctx context.Context, hc *http.Client, base, key string, v []byte) error {
	c, err := k.client(hc, base)
	if err != nil {
		return err
	}
	if hc.Timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, hc.Timeout)
		defer cancel()
	}
	return c.Region(k.region).Put(ctx, key, v)
}
