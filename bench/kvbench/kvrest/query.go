package kvrest

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/url"
	"regexp"
	"strconv"
	"strings"

	"github.com/kvnode/kvnode/bench/kvbench"
)

// The query workload's requests, sent over HTTP until package client has
// queries (GET /kv/v1/queries/adhoc?q=, POST /kv/v1/queries/{id} with the
// bind values).

// placeholder matches the bind placeholders of an OQL text, $1, $2...
var placeholder = regexp.MustCompile(`\$([0-9]+)`)

// queryPlan is the query workload's OQL text, cut at its placeholders so
// that each request fills them cheaply, and the HTTP client it goes by.
type queryPlan struct {
	text   string   // with {region} replaced
	parts  []string // text between placeholders: len(slots)+1 of them
	slots  []int    // the placeholder number (1-based) of each gap
	params int      // the highest placeholder number
	named  bool
	id     string
	stale  bool

	hc        *http.Client
	endpoints []string
	auth      string
	next      uint64
}

// newQueryPlan prepares cfg's query for clients clients.
func newQueryPlan(cfg *kvbench.Config, clients int) (*queryPlan, error) {
	tr, err := kvbench.ClientTransport(cfg, clients)
	if err != nil {
		return nil, err
	}
	q := &queryPlan{text: strings.ReplaceAll(cfg.Query, "{region}", cfg.Region), named: cfg.NamedQuery, id: cfg.QueryID, stale: cfg.Stale,
		hc: &http.Client{Transport: tr, Timeout: cfg.Timeout}, endpoints: cfg.Endpoints, auth: cfg.Authorization()}
	last := 0
	for _, m := range placeholder.FindAllStringSubmatchIndex(q.text, -1) {
		n, err := strconv.Atoi(q.text[m[2]:m[3]])
		if err != nil || n < 1 {
			continue // $0 or a number too large: left as text
		}
		q.parts = append(q.parts, q.text[last:m[0]])
		q.slots = append(q.slots, n)
		q.params = max(q.params, n)
		last = m[1]
	}
	q.parts = append(q.parts, q.text[last:])
	return q, nil
}

func (q *queryPlan) close() { q.hc.CloseIdleConnections() }

// binds draws the values of $1..$params: customer ids.
func (q *queryPlan) binds(rng *rand.Rand) []int {
	b := make([]int, q.params)
	for i := range b {
		b[i] = rng.IntN(kvbench.Customers)
	}
	return b
}

// run runs the query once with binds drawn from rng.
func (q *queryPlan) run(ctx context.Context, rng *rand.Rand) error {
	method, path, body := q.request(q.binds(rng))
	status, _, err := q.send(ctx, method, path, body)
	if err != nil {
		return kvbench.TransportError(err)
	}
	if status != 200 {
		return kvbench.StatusError(status, "")
	}
	return nil
}

// request is one run of the query with the bind values b: GET
// /kv/v1/queries/adhoc?q={text} with the values written into the text, or
// POST /kv/v1/queries/{id} with [{"@type":"int","@value":n},...].
func (q *queryPlan) request(b []int) (method, path string, body []byte) {
	consistency := ""
	if q.stale {
		consistency = "consistency=stale"
	}
	if q.named {
		body = []byte{'['}
		for i, v := range b {
			if i > 0 {
				body = append(body, ',')
			}
			body = append(body, `{"@type":"int","@value":`...)
			body = strconv.AppendInt(body, int64(v), 10)
			body = append(body, '}')
		}
		body = append(body, ']')
		path = "/kv/v1/queries/" + url.PathEscape(q.id)
		if consistency != "" {
			path += "?" + consistency
		}
		return "POST", path, body
	}
	var text strings.Builder
	for i, p := range q.parts {
		text.WriteString(p)
		if i < len(q.slots) {
			text.WriteString(strconv.Itoa(b[q.slots[i]-1]))
		}
	}
	path = "/kv/v1/queries/adhoc?q=" + url.QueryEscape(text.String())
	if consistency != "" {
		path += "&" + consistency
	}
	return "GET", path, nil
}

// send sends one request to the next endpoint and reads the answer whole.
func (q *queryPlan) send(ctx context.Context, method, path string, body []byte) (int, []byte, error) {
	base := q.endpoints[q.next%uint64(len(q.endpoints))]
	q.next++
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, base+path, rd)
	if err != nil {
		return 0, nil, err
	}
	req.Header.Set("Accept", "application/json")
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if q.auth != "" {
		req.Header.Set("Authorization", q.auth)
	}
	resp, err := q.hc.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	return resp.StatusCode, data, err
}

// storeQuery stores the named query under its id (POST
// /kv/v1/queries?id=&q=), replacing the text of a query of the same id
// (PUT /kv/v1/queries/{id}?q=).
func (t *target) storeQuery(ctx context.Context) error {
	q := t.query
	status, body, err := q.send(ctx, "POST", "/kv/v1/queries?id="+url.QueryEscape(q.id)+"&q="+url.QueryEscape(q.text), nil)
	if err == nil && status == 409 {
		status, body, err = q.send(ctx, "PUT", "/kv/v1/queries/"+url.PathEscape(q.id)+"?q="+url.QueryEscape(q.text), nil)
	}
	if err != nil {
		return fmt.Errorf("store query %s: %w", q.id, err)
	}
	if status != 200 && status != 201 {
		var doc struct {
			Cause string `json:"cause"`
		}
		_ = json.Unmarshal(body, &doc)
		return fmt.Errorf("store query %s: %d %s", q.id, status, doc.Cause)
	}
	return nil
}
