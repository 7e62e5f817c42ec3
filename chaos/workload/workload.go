package workload

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/kvnode/kvnode/chaos/model"
	"github.com/kvnode/kvnode/partition"
)

// Clients are concurrent clients doing single- and multi-key operations
// and queries on a few families of keys of one region, each operation
// through a member chosen at random, every one recorded in History. A
// family's keys are in one Raft group (model.FamilyOf; on a partitioned
// region family f is placed in partition group 1 + f mod Groups, and with
// Moves its keys share a bucket), which is what the model's per-family
// check needs.
type Clients struct {
	Region string
	// Families of FamilySize keys each; 8 and 2 when zero. Porcupine's
	// search grows fast with the writes of unknown outcome in one family
	// (a compose crash-all run of 20 s left 18 in a family of 3 keys, out
	// of 4: 3 min 12 s to check that family); 8 families of 2 keep them
	// fewer per family, and every multi-key request within a family still
	// writes both keys of one Raft group at once.
	Families, FamilySize int
	// Partitioned: the region is a PARTITION region of Groups partition
	// groups. Without Groups its keys cannot be placed and Run does nothing
	// (the run has failed already: the cluster never named its groups).
	Partitioned bool
	Groups      int
	// Moves: buckets move between partition groups during the run (the
	// rebalance nemesis), so the table of Groups groups holds only at the
	// start. A family's keys then share one bucket, which moves whole, and
	// a request counts as one Raft command (model.Input.OneGroup) only
	// when all its keys are in one bucket.
	Moves       bool
	Concurrency int           // concurrent clients; 6 when zero
	Timeout     time.Duration // a client gives up on a request after this; 3s when zero
	// URLs are the members' REST base URLs; Names their node names.
	URLs, Names []string
	History     *model.History
	// Values hands out written values, unique across the Clients sharing
	// it.
	Values *atomic.Int64
	// StaleReads makes GETs and queries read a member's own replica
	// (?consistency=stale), which is not linearizable: a run with it shows
	// that the checker catches the anomalies it should.
	StaleReads bool
	// Stats counts what happened.
	Stats Stats

	famOnce sync.Once
	fams    [][]string

	seenMu sync.Mutex
	seen   map[string]int64 // a value recently observed per key, for CAS
}

// Stats counts operations by outcome.
type Stats struct {
	Attempts atomic.Int64 // operations a client wanted done
	Definite atomic.Int64 // answered with a status the model judges
	Unknown  atomic.Int64 // timeouts, 5xx, cut connections
	Refused  atomic.Int64 // every member refused the connection: never sent
}

// opWeights is the operation mix, in Kind order: reads, blind writes and
// the conditional forms, with enough deletes that put-if-absent and the
// 400 forms of REPLACE and CAS happen; a third are multi-key requests and
// queries.
var opWeights = [...]int{model.Get: 20, model.Put: 13, model.PutIfAbsent: 10, model.Replace: 7, model.CAS: 12, model.Delete: 5,
	model.MultiGet: 7, model.MultiPut: 7, model.MultiReplace: 4, model.MultiCAS: 6, model.MultiDelete: 3, model.Query: 6}

// families are the workload's keys, family by family: "f<family>-<key>",
// and on a partitioned region "-<n>" with the first n that puts the key in
// the family's group (with Moves: the first key in the family's group,
// the others in the first key's bucket).
func (w *Clients) families() [][]string {
	w.famOnce.Do(func() {
		nf, size := w.Families, w.FamilySize
		if nf == 0 {
			nf = 8
		}
		if size == 0 {
			size = 2
		}
		for f := range nf {
			var keys []string
			for j := range size {
				key := fmt.Sprintf("f%d-%d", f, j)
				if w.Partitioned && w.Groups > 0 {
					g := uint64(1 + f%w.Groups)
					for n := 0; ; n++ {
						key = fmt.Sprintf("f%d-%d-%d", f, j, n)
						if j > 0 && w.Moves {
							if partition.Bucket(key) == partition.Bucket(keys[0]) {
								break
							}
						} else if partition.GroupForKey(key, w.Groups) == g {
							break
						}
					}
				}
				keys = append(keys, key)
			}
			w.fams = append(w.fams, keys)
		}
	})
	return w.fams
}

// KeyNames is every key the workload uses.
func (w *Clients) KeyNames() []string {
	var out []string
	for _, f := range w.families() {
		out = append(out, f...)
	}
	return out
}

// oneGroup reports whether keys are all in one Raft group (with Moves:
// in one bucket, the only keys surely in one group whatever has moved).
func (w *Clients) oneGroup(keys []string) bool {
	if !w.Partitioned {
		return true
	}
	where := func(k string) uint64 {
		if w.Moves {
			return uint64(partition.Bucket(k))
		}
		return partition.GroupForKey(k, w.Groups)
	}
	for _, k := range keys[1:] {
		if where(k) != where(keys[0]) {
			return false
		}
	}
	return true
}

// Run runs the clients until ctx ends.
func (w *Clients) Run(ctx context.Context) {
	if w.Partitioned && w.Groups < 1 {
		return
	}
	if w.Concurrency == 0 {
		w.Concurrency = 6
	}
	if w.Timeout == 0 {
		w.Timeout = 3 * time.Second
	}
	w.seen = map[string]int64{}
	var wg sync.WaitGroup
	for c := range w.Concurrency {
		wg.Add(1)
		go func() {
			defer wg.Done()
			w.client(ctx, c)
		}()
	}
	wg.Wait()
}

// client is one client's loop. After an indeterminate operation the
// client takes a new identity, as a real client would retry as a new
// request: porcupine's clients are sequential.
func (w *Clients) client(ctx context.Context, c int) {
	rng := rand.New(rand.NewPCG(uint64(c), uint64(time.Now().UnixNano())))
	hc := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 4}}
	defer hc.CloseIdleConnections()
	id := c
	// pause grows after each outcome that is unknown, as a real client
	// backs off from a member that just failed: a member down behind a
	// proxy that accepts and then drops connections (compose's) would
	// otherwise turn every attempt of the outage into another write of
	// unknown outcome, and porcupine's search grows fast with those (a
	// compose crash-all run left 143, and its check ran out of time).
	var pause time.Duration
	for ctx.Err() == nil {
		if pause > 0 {
			select {
			case <-time.After(pause):
			case <-ctx.Done():
				return
			}
		}
		in := w.nextInput(rng)
		// Like a client given every member's address, it moves on to the
		// next member when one refuses the connection.
		first := rng.IntN(len(w.URLs))
		sent := false
		w.Stats.Attempts.Add(1)
		for try := 0; try < len(w.URLs) && !sent; try++ {
			// The run's end stops new operations, not those in flight.
			var op model.Op
			op, sent = w.Do(context.WithoutCancel(ctx), hc, (first+try)%len(w.URLs), in)
			if sent {
				op.Client = id
				w.History.Add(op)
				if op.Output.Unknown {
					w.Stats.Unknown.Add(1)
					id += w.Concurrency
					pause = min(max(2*pause, 50*time.Millisecond), time.Second)
				} else {
					w.Stats.Definite.Add(1)
					pause = 0
				}
			}
		}
		if !sent {
			w.Stats.Refused.Add(1)
			time.Sleep(20 * time.Millisecond)
		}
	}
}

// nextInput picks an operation.
func (w *Clients) nextInput(rng *rand.Rand) model.Input {
	fams := w.families()
	var in model.Input
	total := 0
	for _, wt := range opWeights {
		total += wt
	}
	r := rng.IntN(total)
	for k, wt := range opWeights {
		if r < wt {
			in.Kind = model.Kind(k)
			break
		}
		r -= wt
	}
	if !in.Kind.Multi() {
		f := fams[rng.IntN(len(fams))]
		in.Key = f[rng.IntN(len(f))]
	} else {
		in.Keys = w.pickKeys(rng, in.Kind == model.Query)
		in.OneGroup = w.oneGroup(in.Keys)
	}
	switch in.Kind {
	case model.Put, model.PutIfAbsent, model.Replace:
		in.Value = w.Values.Add(1)
	case model.CAS:
		in.Value = w.Values.Add(1)
		in.Old = w.expected(rng, in.Key)
		if rng.IntN(5) == 0 {
			in.Old = w.unlikely(rng)
		}
	case model.MultiPut, model.MultiReplace, model.MultiCAS:
		for range in.Keys {
			in.Values = append(in.Values, w.Values.Add(1))
		}
		if in.Kind == model.MultiCAS {
			for _, k := range in.Keys {
				in.Olds = append(in.Olds, w.expected(rng, k))
			}
			if rng.IntN(5) == 0 {
				in.Olds[rng.IntN(len(in.Olds))] = w.unlikely(rng)
			}
		}
	}
	return in
}

// pickKeys picks distinct keys, in random order: two thirds of the time
// some keys of one family (a query may take just one), else some of two
// families (in different partition groups when the region has several).
func (w *Clients) pickKeys(rng *rand.Rand, query bool) []string {
	fams := w.families()
	some := func(f []string, least int) []string {
		n := least + rng.IntN(len(f)-least+1)
		idx := rng.Perm(len(f))[:n]
		out := make([]string, n)
		for i, j := range idx {
			out[i] = f[j]
		}
		return out
	}
	least := 2
	if query {
		least = 1
	}
	a := rng.IntN(len(fams))
	if len(fams) == 1 || rng.IntN(3) != 0 {
		return some(fams[a], min(least, len(fams[a])))
	}
	b := (a + 1 + rng.IntN(len(fams)-1)) % len(fams)
	keys := append(some(fams[a], 1), some(fams[b], 1)...)
	rng.Shuffle(len(keys), func(i, j int) { keys[i], keys[j] = keys[j], keys[i] })
	return keys
}

// expected is the value a CAS expects key to hold: one recently seen, or
// one that cannot match when none was.
func (w *Clients) expected(rng *rand.Rand, key string) int64 {
	w.seenMu.Lock()
	v := w.seen[key]
	w.seenMu.Unlock()
	if v == model.Absent {
		return w.unlikely(rng)
	}
	return v
}

func (w *Clients) unlikely(rng *rand.Rand) int64 {
	return 1 + rng.Int64N(max(1, w.Values.Load()))
}

// Do performs one operation through member m. sent is false when the
// request certainly never reached kvnode (the connection was refused):
// such an operation did not happen and is not part of the history.
func (w *Clients) Do(ctx context.Context, hc *http.Client, m int, in model.Input) (op model.Op, sent bool) {
	op = model.Op{Input: in, Member: w.Names[m], Call: w.History.Now()}
	status, body, err := w.request(ctx, hc, w.URLs[m], in)
	op.Return = w.History.Now()
	if err != nil {
		if IsRefused(err) {
			return op, false
		}
		op.Output = model.Output{Unknown: true}
		op.Error = err.Error()
		return op, true
	}
	if status >= 500 {
		op.Output = model.Output{Unknown: true}
		op.Error = fmt.Sprintf("%d %s", status, body)
		return op, true
	}
	op.Output = model.Output{Status: status}
	var perr error
	switch {
	case (in.Kind == model.Get && status == 200) || status == 409:
		op.Output.Value, perr = ParseValue(body)
		key := in.Key
		if in.Kind == model.MultiCAS {
			key = "" // the 409 names the key in Location; CAS olds come from reads
		}
		if key != "" {
			w.observe(key, op.Output.Value)
		}
	case in.Kind == model.MultiGet && status == 200:
		op.Output.Values, perr = parseMultiGet(body, w.Region, len(in.Keys))
	case in.Kind == model.Query && status == 200:
		op.Output.Values, perr = parseQueryRows(body, in.Keys)
	}
	if perr != nil {
		// An answer the model cannot explain: keep it as a status of its
		// own so the checker reports it.
		op.Output.Status = -status
		op.Error = perr.Error()
	}
	for i, v := range op.Output.Values {
		if v != model.Absent {
			w.observe(in.Keys[i], v)
		}
	}
	if status == 200 || status == 201 {
		switch in.Kind {
		case model.Put, model.PutIfAbsent, model.Replace, model.CAS:
			w.observe(in.Key, in.Value)
		case model.MultiPut, model.MultiReplace, model.MultiCAS:
			for i, k := range in.Keys {
				w.observe(k, in.Values[i])
			}
		}
	}
	return op, true
}

func (w *Clients) observe(key string, v int64) {
	w.seenMu.Lock()
	w.seen[key] = v
	w.seenMu.Unlock()
}

// request sends in as its REST form and returns the status and body.
func (w *Clients) request(ctx context.Context, hc *http.Client, base string, in model.Input) (int, []byte, error) {
	ctx, cancel := context.WithTimeout(ctx, w.Timeout)
	defer cancel()
	path := base + "/kv/v1/" + w.Region
	stale := ""
	if w.StaleReads {
		stale = "&consistency=stale"
	}
	multi := path + "/" + strings.Join(in.Keys, ",")
	var method string
	var body []byte
	switch in.Kind {
	case model.Get:
		method, path = http.MethodGet, path+"/"+in.Key
		if w.StaleReads {
			path += "?consistency=stale"
		}
	case model.Put:
		method, path, body = http.MethodPut, path+"/"+in.Key, ValueJSON(in.Value)
	case model.PutIfAbsent:
		method, path, body = http.MethodPost, path+"?key="+in.Key, ValueJSON(in.Value)
	case model.Replace:
		method, path, body = http.MethodPut, path+"/"+in.Key+"?op=REPLACE", ValueJSON(in.Value)
	case model.CAS:
		method, path, body = http.MethodPut, path+"/"+in.Key+"?op=CAS", casJSON(in.Old, in.Value)
	case model.Delete:
		method, path = http.MethodDelete, path+"/"+in.Key
	case model.MultiGet:
		method, path = http.MethodGet, multi+"?ignoreMissingKey=true"+stale
	case model.MultiPut, model.MultiReplace:
		elems := make([][]byte, len(in.Keys))
		for i := range in.Keys {
			elems[i] = ValueJSON(in.Values[i])
		}
		method, path, body = http.MethodPut, multi, jsonArray(elems)
		if in.Kind == model.MultiReplace {
			path += "?op=REPLACE"
		}
	case model.MultiCAS:
		elems := make([][]byte, len(in.Keys))
		for i := range in.Keys {
			elems[i] = casJSON(in.Olds[i], in.Values[i])
		}
		method, path, body = http.MethodPut, multi+"?op=CAS", jsonArray(elems)
	case model.MultiDelete:
		method, path = http.MethodDelete, multi
	case model.Query:
		method, path = http.MethodGet, base+"/kv/v1/queries/adhoc?q="+url.QueryEscape(queryText(w.Region, in.Keys))+stale
	}
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, path, rd)
	if err != nil {
		return 0, nil, err
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := hc.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return 0, nil, err
	}
	return resp.StatusCode, b, nil
}

// ValueJSON is the value every writer of a run writes, {"v":N}: N unique
// in the run for the clients, so that a read names the write it saw.
func ValueJSON(v int64) []byte { return []byte(fmt.Sprintf(`{"v":%d}`, v)) }

func casJSON(old, v int64) []byte {
	return []byte(fmt.Sprintf(`{"@old":%s,"@new":%s}`, ValueJSON(old), ValueJSON(v)))
}

func jsonArray(elems [][]byte) []byte {
	return append(append([]byte{'['}, bytes.Join(elems, []byte{','})...), ']')
}

// queryText is the query that reads keys with their values: one row per
// key present, {"k":key,"v":N}.
func queryText(region string, keys []string) string {
	quoted := make([]string, len(keys))
	for i, k := range keys {
		quoted[i] = "'" + k + "'"
	}
	return fmt.Sprintf("SELECT e.key AS k, e.value.v AS v FROM /%s.entrySet e WHERE e.key IN SET(%s)", region, strings.Join(quoted, ", "))
}

// parseMultiGet reads {"<region>":[{"v":N} or null, ...]}, n values.
func parseMultiGet(b []byte, region string, n int) ([]int64, error) {
	var doc map[string][]json.RawMessage
	if err := json.Unmarshal(b, &doc); err != nil {
		return nil, err
	}
	raw, ok := doc[region]
	if !ok || len(doc) != 1 || len(raw) != n {
		return nil, fmt.Errorf("want {%q: [%d values]}, got %s", region, n, b)
	}
	out := make([]int64, n)
	for i, r := range raw {
		if string(r) == "null" {
			continue
		}
		v, err := ParseValue(r)
		if err != nil {
			return nil, err
		}
		out[i] = v
	}
	return out, nil
}

// parseQueryRows reads a query's rows into the value of each of keys
// (model.Absent where no row names it); a row for another key, or a key
// named twice, is an error.
func parseQueryRows(b []byte, keys []string) ([]int64, error) {
	var rows []struct {
		K *string `json:"k"`
		V *int64  `json:"v"`
	}
	if err := json.Unmarshal(b, &rows); err != nil {
		return nil, err
	}
	out := make([]int64, len(keys))
	done := make([]bool, len(keys))
	for _, r := range rows {
		if r.K == nil || r.V == nil {
			return nil, fmt.Errorf("a row without k or v in %s", b)
		}
		i := slices.Index(keys, *r.K)
		if i < 0 || done[i] {
			return nil, fmt.Errorf("row for %q unasked for or repeated in %s", *r.K, b)
		}
		out[i], done[i] = *r.V, true
	}
	return out, nil
}

// ParseValue reads {"v":N}, a value ValueJSON wrote.
func ParseValue(b []byte) (int64, error) {
	var v struct {
		V *int64 `json:"v"`
	}
	if err := json.Unmarshal(b, &v); err != nil {
		return 0, err
	}
	if v.V == nil {
		return 0, fmt.Errorf("no value in %q", b)
	}
	return *v.V, nil
}

// IsRefused reports whether err means the request was never sent: the
// connection could not be opened.
func IsRefused(err error) bool {
	var op *net.OpError
	if errors.As(err, &op) && op.Op == "dial" {
		return true
	}
	return strings.Contains(err.Error(), "connection refused")
}
