package rest

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"golang.org/x/crypto/bcrypt"

	"github.com/kvnode/kvnode/auth"
	"github.com/kvnode/kvnode/function"
	"github.com/kvnode/kvnode/region"
)

// fakeFunctions is a Functions with one function, Touch (DATA:WRITE).
type fakeFunctions struct{ ran *int }

func (f fakeFunctions) IDs(context.Context) ([]string, error) { return []string{"Touch"}, nil }
func (f fakeFunctions) Execute(_ context.Context, req function.Request) ([]json.RawMessage, bool, error) {
	if req.ID != "Touch" {
		return nil, false, function.ErrUnknownFunction
	}
	*f.ran++
	return []json.RawMessage{json.RawMessage(`"ok"`)}, true, nil
}
func (f fakeFunctions) Deployments(context.Context) ([]function.Deployment, error) { return nil, nil }
func (f fakeFunctions) Deployment(context.Context, string) (function.Deployment, bool, error) {
	return function.Deployment{ID: "js", Source: "function execute(){}"}, true, nil
}
func (f fakeFunctions) Deploy(context.Context, function.Deployment) (bool, error) { return true, nil }
func (f fakeFunctions) Undeploy(context.Context, string) error                    { return nil }
func (f fakeFunctions) Permission(_ context.Context, id string) (string, error) {
	if id != "Touch" {
		return "", function.ErrUnknownFunction
	}
	return "DATA:WRITE", nil
}

// securityFile has admin (everything) and reader (DATA:READ, CLUSTER:READ).
func securityFile(t *testing.T) *auth.File {
	t.Helper()
	hash := func(pw string) string {
		h, err := bcrypt.GenerateFromPassword([]byte(pw), bcrypt.MinCost)
		if err != nil {
			t.Fatal(err)
		}
		return string(h)
	}
	return &auth.File{
		Users: []auth.User{
			{Name: "admin", Password: hash("admin-pw"), Roles: []string{"admin"}},
			{Name: "reader", Password: hash("reader-pw"), Roles: []string{"reader"}},
			{Name: "ordersOnly", Password: hash("o-pw"), Roles: []string{"orders"}},
		},
		Roles: []auth.Role{
			{Name: "admin", Permissions: []string{"DATA:READ", "DATA:WRITE", "CLUSTER:READ", "CLUSTER:MANAGE"}},
			{Name: "reader", Permissions: []string{"DATA:READ", "CLUSTER:READ"}},
			{Name: "orders", Permissions: []string{"DATA:READ:orders", "DATA:WRITE:orders:k1"}},
		},
	}
}

// TestEveryEndpointUnderSecurity: every endpoint × {no credentials, wrong
// password, reader, admin}: 401, 401, 403 or 2xx by rest-details.md's
// permissions, 2xx; a refused write changes nothing.
func TestEveryEndpointUnderSecurity(t *testing.T) {
	st := newTestStore(t)
	a := auth.New(securityFile(t))
	a.SetFailureLimit(10_000, time.Minute)
	ran := 0
	srv := httptest.NewServer(validated(t, New(Config{Auth: a, Functions: fakeFunctions{ran: &ran}}, st,
		fixedMembers{"http://10.0.0.1:8080"}, fixedCluster{}).Handler()))
	t.Cleanup(srv.Close)
	ts := &testServer{base: srv.URL, store: st, user: "admin", password: "admin-pw"}
	ctx := context.Background()

	type row struct {
		method, path, ctype, body string
		reader                    int // the reader's status; admin gets admin
		admin                     int
		write                     bool // a refused request must leave {r} unchanged
	}
	j := "application/json"
	q := url.QueryEscape("SELECT * FROM /{r}")
	rows := []row{
		{"GET", "/kv/v1", "", "", 200, 200, false},
		{"GET", "/kv/v1/{r}", "", "", 200, 200, false},
		{"HEAD", "/kv/v1/{r}", "", "", 200, 200, false},
		{"GET", "/kv/v1/{r}/keys", "", "", 200, 200, false},
		{"GET", "/kv/v1/{r}/k1", "", "", 200, 200, false},
		{"GET", "/kv/v1/{r}/k1,k2", "", "", 200, 200, false},
		{"POST", "/kv/v1/{r}?key=new", j, `{"n":9}`, 403, 201, true},
		{"POST", "/kv/v1/{r}", j, `{"n":9}`, 403, 201, true},
		{"PUT", "/kv/v1/{r}/k1", j, `{"n":9}`, 403, 200, true},
		{"PUT", "/kv/v1/{r}/k1,k2", j, `[{"n":8},{"n":9}]`, 403, 200, true},
		{"PUT", "/kv/v1/{r}/k1?op=REPLACE", j, `{"n":9}`, 403, 200, true},
		{"PUT", "/kv/v1/{r}/k1?op=CAS", j, `{"@old":{"n":1},"@new":{"n":9}}`, 403, 200, true},
		{"DELETE", "/kv/v1/{r}/k1", "", "", 403, 200, true},
		{"DELETE", "/kv/v1/{r}/k1,k2", "", "", 403, 200, true},
		{"DELETE", "/kv/v1/{r}", "", "", 403, 200, true},
		{"GET", "/kv/v1/queries", "", "", 200, 200, false},
		{"POST", "/kv/v1/queries?id=new-{r}&q=" + q, "", "", 201, 201, false},
		{"POST", "/kv/v1/queries/q-{r}", "", "", 200, 200, false},
		{"PUT", "/kv/v1/queries/q-{r}?q=" + q, "", "", 200, 200, false},
		{"DELETE", "/kv/v1/queries/q-{r}", "", "", 403, 200, false},
		{"GET", "/kv/v1/queries/adhoc?q=" + q, "", "", 200, 200, false},
		{"GET", "/kv/v1/functions", "", "", 200, 200, false},
		{"POST", "/kv/v1/functions/Touch", "", "", 403, 200, false},
		{"GET", "/kv/v1/servers", "", "", 200, 200, false},
		{"GET", "/management/v1/regions", "", "", 403, 200, false},
		{"GET", "/management/v1/regions/{r}", "", "", 403, 200, false},
		{"POST", "/management/v1/regions", j, `{"name":"new-{r}","type":"REPLICATE"}`, 403, 201, false},
		{"DELETE", "/management/v1/regions/{r}", "", "", 403, 200, true},
		{"GET", "/management/v1/cluster", "", "", 403, 200, false},
		{"GET", "/management/v1/partitions", "", "", 403, 200, false},
		{"POST", "/management/v1/regions/{r}/indexes", j, `{"name":"i","expression":"o.n","from":"/{r} o"}`, 403, 201, false},
		{"GET", "/management/v1/regions/{r}/indexes", "", "", 403, 200, false},
		{"GET", "/management/v1/functions", "", "", 403, 200, false},
		{"GET", "/management/v1/functions/js", "", "", 403, 200, false},
		{"PUT", "/management/v1/functions/js", j, `{"source":"function execute(){}"}`, 403, 201, false},
		{"DELETE", "/management/v1/functions/js", "", "", 403, 200, false},
	}
	for i, rw := range rows {
		for w, who := range []struct{ name, user, password string }{
			{"no credentials", "", ""}, {"wrong password", "admin", "nope"}, {"reader", "reader", "reader-pw"}, {"admin", "admin", "admin-pw"},
		} {
			t.Run(fmt.Sprintf("%s %s/%s", rw.method, rw.path, who.name), func(t *testing.T) {
				r := fmt.Sprintf("r%d-%d", i, w)
				ts.mkRegion(t, r, region.Replicate, "k1", `{"n":1}`, "k2", `{"n":2}`)
				if err := st.CreateQuery(ctx, "q-"+r, "SELECT * FROM /"+r); err != nil {
					t.Fatal(err)
				}
				before := ts.contents(t, r)
				path := strings.ReplaceAll(strings.ReplaceAll(rw.path, "{r}", r), "%7Br%7D", r)
				body := strings.ReplaceAll(rw.body, "{r}", r)
				u, _ := url.Parse(ts.base + path)
				req, _ := http.NewRequest(rw.method, u.String(), strings.NewReader(body))
				if rw.ctype != "" {
					req.Header.Set("Content-Type", rw.ctype)
				}
				if who.user != "" {
					req.SetBasicAuth(who.user, who.password)
				}
				resp, err := http.DefaultClient.Do(req)
				if err != nil {
					t.Fatal(err)
				}
				resp.Body.Close()
				want := rw.admin
				switch who.name {
				case "no credentials", "wrong password":
					want = http.StatusUnauthorized
				case "reader":
					want = rw.reader
				}
				if resp.StatusCode != want {
					t.Fatalf("status %d, want %d", resp.StatusCode, want)
				}
				if want == http.StatusUnauthorized && resp.Header.Get("WWW-Authenticate") != `Basic realm="kvnode"` {
					t.Errorf("WWW-Authenticate = %q", resp.Header.Get("WWW-Authenticate"))
				}
				if want >= 400 && rw.write {
					if after := ts.contents(t, r); after != before {
						t.Errorf("a refused write changed the region: %s → %s", before, after)
					}
				}
			})
		}
	}
	if ran != 1 {
		t.Errorf("Touch ran %d times, want once (for admin only)", ran)
	}

	// The probes need nothing, even with bad credentials. /readyz is 503
	// while a partition group the rows above created is still electing its
	// first leader (its own test covers that), so wait for the store first.
	readyCtx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	for st.Ready(readyCtx) != nil {
		if readyCtx.Err() != nil {
			t.Fatalf("the store is not ready after 10s: %v", st.Ready(ctx))
		}
		time.Sleep(20 * time.Millisecond)
	}
	for _, probe := range []string{"/kv/v1/ping", "/livez", "/readyz"} {
		for _, user := range []string{"", "admin"} {
			req, _ := http.NewRequest("GET", ts.base+probe, nil)
			if user != "" {
				req.SetBasicAuth(user, "wrong")
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatalf("%s (user %q): %v", probe, user, err)
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != 200 {
				t.Fatalf("%s (user %q) = %d %s", probe, user, resp.StatusCode, body)
			}
		}
	}
}

// TestRegionAndKeyPermissions: a permission naming a region (and key)
// covers just that, for every key of a multi-key request and every region
// of a query.
func TestRegionAndKeyPermissions(t *testing.T) {
	st := newTestStore(t)
	a := auth.New(securityFile(t))
	srv := httptest.NewServer(validated(t, New(Config{Auth: a}, st, nil, nil).Handler()))
	t.Cleanup(srv.Close)
	ts := &testServer{base: srv.URL, store: st, user: "admin", password: "admin-pw"}
	ts.mkRegion(t, "orders", region.Replicate, "k1", `{"n":1}`, "k2", `{"n":2}`)
	ts.mkRegion(t, "other", region.Replicate, "k1", `{"n":1}`)
	do := func(method, path, body string) int {
		req, _ := http.NewRequest(method, ts.base+path, strings.NewReader(body))
		if body != "" {
			req.Header.Set("Content-Type", "application/json")
		}
		req.SetBasicAuth("ordersOnly", "o-pw")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	for _, tc := range []struct {
		method, path, body string
		want               int
	}{
		{"GET", "/kv/v1/orders/k1,k2", "", 200},
		{"GET", "/kv/v1/other/k1", "", 403},
		{"GET", "/kv/v1", "", 403}, // listing every region needs DATA:READ without a region
		{"PUT", "/kv/v1/orders/k1", `{"n":5}`, 200},
		{"PUT", "/kv/v1/orders/k2", `{"n":5}`, 403},
		{"PUT", "/kv/v1/orders/k1,k2", `[{"n":5},{"n":6}]`, 403}, // every key must be allowed
		{"GET", "/kv/v1/queries/adhoc?q=" + url.QueryEscape("SELECT * FROM /orders"), "", 200},
		{"GET", "/kv/v1/queries/adhoc?q=" + url.QueryEscape("SELECT * FROM /orders o, /other x"), "", 403},
		{"GET", "/kv/v1/queries/adhoc?q=" + url.QueryEscape("SELECT * FROM /orders o WHERE o.n IN (SELECT x.n FROM /other x)"), "", 403},
	} {
		if got := do(tc.method, tc.path, tc.body); got != tc.want {
			t.Errorf("%s %s = %d, want %d", tc.method, tc.path, got, tc.want)
		}
	}
	if r := ts.contents(t, "orders"); !strings.Contains(r, `{"n":5},{"n":2}`) {
		t.Errorf("orders = %s: the refused multi-key PUT must change nothing", r)
	}
}

// TestFailedLoginsAreThrottled: past the limit a client is refused (429),
// even with the right password, until the window ends; others are not.
func TestFailedLoginsAreThrottled(t *testing.T) {
	a := auth.New(securityFile(t))
	a.SetFailureLimit(3, time.Minute)
	for i := 0; i < 3; i++ {
		if _, err := a.Authenticate("10.0.0.9", "admin", "bad"); err == nil {
			t.Fatal("a wrong password authenticated")
		}
	}
	if _, err := a.Authenticate("10.0.0.9", "admin", "admin-pw"); err == nil || !strings.Contains(err.Error(), "too many") {
		t.Fatalf("the 4th attempt = %v, want throttled", err)
	}
	if _, err := a.Authenticate("10.0.0.8", "admin", "admin-pw"); err != nil {
		t.Fatalf("another client is throttled too: %v", err)
	}
}

// TestThrottledAnswer: over HTTP, a throttled client gets 429 with a
// Retry-After of the seconds left in its failed-login window (here 90 s,
// not a fixed minute), and the right password does not help.
func TestThrottledAnswer(t *testing.T) {
	a := auth.New(securityFile(t))
	a.SetFailureLimit(2, 90*time.Second)
	srv := httptest.NewServer(validated(t, New(Config{Auth: a}, newTestStore(t), fixedMembers{"http://10.0.0.1:8080"}, fixedCluster{}).Handler()))
	t.Cleanup(srv.Close)
	bad := &testServer{base: srv.URL, user: "admin", password: "wrong"}
	for i := 0; i < 2; i++ {
		expect{status: 401, cause: "wrong user name or password"}.check(t, bad, bad.do(t, "GET", "/kv/v1", "", ""))
	}
	good := &testServer{base: srv.URL, user: "admin", password: "admin-pw"}
	r := good.do(t, "GET", "/kv/v1", "", "")
	if r.status != http.StatusTooManyRequests {
		t.Fatalf("status after 2 failures = %d, want 429 (body %s)", r.status, r.body)
	}
	checkCause(t, r, "too many failed logins")
	// The window opened at the first failure, a moment ago: 89 or 90 s are left.
	if got := r.header.Get("Retry-After"); got != "90" && got != "89" {
		t.Errorf("Retry-After = %q, want the 90 s window's remaining seconds (89 or 90)", got)
	}
}
