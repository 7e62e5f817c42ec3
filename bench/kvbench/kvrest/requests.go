package kvrest

import (
	"bytes"
	"encoding/json"
	"math/rand/v2"
	"net/url"
	"regexp"
	"strconv"
	"strings"

	"github.com/kvnode/kvnode/bench/kvbench"
)

// The requests of the workloads, exactly as the REST API takes them
// (shared/spec/rest-api.md and rest-details.md; rest/entries.go and
// rest/queries.go serve them). Building them is pure, so that tests can
// pin each one.

// request is one HTTP request before an endpoint is chosen.
type request struct {
	method string
	// path is the escaped path and query after the endpoint's base URL.
	path string
	// body, when not nil, is sent as application/json.
	body []byte
	// key routes the request to its group's leader under --route leader
	// ("" for requests that have no single key).
	key string
	// keep asks for the answer's body (else it is read and dropped).
	keep bool
}

const kvPrefix = "/kv/v1"

func regionPath(region string) string { return kvPrefix + "/" + url.PathEscape(region) }

func consistencyQuery(stale bool) string {
	if stale {
		return "consistency=stale"
	}
	return ""
}

// withQuery appends a query string, if any, to a path.
func withQuery(path string, params ...string) string {
	sep := "?"
	for _, p := range params {
		if p != "" {
			path += sep + p
			sep = "&"
		}
	}
	return path
}

// putRequest is a single-key upsert: PUT /kv/v1/{region}/{key} (no op;
// 200 whether or not the key existed).
func putRequest(region, key string, v []byte) request {
	return request{method: "PUT", path: regionPath(region) + "/" + url.PathEscape(key), body: v, key: key}
}

// getRequest reads one key: GET /kv/v1/{region}/{key}, linearizable, or
// from the answering member's replica with ?consistency=stale (200; a
// missing key is 404).
func getRequest(region, key string, stale bool) request {
	return request{method: "GET", path: withQuery(regionPath(region)+"/"+url.PathEscape(key), consistencyQuery(stale)), key: key}
}

// createRequest is put-if-absent: POST /kv/v1/{region}?key={key} (201;
// 409 with the current value when the key exists).
func createRequest(region, key string, v []byte) request {
	return request{method: "POST", path: regionPath(region) + "?key=" + url.QueryEscape(key), body: v, key: key}
}

// casRequest is PUT /kv/v1/{region}/{key}?op=CAS with
// {"@old":<current>,"@new":<next>} (200; 409 with the current value when
// @old is not it).
func casRequest(region, key string, old, next []byte) request {
	body := make([]byte, 0, len(old)+len(next)+20)
	body = append(body, `{"@old":`...)
	body = append(body, old...)
	body = append(body, `,"@new":`...)
	body = append(body, next...)
	body = append(body, '}')
	return request{method: "PUT", path: regionPath(region) + "/" + url.PathEscape(key) + "?op=CAS", body: body, key: key}
}

// multiPutRequest writes several keys in one request: PUT
// /kv/v1/{region}/k1,k2,... (no op: put-all) with a JSON array whose
// element i is key i's value (200). It routes by its first key.
func multiPutRequest(region string, keys []string, values [][]byte) request {
	var path strings.Builder
	path.WriteString(regionPath(region))
	var body bytes.Buffer
	body.WriteByte('[')
	for i, k := range keys {
		sep := byte(',')
		if i == 0 {
			sep = '/'
		} else {
			body.WriteByte(',')
		}
		path.WriteByte(sep)
		path.WriteString(url.PathEscape(k))
		body.Write(values[i])
	}
	body.WriteByte(']')
	return request{method: "PUT", path: path.String(), body: body.Bytes(), key: keys[0]}
}

// placeholder matches the bind placeholders of an OQL text, $1, $2...
var placeholder = regexp.MustCompile(`\$([0-9]+)`)

// queryPlan is the query workload's OQL text, cut at its placeholders so
// that each request fills them cheaply.
type queryPlan struct {
	text   string   // with {region} replaced
	parts  []string // text between placeholders: len(slots)+1 of them
	slots  []int    // the placeholder number (1-based) of each gap
	params int      // the highest placeholder number
	named  bool
	id     string
	stale  bool
}

// newQueryPlan prepares cfg's query.
func newQueryPlan(cfg *kvbench.Config) *queryPlan {
	q := &queryPlan{text: strings.ReplaceAll(cfg.Query, "{region}", cfg.Region), named: cfg.NamedQuery, id: cfg.QueryID, stale: cfg.Stale}
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
	return q
}

// binds draws the values of $1..$params: customer ids.
func (q *queryPlan) binds(rng *rand.Rand) []int {
	b := make([]int, q.params)
	for i := range b {
		b[i] = rng.IntN(kvbench.Customers)
	}
	return b
}

// request is one run of the query with the bind values b.
func (q *queryPlan) request(b []int) request {
	if q.named {
		return namedQueryRequest(q.id, b, q.stale)
	}
	var text strings.Builder
	for i, p := range q.parts {
		text.WriteString(p)
		if i < len(q.slots) {
			text.WriteString(strconv.Itoa(b[q.slots[i]-1]))
		}
	}
	return adhocQueryRequest(text.String(), q.stale)
}

// adhocQueryRequest is GET /kv/v1/queries/adhoc?q={text} (200, a JSON
// array of results).
func adhocQueryRequest(text string, stale bool) request {
	return request{method: "GET", path: withQuery(kvPrefix+"/queries/adhoc", "q="+url.QueryEscape(text), consistencyQuery(stale))}
}

// namedQueryRequest runs a named query: POST /kv/v1/queries/{id} with the
// bind values [{"@type":"int","@value":n},...] (200, a JSON array).
func namedQueryRequest(id string, b []int, stale bool) request {
	body := []byte{'['}
	for i, v := range b {
		if i > 0 {
			body = append(body, ',')
		}
		body = append(body, `{"@type":"int","@value":`...)
		body = strconv.AppendInt(body, int64(v), 10)
		body = append(body, '}')
	}
	body = append(body, ']')
	return request{method: "POST", path: withQuery(kvPrefix+"/queries/"+url.PathEscape(id), consistencyQuery(stale)), body: body}
}

// createQueryRequest stores a named query: POST
// /kv/v1/queries?id={id}&q={text} (201; 409 when the id exists).
func createQueryRequest(id, text string) request {
	return request{method: "POST", path: kvPrefix + "/queries?id=" + url.QueryEscape(id) + "&q=" + url.QueryEscape(text), keep: true}
}

// updateQueryRequest replaces a named query's text: PUT
// /kv/v1/queries/{id}?q={text} (200).
func updateQueryRequest(id, text string) request {
	return request{method: "PUT", path: kvPrefix + "/queries/" + url.PathEscape(id) + "?q=" + url.QueryEscape(text)}
}

// createRegionRequest is the management API's POST /management/v1/regions
// {"name":..,"type":..} (201; 409 when the region exists).
func createRegionRequest(name, kind string) request {
	body, _ := json.Marshal(struct {
		Name string `json:"name"`
		Type string `json:"type"`
	}{name, kind}) // two strings always marshal
	return request{method: "POST", path: "/management/v1/regions", body: body, keep: true}
}

// The reads of a run's setup.
var (
	listRegionsRequest = request{method: "GET", path: kvPrefix, keep: true}
	clusterRequest     = request{method: "GET", path: "/management/v1/cluster", keep: true}
	partitionsRequest  = request{method: "GET", path: "/management/v1/partitions", keep: true}
)
