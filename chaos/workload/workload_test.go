package workload

import (
	"context"
	"encoding/json"
	"math/rand/v2"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/kvnode/kvnode/chaos/model"
	"github.com/kvnode/kvnode/partition"
)

// TestFamiliesLandInOneGroup: on a partitioned region every family's keys
// are in one partition group (what the per-family model needs), families
// are spread over the groups, and oneGroup tells requests that span groups.
func TestFamiliesLandInOneGroup(t *testing.T) {
	w := &Clients{Partitioned: true, Groups: 3}
	fams := w.families()
	if len(fams) != 8 {
		t.Fatalf("%d families, want 8", len(fams))
	}
	for f, keys := range fams {
		if len(keys) != 2 {
			t.Errorf("family %d: %v, want 2 keys", f, keys)
		}
		for _, k := range keys {
			if got, want := partition.GroupForKey(k, 3), uint64(1+f%3); got != want {
				t.Errorf("key %s of family %d in group %d, want %d", k, f, got, want)
			}
			if model.FamilyOf(k) != model.FamilyOf(keys[0]) {
				t.Errorf("key %s not named after its family %s", k, model.FamilyOf(keys[0]))
			}
		}
	}
	if !w.oneGroup([]string{fams[0][0], fams[3][1]}) || w.oneGroup([]string{fams[0][0], fams[1][0]}) {
		t.Errorf("oneGroup: families 0 and 3 share group 1, families 0 and 1 do not")
	}
	r := &Clients{}
	if !r.oneGroup([]string{r.families()[0][0], r.families()[1][0]}) {
		t.Errorf("a replicated region is one group")
	}
}

// TestFamiliesWithMoves: when buckets move, a family's keys share a
// bucket (in the family's group at the start), and only requests within
// one bucket count as one Raft command.
func TestFamiliesWithMoves(t *testing.T) {
	w := &Clients{Partitioned: true, Groups: 3, Moves: true}
	fams := w.families()
	for f, keys := range fams {
		for _, k := range keys {
			if partition.Bucket(k) != partition.Bucket(keys[0]) || partition.GroupForKey(k, 3) != uint64(1+f%3) {
				t.Errorf("key %s of family %d: bucket %d (first key's %d), group %d", k, f, partition.Bucket(k), partition.Bucket(keys[0]), partition.GroupForKey(k, 3))
			}
		}
	}
	if !w.oneGroup(fams[0]) || w.oneGroup([]string{fams[0][0], fams[3][1]}) {
		t.Errorf("oneGroup with moves: a family is one bucket; families 0 and 3 share a group at the start, not a bucket")
	}
}

// TestMultiKeyInputs: multi-key requests name distinct keys with a value
// (and an expected value for CAS) each, at least two for a write.
func TestMultiKeyInputs(t *testing.T) {
	w := &Clients{Partitioned: true, Groups: 3, Values: &atomic.Int64{}, seen: map[string]int64{}}
	rng := rand.New(rand.NewPCG(1, 2))
	spans := 0
	for range 2000 {
		in := w.nextInput(rng)
		if !in.Kind.Multi() {
			continue
		}
		sorted := slices.Sorted(slices.Values(in.Keys))
		if len(slices.Compact(sorted)) != len(in.Keys) || (in.Kind != model.Query && len(in.Keys) < 2) {
			t.Fatalf("%v: keys %v", in.Kind, in.Keys)
		}
		switch in.Kind {
		case model.MultiPut, model.MultiReplace, model.MultiCAS:
			if len(in.Values) != len(in.Keys) || (in.Kind == model.MultiCAS) != (len(in.Olds) == len(in.Keys)) {
				t.Fatalf("%v: %d keys, values %v, olds %v", in.Kind, len(in.Keys), in.Values, in.Olds)
			}
		}
		if in.OneGroup != w.oneGroup(in.Keys) {
			t.Fatalf("%v on %v: OneGroup %v", in.Kind, in.Keys, in.OneGroup)
		}
		if !in.OneGroup {
			spans++
		}
	}
	if spans == 0 {
		t.Errorf("no request spanned groups")
	}
}

func TestParseAnswers(t *testing.T) {
	vals, err := parseValues([]json.RawMessage{json.RawMessage(`{"v":3}`), nil}, 2)
	if err != nil || !slices.Equal(vals, []int64{3, model.Absent}) {
		t.Errorf("multi-get: %v, %v", vals, err)
	}
	if _, err := parseValues([]json.RawMessage{json.RawMessage(`{"v":3}`)}, 2); err == nil {
		t.Errorf("multi-get with a value missing: no error")
	}
	rows := func(s ...string) []json.RawMessage {
		out := make([]json.RawMessage, len(s))
		for i, r := range s {
			out[i] = json.RawMessage(r)
		}
		return out
	}
	keys := []string{"a-1", "a-2", "a-3"}
	vals, err = parseQueryRows(rows(`{"k":"a-3","v":7}`, `{"k":"a-1","v":5}`), keys)
	if err != nil || !slices.Equal(vals, []int64{5, model.Absent, 7}) {
		t.Errorf("query rows: %v, %v", vals, err)
	}
	for _, bad := range [][]json.RawMessage{rows(`{"k":"b-1","v":1}`), rows(`{"k":"a-1","v":1}`, `{"k":"a-1","v":2}`), rows(`{"k":"a-1"}`), rows(`[]`)} {
		if _, err := parseQueryRows(bad, keys); err == nil {
			t.Errorf("query rows %s: no error", bad)
		}
	}
	if got, want := queryText("chaosp", []string{"a-1", "b-2"}), "SELECT e.key AS k, e.value.v AS v FROM /chaosp.entrySet e WHERE e.key IN SET('a-1', 'b-2')"; got != want {
		t.Errorf("query %q, want %q", got, want)
	}
}

// TestDoOutcomes: Do records each answer as the model must see it: a
// refusal with its status and current value, a 503 without the
// certificate as unknown (the put sent once), a certified 503 or a refused
// connection as never sent, an answer that is not the API's as a status
// of its own; and the member that answered.
func TestDoOutcomes(t *testing.T) {
	var puts atomic.Int64
	member := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case r.Method == http.MethodPost:
			w.WriteHeader(http.StatusConflict)
			_, _ = w.Write([]byte(`{"v":5}`))
		case r.Method == http.MethodPut && r.URL.Query().Get("op") == "CAS":
			w.Header().Set("Kvnode-Outcome", "not-applied")
			w.WriteHeader(http.StatusServiceUnavailable)
		case r.Method == http.MethodPut:
			puts.Add(1)
			w.WriteHeader(http.StatusServiceUnavailable)
		case r.Method == http.MethodDelete:
			w.WriteHeader(http.StatusNotFound)
		case r.Method == http.MethodGet:
			_, _ = w.Write([]byte(`{"r":[{"v":1}]}`)) // one value for two keys
		}
	}))
	defer member.Close()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	dead := "http://" + ln.Addr().String()
	ln.Close()
	w := &Clients{Region: "r", URLs: []string{member.URL, dead}, Names: []string{"n1", "n2"}, History: model.NewHistory(), Timeout: time.Second, seen: map[string]int64{}}
	cl, err := w.NewClient(0, false)
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx := context.Background()
	op, sent := w.Do(ctx, cl, model.Input{Kind: model.PutIfAbsent, Key: "f0-0", Value: 9})
	if !sent || op.Output.Status != 409 || op.Output.Value != 5 || op.Member != "n1" {
		t.Errorf("put-if-absent refused: %+v, sent %v; want 409 with 5 from n1", op, sent)
	}
	op, sent = w.Do(ctx, cl, model.Input{Kind: model.Delete, Key: "f0-0"})
	if !sent || op.Output.Status != 404 || op.Output.Unknown {
		t.Errorf("delete of a missing key: %+v, sent %v; want 404", op, sent)
	}
	op, sent = w.Do(ctx, cl, model.Input{Kind: model.Put, Key: "f0-0", Value: 10})
	if !sent || !op.Output.Unknown || puts.Load() != 1 {
		t.Errorf("put answered 503: %+v, sent %v, %d tries; want unknown after one", op, sent, puts.Load())
	}
	if _, sent = w.Do(ctx, cl, model.Input{Kind: model.CAS, Key: "f0-0", Old: 1, Value: 11}); sent {
		t.Errorf("a CAS certified not applied was recorded")
	}
	op, sent = w.Do(ctx, cl, model.Input{Kind: model.MultiGet, Keys: []string{"f0-0", "f0-1"}})
	if !sent || op.Output.Status != -200 || op.Output.Unknown {
		t.Errorf("multi-get answered with one value for two keys: %+v, sent %v; want status -200", op, sent)
	}
	down, err := w.NewClient(1, false)
	if err != nil {
		t.Fatal(err)
	}
	defer down.Close()
	if _, sent = w.Do(ctx, down, model.Input{Kind: model.Delete, Key: "f0-0"}); sent {
		t.Errorf("a delete to a member refusing connections was recorded")
	}
}
