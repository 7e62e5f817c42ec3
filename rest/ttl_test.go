package rest

import (
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/kvnode/kvnode/internal/waitfor"
)

// reads is what every read of a region shows of its entries: the keys of
// GET /keys, of the listing (Content-Location), of a query, the count of
// HEAD (Resource-Count) and of COUNT(*). An expired entry must be in none.
func (ts *testServer) reads(t *testing.T, r string) string {
	t.Helper()
	keys := ts.do(t, "GET", "/kv/v1/"+r+"/keys", "", "")
	list := ts.do(t, "GET", "/kv/v1/"+r+"?limit=ALL", "", "")
	head := ts.do(t, "HEAD", "/kv/v1/"+r, "", "")
	q := ts.do(t, "GET", adhoc("SELECT k FROM /"+r+".keySet k ORDER BY k"), "", "")
	n := ts.do(t, "GET", adhoc("SELECT COUNT(*) FROM /"+r), "", "")
	for _, resp := range []response{keys, list, head, q, n} {
		if resp.status != http.StatusOK {
			t.Fatalf("a read of %s answered %d %s, want 200", r, resp.status, resp.body)
		}
	}
	listed := strings.TrimPrefix(list.header.Get("Content-Location"), ts.base+"/kv/v1/"+r)
	return "keys " + keys.body + " listing " + listed + " query " + q.body +
		" count " + head.header.Get("Resource-Count") + " " + n.body
}

// readsOf is what reads shows of a region holding exactly keys (ascending).
func readsOf(keys ...string) string {
	quoted := make([]string, len(keys))
	for i, k := range keys {
		quoted[i] = strconv.Quote(k)
	}
	listed := ""
	if len(keys) > 0 {
		listed = "/" + strings.Join(keys, ",")
	}
	n := strconv.Itoa(len(keys))
	return `keys {"keys":[` + strings.Join(quoted, ",") + "]} listing " + listed +
		" query [" + strings.Join(quoted, ",") + "] count " + n + " [" + n + "]"
}

// TestEntryTimeToLive: over a real single-member store, for both kinds of
// region, entries written with ?ttl= or under the region's entryTimeToLive
// are readable, then gone from every read once their deadline passes;
// ttl=0 overrides the default; every write resets the deadline; a PATCH
// changes the default for later writes; put-if-absent succeeds over an
// expired key.
func TestEntryTimeToLive(t *testing.T) {
	ts := newTestServer(t)
	for _, kind := range []string{"REPLICATE", "PARTITION"} {
		t.Run(kind, func(t *testing.T) {
			r := "ttl" + strings.ToLower(kind)
			put := func(path, body string, want int) {
				t.Helper()
				method := "PUT"
				if strings.HasPrefix(path, "?") {
					method = "POST"
				}
				if got := ts.do(t, method, "/kv/v1/"+r+path, "application/json", body); got.status != want {
					t.Fatalf("%s %s = %d %s, want %d", method, path, got.status, got.body, want)
				}
			}
			expect{status: 201, body: `{"statusCode":"OK","statusMessage":"region ` + r + ` created"}`,
				header: map[string]string{"Location": "{base}/management/v1/regions/" + r}}.check(t, ts,
				ts.do(t, "POST", "/management/v1/regions", "application/json", `{"name":"`+r+`","type":"`+kind+`","entryTimeToLive":2}`))
			ok(`{"statusCode":"OK","result":{"name":"`+r+`","type":"`+kind+`","entryTimeToLive":2}}`, nil).check(t, ts,
				ts.do(t, "GET", "/management/v1/regions/"+r, "", ""))

			// Entries that stay: never (ttl=0 over the default), rep0
			// (written under the default, then replaced with ttl=0).
			put("/never?ttl=0", `{"v":1}`, 200)
			put("/rep0", `{"v":1}`, 200)
			put("/rep0?op=REPLACE&ttl=0", `{"v":2}`, 200)
			put("/rep,cas?ttl=0", `[{"v":1},{"v":1}]`, 200)
			// Entries that expire: the default, an explicit ttl on
			// put-all (keys in several partition groups), REPLACE, CAS and
			// put-if-absent.
			put("/dflt", `{"v":1}`, 200)
			put("/m1,m2,m3,m4?ttl=2", `[{"v":1},{"v":2},{"v":3},{"v":4}]`, 200)
			put("/rep?op=REPLACE&ttl=2", `{"v":2}`, 200)
			put("/cas?op=CAS&ttl=2", `{"@old":{"v":1},"@new":{"v":2}}`, 200)
			put("?key=pia&ttl=2", `{"v":1}`, 201)
			if got, want := ts.reads(t, r), readsOf("cas", "dflt", "m1", "m2", "m3", "m4", "never", "pia", "rep", "rep0"); got != want {
				t.Fatalf("right after the writes: got %s, want %s", got, want)
			}
			ok(`{"v":1}`, nil).check(t, ts, ts.do(t, "GET", "/kv/v1/"+r+"/pia", "", ""))

			waitfor.Cond(t, 15*time.Second, "the entries with a 2 s time-to-live to expire", func() bool {
				return ts.do(t, "GET", "/kv/v1/"+r+"/keys", "", "").body == `{"keys":["never","rep0"]}`
			})
			if got, want := ts.reads(t, r), readsOf("never", "rep0"); got != want {
				t.Fatalf("after the deadlines: got %s, want %s", got, want)
			}
			for _, k := range []string{"dflt", "m1", "m4", "rep", "cas", "pia"} {
				fails(404, "not found").check(t, ts, ts.do(t, "GET", "/kv/v1/"+r+"/"+k, "", ""))
			}
			fails(400, "").check(t, ts, ts.do(t, "GET", "/kv/v1/"+r+"/m1,never", "", ""))
			ok(`{"`+r+`":[null,{"v":1}]}`, nil).check(t, ts, ts.do(t, "GET", "/kv/v1/"+r+"/m1,never?ignoreMissingKey=true", "", ""))
			// An expired key is absent to writes: REPLACE is refused,
			// put-if-absent creates it.
			fails(400, "").check(t, ts, ts.do(t, "PUT", "/kv/v1/"+r+"/dflt?op=REPLACE", "application/json", `{"v":3}`))
			put("?key=dflt&ttl=0", `{"v":3}`, 201)
			ok(`{"v":3}`, nil).check(t, ts, ts.do(t, "GET", "/kv/v1/"+r+"/dflt", "", ""))

			// PATCH: a new default for later writes.
			ok(`{"statusCode":"OK","result":{"name":"`+r+`","type":"`+kind+`","entryTimeToLive":1}}`, nil).check(t, ts,
				ts.do(t, "PATCH", "/management/v1/regions/"+r, "application/json", `{"entryTimeToLive":1}`))
			put("/late", `{"v":1}`, 200)
			waitfor.Cond(t, 15*time.Second, "the entry written under the new 1 s default to expire", func() bool {
				return ts.do(t, "GET", "/kv/v1/"+r+"/late", "", "").status == http.StatusNotFound
			})
			if got, want := ts.reads(t, r), readsOf("dflt", "never", "rep0"); got != want {
				t.Fatalf("after the PATCH: got %s, want %s", got, want)
			}
			ok(`{"statusCode":"OK","result":{"name":"`+r+`","type":"`+kind+`"}}`, nil).check(t, ts,
				ts.do(t, "PATCH", "/management/v1/regions/"+r, "application/json", `{"entryTimeToLive":0}`))
		})
	}
	list := ts.do(t, "GET", "/management/v1/regions", "", "")
	if want := `{"name":"ttlpartition","type":"PARTITION"}`; !strings.Contains(list.body, want) {
		t.Errorf("GET /management/v1/regions = %s, want it to hold %s (no entryTimeToLive once 0)", list.body, want)
	}
}

// TestEntryTimeToLiveRefusals: every bad ttl, entryTimeToLive or region
// change is a 400 (404 for an unknown region) that changes nothing.
func TestEntryTimeToLiveRefusals(t *testing.T) {
	ts := newTestServer(t)
	ts.mkRegion(t, "r", "REPLICATE", "a", `{"v":1}`)
	before := ts.contents(t, "r")
	const cause = "is not a whole number of seconds from 0 (never expires) to 315360000 (ten years)"
	for _, ttl := range []string{"-1", "abc", "1.5", "1s", "315360001", ""} {
		q := "ttl=" + url.QueryEscape(ttl)
		for _, req := range []struct{ method, path, body string }{
			{"PUT", "/kv/v1/r/a?" + q, `{"v":2}`},
			{"PUT", "/kv/v1/r/a,b?" + q, `[{"v":2},{"v":2}]`},
			{"PUT", "/kv/v1/r/a?op=REPLACE&" + q, `{"v":2}`},
			{"PUT", "/kv/v1/r/a?op=CAS&" + q, `{"@old":{"v":1},"@new":{"v":2}}`},
			{"POST", "/kv/v1/r?key=c&" + q, `{"v":2}`},
			{"POST", "/kv/v1/r?" + q, `{"v":2}`},
		} {
			fails(400, `ttl "`+ttl+`" `+cause).check(t, ts, ts.do(t, req.method, req.path, "application/json", req.body))
		}
	}
	if got := ts.contents(t, "r"); got != before {
		t.Errorf("after the refused writes: got %s, want %s", got, before)
	}
	for body, want := range map[string]string{
		`{"name":"s","type":"REPLICATE","entryTimeToLive":-1}`:                                                                  "entryTimeToLive -1 " + cause,
		`{"name":"s","type":"REPLICATE","entryTimeToLive":"60"}`:                                                                `entryTimeToLive "60" ` + cause,
		`{"name":"s","type":"REPLICATE","entryTimeToLive":2.5}`:                                                                 "entryTimeToLive 2.5 " + cause,
		`{"name":"s","type":"REPLICATE","expirations":[{"type":"ENTRY_IDLE_TIME","timeInSeconds":5,"action":"DESTROY"}]}`:       `kvnode supports only {"type":"ENTRY_TIME_TO_LIVE","timeInSeconds":N,"action":"DESTROY"}`,
		`{"name":"s","type":"REPLICATE","expirations":[{"type":"ENTRY_TIME_TO_LIVE","timeInSeconds":5,"action":"INVALIDATE"}]}`: "expirations[0] is ENTRY_TIME_TO_LIVE with action INVALIDATE",
	} {
		fails(400, want).check(t, ts, ts.do(t, "POST", "/management/v1/regions", "application/json", body))
	}
	fails(404, "").check(t, ts, ts.do(t, "GET", "/management/v1/regions/s", "", ""))
	for body, want := range map[string]string{
		`{"entryTimeToLive":-5}`: "entryTimeToLive -5 " + cause,
		`{}`:                     "entryTimeToLive is missing",
		`{"ttl":5}`:              `unknown field "ttl"`,
		`not json`:               "",
	} {
		fails(400, want).check(t, ts, ts.do(t, "PATCH", "/management/v1/regions/r", "application/json", body))
	}
	ok(`{"statusCode":"OK","result":{"name":"r","type":"REPLICATE"}}`, nil).check(t, ts, ts.do(t, "GET", "/management/v1/regions/r", "", ""))
	fails(404, "nope").check(t, ts, ts.do(t, "PATCH", "/management/v1/regions/nope", "application/json", `{"entryTimeToLive":5}`))

	// Geode's shape is an alias of entryTimeToLive.
	expect{status: 201, body: `{"statusCode":"OK","statusMessage":"region g created"}`}.check(t, ts, ts.do(t, "POST", "/management/v1/regions", "application/json",
		`{"name":"g","type":"PARTITION","expirations":[{"type":"ENTRY_TIME_TO_LIVE","timeInSeconds":45,"action":"DESTROY"}]}`))
	ok(`{"statusCode":"OK","result":{"name":"g","type":"PARTITION","entryTimeToLive":45}}`, nil).check(t, ts, ts.do(t, "GET", "/management/v1/regions/g", "", ""))
}
