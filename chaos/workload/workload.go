package workload

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/kvnode/kvnode/chaos/model"
	"github.com/kvnode/kvnode/client"
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
	// Half the clients send each operation straight to its key's leader
	// (single hop, the client's default), half to the members in turn,
	// so that both paths, and the forwarding of a member that does not
	// lead, are under the faults.
	var cls [2]*client.Client
	for i := range cls {
		cl, err := w.NewClient(-1, i == 0)
		if err != nil {
			return
		}
		defer cl.Close()
		cls[i] = cl
	}
	var wg sync.WaitGroup
	for c := range w.Concurrency {
		wg.Add(1)
		go func() {
			defer wg.Done()
			w.client(ctx, c, cls[c%2])
		}()
	}
	wg.Wait()
}

// client is one client's loop, through cl. After an indeterminate
// operation the client takes a new identity, as a real client would retry
// as a new request: porcupine's clients are sequential.
func (w *Clients) client(ctx context.Context, c int, cl *client.Client) {
	rng := rand.New(rand.NewPCG(uint64(c), uint64(time.Now().UnixNano())))
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
		w.Stats.Attempts.Add(1)
		// The run's end stops new operations, not those in flight.
		op, sent := w.Do(context.WithoutCancel(ctx), cl, in)
		if !sent {
			w.Stats.Refused.Add(1)
			time.Sleep(20 * time.Millisecond)
			continue
		}
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

// NewClient is a client of the members for Do, which records the member
// that answered each operation. With member >= 0 it sends every request
// to that member only, as it is (no single hop); otherwise to any member,
// each key's requests straight to its leader when hop.
func (w *Clients) NewClient(member int, hop bool) (*client.Client, error) {
	urls := w.URLs
	if member >= 0 {
		urls = []string{w.URLs[member]}
	}
	return client.New(client.Config{Endpoints: urls, DisableSingleHop: !hop || member >= 0,
		Transport: newRecorder(max(w.Concurrency, 4))})
}

func (w *Clients) timeout() time.Duration {
	if w.Timeout == 0 {
		return 3 * time.Second
	}
	return w.Timeout
}

// Do performs one operation with cl (made by NewClient) and records what
// came back. sent is false when the operation certainly did not take
// effect: every try was refused the connection, or (a write) answered 503
// with the certificate that nothing was written (Kvnode-Outcome:
// not-applied). Such an operation did not happen and is not part of the
// history; were it applied after all, its value, unique in the run, would
// show up in reads that the checker could not explain.
//
// Every write is sent again only when it cannot have been applied (puts
// with client.AtMostOnce): a put the client sent twice would be applied
// twice, which one operation in the history does not describe. Reads are
// sent again freely: the operation's interval covers every try.
func (w *Clients) Do(ctx context.Context, cl *client.Client, in model.Input) (op model.Op, sent bool) {
	ctx, cancel := context.WithTimeout(ctx, w.timeout())
	defer cancel()
	ex := &exchange{}
	ctx = context.WithValue(ctx, exchangeKey{}, ex)
	op = model.Op{Input: in, Call: w.History.Now()}
	got, err := w.perform(ctx, cl, in)
	op.Return = w.History.Now()
	op.Member = w.memberName(ex.last())
	status, complete := ex.answer()
	write := in.Kind != model.Get && in.Kind != model.MultiGet && in.Kind != model.Query
	var ae *client.Error
	switch {
	case err == nil:
		op.Output.Status = status
	case errors.Is(err, client.ErrOutcomeUnknown):
		op.Output = model.Output{Unknown: true}
		op.Error = errorText(err)
		return op, true
	case errors.As(err, &ae) && ae.Status < 500:
		// A definite answer: a refusal (400, 404, 409), or one the model
		// rejects.
		op.Output.Status = ae.Status
		got.value = ae.Body
	case errors.As(err, &ae) && ae.Status == http.StatusServiceUnavailable && write:
		// Not ErrOutcomeUnknown: every try certified that nothing was
		// written, or was refused.
		return op, false
	case errors.As(err, &ae):
		op.Output = model.Output{Unknown: true}
		op.Error = errorText(err)
		return op, true
	case IsRefused(err):
		return op, false // no member took the request
	case complete && status >= 200 && status <= 299:
		// A whole answer the client could not read as the API says.
		op.Output.Status = -status
		op.Error = err.Error()
		return op, true
	default:
		op.Output = model.Output{Unknown: true}
		op.Error = errorText(err)
		return op, true
	}
	w.judge(&op, got)
	return op, true
}

// answer is what an operation's request brought back: a value (GET, or a
// 409's current value), a multi-key GET's values, a query's rows.
type answer struct {
	value  json.RawMessage
	values []json.RawMessage
	rows   []json.RawMessage
}

// judge reads a definite answer into op's output, and remembers values
// seen for the CAS inputs to come.
func (w *Clients) judge(op *model.Op, got answer) {
	in, status := op.Input, op.Output.Status
	var perr error
	switch {
	case (in.Kind == model.Get && status == 200) || status == 409:
		op.Output.Value, perr = ParseValue(got.value)
		key := in.Key
		if in.Kind == model.MultiCAS {
			key = "" // the 409 names the key in Location; CAS olds come from reads
		}
		if key != "" && perr == nil {
			w.observe(key, op.Output.Value)
		}
	case in.Kind == model.MultiGet && status == 200:
		op.Output.Values, perr = parseValues(got.values, len(in.Keys))
	case in.Kind == model.Query && status == 200:
		op.Output.Values, perr = parseQueryRows(got.rows, in.Keys)
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
}

func (w *Clients) observe(key string, v int64) {
	w.seenMu.Lock()
	w.seen[key] = v
	w.seenMu.Unlock()
}

// errorText is why an outcome is unknown, for the history and the
// report's causes: an answer's status and body, or the client's error.
func errorText(err error) string {
	var ae *client.Error
	if errors.As(err, &ae) {
		return fmt.Sprintf("%d %s", ae.Status, ae.Body)
	}
	return err.Error()
}

// perform sends in as its REST form through cl.
func (w *Clients) perform(ctx context.Context, cl *client.Client, in model.Input) (answer, error) {
	r := cl.Region(w.Region)
	var read []client.Option
	if w.StaleReads {
		read = append(read, client.Stale())
	}
	entries := func() []client.Entry {
		out := make([]client.Entry, len(in.Keys))
		for i, k := range in.Keys {
			out[i] = client.Entry{Key: k, Value: ValueJSON(in.Values[i])}
		}
		return out
	}
	var got answer
	var err error
	switch in.Kind {
	case model.Get:
		got.value, err = r.Get(ctx, in.Key, read...)
	case model.Put:
		err = r.Put(ctx, in.Key, ValueJSON(in.Value), client.AtMostOnce())
	case model.PutIfAbsent:
		_, err = r.Create(ctx, in.Key, ValueJSON(in.Value))
	case model.Replace:
		err = r.Replace(ctx, in.Key, ValueJSON(in.Value))
	case model.CAS:
		err = r.CompareAndSet(ctx, in.Key, ValueJSON(in.Old), ValueJSON(in.Value))
	case model.Delete:
		err = r.Delete(ctx, in.Key)
	case model.MultiGet:
		got.values, err = r.GetMany(ctx, in.Keys, read...)
	case model.MultiPut:
		err = r.PutAll(ctx, entries(), client.AtMostOnce())
	case model.MultiReplace:
		err = r.ReplaceAll(ctx, entries())
	case model.MultiCAS:
		swaps := make([]client.Swap, len(in.Keys))
		for i, k := range in.Keys {
			swaps[i] = client.Swap{Key: k, Old: ValueJSON(in.Olds[i]), New: ValueJSON(in.Values[i])}
		}
		err = r.CompareAndSetAll(ctx, swaps)
	case model.MultiDelete:
		err = r.Delete(ctx, in.Keys...)
	case model.Query:
		// Always linearizable: the client's Query has no stale form.
		got.rows, err = cl.Query(ctx, queryText(w.Region, in.Keys))
	default:
		err = fmt.Errorf("no REST form for %v", in.Kind)
	}
	return got, err
}

// ValueJSON is the value every writer of a run writes, {"v":N}: N unique
// in the run for the clients, so that a read names the write it saw.
func ValueJSON(v int64) []byte { return []byte(fmt.Sprintf(`{"v":%d}`, v)) }

// queryText is the query that reads keys with their values: one row per
// key present, {"k":key,"v":N}.
func queryText(region string, keys []string) string {
	quoted := make([]string, len(keys))
	for i, k := range keys {
		quoted[i] = "'" + k + "'"
	}
	return fmt.Sprintf("SELECT e.key AS k, e.value.v AS v FROM /%s.entrySet e WHERE e.key IN SET(%s)", region, strings.Join(quoted, ", "))
}

// parseValues reads a multi-key GET's values, n of them, {"v":N} or nil
// for a missing key.
func parseValues(raw []json.RawMessage, n int) ([]int64, error) {
	if len(raw) != n {
		return nil, fmt.Errorf("%d values for %d keys", len(raw), n)
	}
	out := make([]int64, n)
	for i, r := range raw {
		if r == nil {
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
func parseQueryRows(rows []json.RawMessage, keys []string) ([]int64, error) {
	out := make([]int64, len(keys))
	done := make([]bool, len(keys))
	for _, raw := range rows {
		var r struct {
			K *string `json:"k"`
			V *int64  `json:"v"`
		}
		if err := json.Unmarshal(raw, &r); err != nil {
			return nil, fmt.Errorf("row %s: %w", raw, err)
		}
		if r.K == nil || r.V == nil {
			return nil, fmt.Errorf("a row without k or v: %s", raw)
		}
		i := slices.Index(keys, *r.K)
		if i < 0 || done[i] {
			return nil, fmt.Errorf("row for %q unasked for or repeated: %s", *r.K, raw)
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
// connection could not be opened (by the client: every member it tried
// refused it).
func IsRefused(err error) bool {
	var ae *client.Error
	if errors.Is(err, client.ErrUnavailable) && !errors.As(err, &ae) {
		return true
	}
	var op *net.OpError
	if errors.As(err, &op) && op.Op == "dial" {
		return true
	}
	return strings.Contains(err.Error(), "connection refused")
}
