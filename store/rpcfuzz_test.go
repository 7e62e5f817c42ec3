package store

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/kvnode/kvnode/fsm/codec"
	"github.com/kvnode/kvnode/region"
	"github.com/kvnode/kvnode/store/transport"
)

// fuzzRoutes are the RPCs a member serves to the others on the internal
// port, each by its name under /v1/groups/{gid}/ (status is GET
// /v1/status). leave is left out: it removes the caller's member from a
// group, which an accepted peer may ask for (docs/operations.md).
var fuzzRoutes = []string{"apply", "applybatch", "scan", "readindex", "term", "snapshot", "read", "watch", "bucket", "query", "status"}

// rpcFuzzMember starts a one-member store with a replicated and a
// partitioned region holding a few entries, for a whole fuzz run (it lives
// until f's cleanup; one started in an input's t would be closed after
// that input).
func rpcFuzzMember(f *testing.F) *testNode {
	tc := newTestCluster(f, 1)
	n := tc.start("a")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for _, info := range []region.Info{{Name: "rep", Kind: region.Replicate}, {Name: "part", Kind: region.Partition}} {
		if err := n.CreateRegion(ctx, info); err != nil {
			f.Fatal(err)
		}
		var es []region.Entry
		for i := range 20 {
			es = append(es, region.Entry{Key: fmt.Sprint("k", i), Value: json.RawMessage(fmt.Sprintf(`{"i":%d}`, i))})
		}
		if err := n.API.Put(ctx, info.Name, es, region.TTL{}); err != nil {
			f.Fatal(err)
		}
	}
	return n
}

// FuzzRPC sends whatever a broken or hostile member might to every RPC of
// a live member: any route, group and body. Each answer is a 200 or a
// refusal that carries its code (or net/http's 4xx for what is not a
// request at all); no input panics the member, and it goes on answering.
func FuzzRPC(f *testing.F) {
	put := (&codec.Command{Op: codec.OpPut, Region: "rep", Entries: []region.Entry{{Key: "f", Value: json.RawMessage(`{"f":1}`)}}}).Encode(nil)
	batch := binary.AppendUvarint(nil, uint64(len(put)))
	batch = append(batch, put...)
	seeds := map[string][]string{
		"apply":      {string(put), string(put[:len(put)/2])},
		"applybatch": {string(batch), "\x05abc"},
		"scan":       {`{"region":"rep","id":2,"limit":5}`, `{"region":"part","limit":-1,"peek":1000000000}`},
		"read":       {`{"op":"get","region":"rep","keys":["k1","nope"]}`, `{"op":"list","region":"part","limit":1000000000}`, `{"op":"keys","region":"zz"}`},
		"watch":      {`{"region":"rep","after":{"index":1},"max":10,"waitMs":50}`, `{"region":"rep","max":-1,"waitMs":-5,"capture":true}`},
		"bucket":     {`{"bucket":3,"max":100}`, `{"bucket":113,"max":0}`, `{"bucket":-1}`},
		"query":      {`{"text":"SELECT * FROM /rep WHERE i > $1","params":[3]}`, `{"text":"SELECT","params":{"x":1}}`},
		"readindex":  {""},
		"term":       {""},
		"snapshot":   {""},
		"status":     {""},
	}
	for i, route := range fuzzRoutes {
		for _, body := range seeds[route] {
			for _, gid := range []uint8{1, 2, 0, 200} {
				f.Add(uint8(i), gid, "id=a", []byte(body))
			}
		}
	}
	n := rpcFuzzMember(f)
	f.Fuzz(func(t *testing.T, route, gid uint8, query string, body []byte) {
		name := fuzzRoutes[int(route)%len(fuzzRoutes)]
		method, path := http.MethodPost, fmt.Sprintf("/v1/groups/%d/%s", gid, name)
		if name == "status" {
			method, path = http.MethodGet, "/v1/status"
		}
		req, err := http.NewRequest(method, "http://member"+path, bytes.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		req.URL.RawQuery = query
		// Long polls (watch) and waits for a leader end soon.
		req.Header.Set(transport.HeaderTimeout, "200")
		w := httptest.NewRecorder()
		n.Store.rpc.srv.Handler.ServeHTTP(w, req)
		switch code := w.Code; {
		case code == http.StatusOK:
		case code == http.StatusServiceUnavailable && w.Header().Get(transport.HeaderError) != "":
		case code >= 400 && code < 500:
		default:
			t.Fatalf("%s %s (%d bytes): status %d without a code: %.200s", method, path, len(body), code, w.Body.String())
		}
		// The member still serves: its status lists its groups, each led.
		w = httptest.NewRecorder()
		n.Store.rpc.srv.Handler.ServeHTTP(w, httptest.NewRequest(http.MethodGet, "/v1/status", nil))
		var st NodeStatus
		if w.Code != http.StatusOK || json.Unmarshal(w.Body.Bytes(), &st) != nil || len(st.Groups) == 0 {
			t.Fatalf("after %s %s: status answered %d %.200s", method, path, w.Code, w.Body.String())
		}
		for _, g := range st.Groups {
			if g.Leader != "a" {
				t.Fatalf("after %s %s: group %d has leader %q", method, path, g.ID, g.Leader)
			}
		}
	})
}
