package chaos

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
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Workload is concurrent clients doing single-key operations on a few keys
// of one region, each operation through a member chosen at random, every
// one recorded in History.
type Workload struct {
	Region  string
	Keys    int           // distinct keys (k0..); 8 when zero
	Clients int           // concurrent clients; 6 when zero
	Timeout time.Duration // a client gives up on a request after this; 3s when zero
	// URLs are the members' REST base URLs; Names their node names.
	URLs, Names []string
	History     *History
	// Values hands out written values, unique across workloads sharing it.
	Values *atomic.Int64
	// StaleReads makes GETs read a member's own replica
	// (?consistency=stale), which is not linearizable: a run with it shows
	// that the checker catches the anomalies it should.
	StaleReads bool
	// Stats counts what happened.
	Stats WorkloadStats

	seenMu sync.Mutex
	seen   map[string]int64 // a value recently observed per key, for CAS
}

// WorkloadStats counts operations by outcome.
type WorkloadStats struct {
	Attempts atomic.Int64 // operations a client wanted done
	Definite atomic.Int64 // answered with a status the model judges
	Unknown  atomic.Int64 // timeouts, 5xx, cut connections
	Refused  atomic.Int64 // every member refused the connection: never sent
}

// opWeights is the operation mix, in Kind order: reads, blind writes and
// the conditional forms, with enough deletes that put-if-absent and the
// 400 forms of REPLACE and CAS happen.
var opWeights = [...]int{Get: 30, Put: 20, PutIfAbsent: 15, Replace: 10, CAS: 18, Delete: 7}

// Run runs the clients until ctx ends.
func (w *Workload) Run(ctx context.Context) {
	if w.Keys == 0 {
		w.Keys = 8
	}
	if w.Clients == 0 {
		w.Clients = 6
	}
	if w.Timeout == 0 {
		w.Timeout = 3 * time.Second
	}
	w.seen = map[string]int64{}
	var wg sync.WaitGroup
	for c := range w.Clients {
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
func (w *Workload) client(ctx context.Context, c int) {
	rng := rand.New(rand.NewPCG(uint64(c), uint64(time.Now().UnixNano())))
	hc := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 4}}
	defer hc.CloseIdleConnections()
	id := c
	for ctx.Err() == nil {
		in := w.nextInput(rng)
		// Like a client given every member's address, it moves on to the
		// next member when one refuses the connection.
		first := rng.IntN(len(w.URLs))
		sent := false
		w.Stats.Attempts.Add(1)
		for try := 0; try < len(w.URLs) && !sent; try++ {
			// The run's end stops new operations, not those in flight.
			var op Op
			op, sent = w.Do(context.WithoutCancel(ctx), hc, (first+try)%len(w.URLs), in)
			if sent {
				op.Client = id
				w.History.Add(op)
				if op.Output.Unknown {
					w.Stats.Unknown.Add(1)
					id += w.Clients
				} else {
					w.Stats.Definite.Add(1)
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
func (w *Workload) nextInput(rng *rand.Rand) Input {
	in := Input{Key: fmt.Sprintf("k%d", rng.IntN(w.Keys))}
	total := 0
	for _, wt := range opWeights {
		total += wt
	}
	r := rng.IntN(total)
	for k, wt := range opWeights {
		if r < wt {
			in.Kind = Kind(k)
			break
		}
		r -= wt
	}
	switch in.Kind {
	case Put, PutIfAbsent, Replace:
		in.Value = w.Values.Add(1)
	case CAS:
		in.Value = w.Values.Add(1)
		w.seenMu.Lock()
		in.Old = w.seen[in.Key]
		w.seenMu.Unlock()
		if in.Old == Absent || rng.IntN(5) == 0 {
			// Sometimes a value that cannot match.
			in.Old = 1 + rng.Int64N(max(1, w.Values.Load()))
		}
	}
	return in
}

// Do performs one operation through member m. sent is false when the
// request certainly never reached kvnode (the connection was refused):
// such an operation did not happen and is not part of the history.
func (w *Workload) Do(ctx context.Context, hc *http.Client, m int, in Input) (op Op, sent bool) {
	op = Op{Input: in, Member: w.Names[m], Call: w.History.Now()}
	status, body, err := w.request(ctx, hc, w.URLs[m], in)
	op.Return = w.History.Now()
	if err != nil {
		if isRefused(err) {
			return op, false
		}
		op.Output = Output{Unknown: true}
		op.Error = err.Error()
		return op, true
	}
	if status >= 500 {
		op.Output = Output{Unknown: true}
		op.Error = fmt.Sprintf("%d %s", status, body)
		return op, true
	}
	op.Output = Output{Status: status}
	if (in.Kind == Get && status == 200) || status == 409 {
		v, perr := parseValue(body)
		if perr != nil {
			// An answer the model cannot explain: keep it as a status
			// of its own so the checker reports it.
			op.Output.Status = -status
		}
		op.Output.Value = v
		w.observe(in.Key, v)
	}
	if status == 200 || status == 201 {
		switch in.Kind {
		case Put, PutIfAbsent, Replace, CAS:
			w.observe(in.Key, in.Value)
		}
	}
	return op, true
}

func (w *Workload) observe(key string, v int64) {
	w.seenMu.Lock()
	w.seen[key] = v
	w.seenMu.Unlock()
}

// request sends in as its REST form and returns the status and body.
func (w *Workload) request(ctx context.Context, hc *http.Client, base string, in Input) (int, []byte, error) {
	ctx, cancel := context.WithTimeout(ctx, w.Timeout)
	defer cancel()
	path := base + "/kv/v1/" + w.Region
	var method string
	var body []byte
	switch in.Kind {
	case Get:
		method, path = http.MethodGet, path+"/"+in.Key
		if w.StaleReads {
			path += "?consistency=stale"
		}
	case Put:
		method, path, body = http.MethodPut, path+"/"+in.Key, valueJSON(in.Value)
	case PutIfAbsent:
		method, path, body = http.MethodPost, path+"?key="+in.Key, valueJSON(in.Value)
	case Replace:
		method, path, body = http.MethodPut, path+"/"+in.Key+"?op=REPLACE", valueJSON(in.Value)
	case CAS:
		method, path = http.MethodPut, path+"/"+in.Key+"?op=CAS"
		body = []byte(fmt.Sprintf(`{"@old":%s,"@new":%s}`, valueJSON(in.Old), valueJSON(in.Value)))
	case Delete:
		method, path = http.MethodDelete, path+"/"+in.Key
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

func valueJSON(v int64) []byte { return []byte(fmt.Sprintf(`{"v":%d}`, v)) }

// parseValue reads {"v":N}.
func parseValue(b []byte) (int64, error) {
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

// isRefused reports whether err means the request was never sent: the
// connection could not be opened.
func isRefused(err error) bool {
	var op *net.OpError
	if errors.As(err, &op) && op.Op == "dial" {
		return true
	}
	return strings.Contains(err.Error(), "connection refused")
}
