package etcdjson

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"io"
	"net/http"
	"strings"

	"github.com/kvnode/kvnode/bench/kvbench"
)

// Dial is etcd's JSON gateway as kvbench's target ("etcd"): cfg's
// endpoints are the members' client URLs, shared by up to clients clients
// over one HTTP client, each sending its requests to the endpoints in
// turn.
func Dial(cfg *kvbench.Config, clients int) (kvbench.Target, error) {
	if err := Check(cfg); err != nil {
		return nil, err
	}
	tr, err := kvbench.ClientTransport(cfg, clients)
	if err != nil {
		return nil, err
	}
	return &target{cfg: cfg, hc: &http.Client{Transport: tr, Timeout: cfg.Timeout}}, nil
}

type target struct {
	cfg *kvbench.Config
	hc  *http.Client
}

// Prepare has nothing to prepare: etcd's key space needs no region.
func (t *target) Prepare(context.Context, func(string, ...any)) (kvbench.Prepared, error) {
	return kvbench.Prepared{}, nil
}

func (t *target) Client(id int) kvbench.Client { return &client{t: t, id: id} }

func (t *target) Close() error {
	t.hc.CloseIdleConnections()
	return nil
}

// client is one client's requests, to the endpoints in turn starting at
// its own.
type client struct {
	t    *target
	id   int
	sent uint64
}

// post sends body to the gateway's path and returns the answer's body
// (read whole, so that the connection serves again) when the status is
// 200; another status is a kvbench.StatusError with etcd's message, no
// answer a kvbench.TransportError.
func (c *client) post(ctx context.Context, path string, body []byte) ([]byte, error) {
	eps := c.t.cfg.Endpoints
	base := eps[(uint64(c.id)+c.sent)%uint64(len(eps))]
	c.sent++
	req, err := http.NewRequestWithContext(ctx, "POST", base+path, bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := c.t.hc.Do(req)
	if err != nil {
		return nil, kvbench.TransportError(err)
	}
	defer resp.Body.Close()
	answer, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	if err != nil {
		return nil, kvbench.TransportError(err)
	}
	if resp.StatusCode != http.StatusOK {
		return nil, kvbench.StatusError(resp.StatusCode, message(answer))
	}
	return answer, nil
}

// message is what an error answer of the gateway says,
// {"error":..,"code":..,"message":..}, or its body.
func message(body []byte) string {
	var doc struct {
		Message string `json:"message"`
	}
	if json.Unmarshal(body, &doc) == nil && doc.Message != "" {
		return doc.Message
	}
	return strings.TrimSpace(string(body))
}

func (c *client) key(k string) string { return Key(c.t.cfg.Region, k) }

func (c *client) Put(ctx context.Context, key string, v []byte) error {
	_, err := c.post(ctx, "/v3/kv/put", appendPut(nil, c.key(key), v))
	return err
}

// Get is a range of the key alone; its answer names the key's kvs only
// when the key exists.
func (c *client) Get(ctx context.Context, key string) error {
	b := appendField([]byte{'{'}, "key", c.key(key))
	if c.t.cfg.Stale {
		b = append(b, `,"serializable":true`...)
	}
	answer, err := c.post(ctx, "/v3/kv/range", append(b, '}'))
	if err == nil && !bytes.Contains(answer, []byte(`"kvs":`)) {
		return &kvbench.OpError{Kind: KindNotFound}
	}
	return err
}

// Create is a transaction that puts only if the key was never created (or
// was deleted since); its answer says "succeeded" only when it did.
func (c *client) Create(ctx context.Context, key string, v []byte) error {
	k := c.key(key)
	b := append([]byte(`{"compare":[`), '{')
	b = appendField(b, "key", k)
	b = append(b, `,"result":"EQUAL","target":"CREATE","create_revision":"0"}],"success":[{"request_put":`...)
	b = appendPut(b, k, v)
	answer, err := c.post(ctx, "/v3/kv/txn", append(b, "}]}"...))
	if err == nil && !bytes.Contains(answer, []byte(`"succeeded":true`)) {
		return &kvbench.OpError{Kind: KindExists}
	}
	return err
}

// PutMany is one transaction of the puts, with no condition.
func (c *client) PutMany(ctx context.Context, keys []string, values [][]byte) error {
	b := []byte(`{"success":[`)
	for i, k := range keys {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, `{"request_put":`...)
		b = appendPut(b, c.key(k), values[i])
		b = append(b, '}')
	}
	_, err := c.post(ctx, "/v3/kv/txn", append(b, "]}"...))
	return err
}

// appendPut appends a PutRequest, {"key":..,"value":..}.
func appendPut(b []byte, key string, v []byte) []byte {
	b = appendField(append(b, '{'), "key", key)
	b = append(b, `,"value":"`...)
	b = base64.StdEncoding.AppendEncode(b, v)
	return append(b, `"}`...)
}

// appendField appends "name":"<base64 of s>" (the gateway's bytes fields).
func appendField(b []byte, name, s string) []byte {
	b = append(b, '"')
	b = append(b, name...)
	b = append(b, `":"`...)
	b = base64.StdEncoding.AppendEncode(b, []byte(s))
	return append(b, '"')
}
