//go:build browser

package console_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/kvnode/kvnode/auth"
	"github.com/kvnode/kvnode/internal/waitfor"
	"github.com/kvnode/kvnode/node"
	"github.com/kvnode/kvnode/node/nodetest"
)

// The console end to end, in headless Chromium (Debian's chromium
// package; CHROMIUM names another binary), against a three-member cluster
// with security on. Screenshots of each step go to $KVNODE_SCREENSHOTS
// (make test-browser sets test-artifacts/console), else to the test's
// temporary directory.

const (
	adminUser, adminPassword   = "admin", "admin-pw"
	viewerUser, viewerPassword = "viewer", "viewer-pw"
	// Every wait of the test; a step that takes longer has failed.
	stepTimeout = 20 * time.Second
)

func TestConsoleInChromium(t *testing.T) {
	browserPath := findChromium(t)
	base := startSecureCluster(t)
	shots := screenshotDir(t)

	b := newBrowser(t, browserPath, shots)

	// Without credentials: the sign-in form and nothing else, whatever
	// the URL asks for.
	b.run(chromedp.Navigate(base + "/"))
	b.run(chromedp.WaitVisible(chromedp.CSS("#login-form")))
	url := b.location()
	if url != base+"/console/" {
		t.Errorf("/ led to %s, want %s/console/", url, base)
	}
	b.nothingButLogin()
	b.shot("01-sign-in")
	b.run(chromedp.Navigate(base+"/console/#/data/orders"), chromedp.Reload())
	b.run(chromedp.WaitVisible(chromedp.CSS("#login-form")))
	b.nothingButLogin()

	// A wrong password: the form says so, still nothing else.
	b.run(chromedp.SendKeys(chromedp.CSS("#login-user"), adminUser),
		chromedp.SendKeys(chromedp.CSS("#login-password"), "wrong"),
		chromedp.Click(chromedp.CSS("#login-submit")))
	b.waitText("#login-error", "Sign-in failed")
	b.nothingButLogin()
	b.shot("02-sign-in-refused")

	// Signed in: the members of the cluster, live.
	b.input("#login-password", "")
	b.run(chromedp.SendKeys(chromedp.CSS("#login-password"), adminPassword),
		chromedp.Click(chromedp.CSS("#login-submit")))
	// The page asked for before signing in.
	b.waitJS("the data browser", `!!document.querySelector('#data-region')`)
	b.goTo("#/overview")
	b.waitJS("three members alive in the member table", `
		[...document.querySelectorAll('#members-table tbody tr')].filter(r => r.textContent.includes('alive')).length === 3`)
	b.waitJS("a leader in the control group and every partition group", `
		document.querySelectorAll('#groups-table tbody tr').length === 5 &&
		![...document.querySelectorAll('#groups-table tbody tr')].some(r => r.textContent.includes('none'))`)
	for _, name := range []string{"n1", "n2", "n3"} {
		b.waitJS("member "+name, fmt.Sprintf(`!!document.querySelector('#members-table tr[data-member=%q]')`, name))
	}
	b.waitText("#health", "Ready")
	b.waitText("#user-name", adminUser)
	b.shot("03-overview")

	// Create a region.
	b.goTo("#/regions")
	b.run(chromedp.WaitVisible(chromedp.CSS("#region-name")),
		chromedp.SendKeys(chromedp.CSS("#region-name"), "orders"),
		chromedp.Click(chromedp.CSS("#create-region")))
	b.waitJS("the region in the table", `!!document.querySelector('#regions-table tr[data-region="orders"]')`)
	b.shot("04-regions")

	// Put entries through the form; the values keep their form (10.0).
	b.goTo("#/data/orders")
	b.waitText("#entries", "This region is empty")
	for _, e := range [][2]string{
		{"1", `{"customer":"ann","total":10.0}`},
		{"2", `{"customer":"bob","total":3}`},
		{"3", `{"customer":"cat","total":25.5,"items":[{"sku":"x-1","qty":2}]}`},
	} {
		b.run(chromedp.Click(chromedp.CSS("#put-entry")), chromedp.WaitVisible(chromedp.CSS("#put-key")),
			chromedp.SendKeys(chromedp.CSS("#put-key"), e[0]))
		b.input("#put-value", e[1])
		b.run(chromedp.Click(chromedp.CSS("#put-save")))
		b.waitJS("entry "+e[0]+" in the table", fmt.Sprintf(`!!document.querySelector('#entries-table tr[data-key=%q]') && !document.querySelector('.backdrop')`, e[0]))
	}
	rows := b.table("#entries-table")
	want := [][]string{{"1", `{"customer":"ann","total":10.0}`}, {"2", `{"customer":"bob","total":3}`},
		{"3", `{"customer":"cat","total":25.5,"items":[{"sku":"x-1","qty":2}]}`}}
	if !slices.EqualFunc(rows, want, slices.Equal) {
		t.Errorf("the entry table shows %q, want %q", rows, want)
	}
	// Create-only refuses an existing key and shows its current value.
	b.run(chromedp.Click(chromedp.CSS("#put-entry")), chromedp.WaitVisible(chromedp.CSS("#put-key")),
		chromedp.SendKeys(chromedp.CSS("#put-key"), "1"))
	b.input("#put-value", `{"customer":"zed"}`)
	b.run(chromedp.Click(chromedp.CSS(`input[name="put-mode"][value="create"]`)), chromedp.Click(chromedp.CSS("#put-save")))
	b.waitText("#put-error", "exists already")
	b.waitText("#put-error", `"ann"`)
	b.shot("05-put-conflict")
	b.run(chromedp.KeyEvent("\x1b"))
	b.waitJS("the dialog closed", `!document.querySelector('.backdrop')`)

	// The JSON view of an entry.
	b.run(chromedp.Click(chromedp.CSS(`#entries-table tr[data-key="3"]`)))
	b.waitText("#detail-key", "3")
	b.waitText("#entry-detail pre.json", `"sku": "x-1"`)
	b.shot("06-entry")

	// Paging: 60 more entries through the API, 25 to a page.
	for i := 0; i < 60; i++ {
		b.api("PUT", fmt.Sprintf("/kv/v1/orders/k%02d", i), fmt.Sprintf(`{"n":%d}`, i), 200)
	}
	b.run(chromedp.Click(chromedp.CSS("#data-refresh")))
	b.waitText("#page-info", "1–25 of 63 keys")
	b.run(chromedp.Click(chromedp.CSS("#page-next")))
	b.waitText("#page-info", "26–50 of 63 keys")
	if first := b.table("#entries-table")[0][0]; first != "k22" {
		t.Errorf("page 2 starts at %q, want k22 (1, 2, 3, k00, ... in key order)", first)
	}
	b.run(chromedp.Click(chromedp.CSS("#page-next")))
	b.waitText("#page-info", "51–63 of 63 keys")
	b.input("#key-filter", "k5")
	b.waitText("#page-info", "1–10 of 10 keys matching")
	b.shot("07-paging")

	// An ad-hoc query with a bind value, and its rows.
	b.goTo("#/query")
	b.input("#oql", "SELECT o.customer, o.total FROM /orders o WHERE o.total > $1 ORDER BY o.total DESC")
	b.choose(`select[data-bind="1"]`, "double")
	b.input(`input[data-bind-value="1"]`, "5")
	b.run(chromedp.Click(chromedp.CSS("#run-query")))
	b.waitText("#results-meta", "2 rows")
	wantRows := [][]string{{"#", "customer", "total"}, {"1", "cat", "25.5"}, {"2", "ann", "10.0"}}
	if got := b.tableWithHead("#results-table"); !slices.EqualFunc(got, wantRows, slices.Equal) {
		t.Errorf("the query's rows are %q, want %q", got, wantRows)
	}
	b.shot("08-query")

	// The same as a named query, run on the server with another value.
	b.run(chromedp.Click(chromedp.CSS("#save-query")), chromedp.WaitVisible(chromedp.CSS("#named-id")),
		chromedp.SendKeys(chromedp.CSS("#named-id"), "big"), chromedp.Click(chromedp.CSS("#named-save")))
	b.waitJS("the named query in the list", `!!document.querySelector('#named-list li[data-query="big"]')`)
	b.api("GET", "/kv/v1/queries", "", 200)
	b.input(`input[data-bind-value="1"]`, "20")
	b.run(chromedp.Click(chromedp.CSS("#run-query")))
	b.waitText("#results-meta", "named query big")
	wantRows = [][]string{{"#", "customer", "total"}, {"1", "cat", "25.5"}}
	if got := b.tableWithHead("#results-table"); !slices.EqualFunc(got, wantRows, slices.Equal) {
		t.Errorf("the named query's rows are %q, want %q", got, wantRows)
	}
	b.shot("09-named-query")

	// A failing query shows the API's cause.
	b.input("#oql", "SELECT * FROM /nowhere n")
	b.run(chromedp.Click(chromedp.CSS("#run-query")))
	b.waitText("#query-error", "nowhere")

	// A function with a target and its results.
	b.goTo("#/functions/RegionSize")
	b.waitJS("the region list of the function form", `[...document.querySelectorAll('#fn-region option')].some(o => o.value === 'orders')`)
	b.choose("#fn-region", "orders")
	b.run(chromedp.Click(chromedp.CSS("#run-function")))
	b.waitText("#function-meta", "result")
	b.waitText("#function-results", `"total"`)
	b.shot("10-function")

	// The live view: changes made elsewhere appear as they commit, the
	// current entries first when asked.
	b.goTo("#/watch/orders")
	b.waitJS("orders in the watch form", `[...document.querySelectorAll('#watch-region option')].some(o => o.value === 'orders')`)
	b.choose("#watch-region", "orders")
	b.run(chromedp.Click(chromedp.CSS("#watch-initial")), chromedp.Click(chromedp.CSS("#watch-start")))
	b.waitText("#watch-state", "live")
	b.waitJS("the current entries first", `[...document.querySelectorAll('#watch-rows tr')].filter(r => r.dataset.type === 'initial').length === 63`)
	b.api("PUT", "/kv/v1/orders/w1", `{"live":true}`, 200)
	b.waitJS("the create of w1", `[...document.querySelectorAll('#watch-rows tr')].some(r => r.dataset.type === 'create' && r.textContent.includes('w1') && r.textContent.includes('"live":true'))`)
	b.api("DELETE", "/kv/v1/orders/w1", "", 200)
	b.waitJS("the destroy of w1", `[...document.querySelectorAll('#watch-rows tr')].some(r => r.dataset.type === 'destroy' && r.textContent.includes('w1'))`)
	b.shot("11-watch")
	b.run(chromedp.Click(chromedp.CSS("#watch-stop")))
	b.waitText("#watch-state", "stopped")

	// Delete an entry.
	b.goTo("#/data/orders")
	b.run(chromedp.WaitVisible(chromedp.CSS(`#entries-table tr[data-key="2"]`)),
		chromedp.Click(chromedp.CSS(`#entries-table tr[data-key="2"]`)))
	b.waitText("#detail-key", "2")
	b.run(chromedp.Click(chromedp.CSS("#delete-entry")), chromedp.WaitVisible(chromedp.CSS(".backdrop button.danger")),
		chromedp.Click(chromedp.CSS(".backdrop button.danger")))
	b.waitJS("entry 2 gone from the table", `!!document.querySelector('#entries-table') && !document.querySelector('#entries-table tr[data-key="2"]')`)
	b.api("GET", "/kv/v1/orders/2", "", 404)
	b.shot("12-deleted")

	// The credentials live in the page's memory only: a reload asks for
	// them again, and so does signing out.
	b.run(chromedp.Reload(), chromedp.WaitVisible(chromedp.CSS("#login-form")))
	b.nothingButLogin()
	b.run(chromedp.SendKeys(chromedp.CSS("#login-user"), adminUser), chromedp.SendKeys(chromedp.CSS("#login-password"), adminPassword),
		chromedp.Click(chromedp.CSS("#login-submit")), chromedp.WaitVisible(chromedp.CSS("#sign-out")))
	b.run(chromedp.Click(chromedp.CSS("#sign-out")), chromedp.WaitVisible(chromedp.CSS("#login-form")))
	b.nothingButLogin()

	// A user who may read but not manage: the overview says what needs
	// CLUSTER:MANAGE and still lists the live members (/kv/v1/servers);
	// a write shows the API's 403 and its cause.
	b.run(chromedp.SendKeys(chromedp.CSS("#login-user"), viewerUser), chromedp.SendKeys(chromedp.CSS("#login-password"), viewerPassword),
		chromedp.Click(chromedp.CSS("#login-submit")), chromedp.WaitVisible(chromedp.CSS("#sign-out")))
	b.goTo("#/overview")
	b.waitText("#members", "needs CLUSTER:MANAGE")
	b.waitJS("three REST URLs", `document.querySelectorAll('#members tbody tr').length === 3`)
	b.goTo("#/data/orders")
	b.run(chromedp.WaitVisible(chromedp.CSS(`#entries-table tr[data-key="1"]`)), chromedp.Click(chromedp.CSS(`#entries-table tr[data-key="1"]`)))
	b.waitText("#detail-key", "1")
	b.run(chromedp.Click(chromedp.CSS("#delete-entry")), chromedp.WaitVisible(chromedp.CSS(".backdrop button.danger")),
		chromedp.Click(chromedp.CSS(".backdrop button.danger")))
	b.waitText("#data-error", "Forbidden")
	b.waitText("#data-error", "lacks DATA:WRITE:orders:1")
	b.shot("13-viewer-forbidden")
	b.api("GET", "/kv/v1/orders/1", "", 200)
	b.checkNoPageErrors()
}

// findChromium finds the browser; a machine without one fails the test
// with the reason (CI installs Debian's chromium package).
func findChromium(t *testing.T) string {
	t.Helper()
	if p := os.Getenv("CHROMIUM"); p != "" {
		return p
	}
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome", "headless-shell"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	t.Fatal("no Chromium found: install Debian's chromium package (apt-get install -y chromium) or set CHROMIUM to a Chrome binary")
	return ""
}

func screenshotDir(t *testing.T) string {
	t.Helper()
	dir := os.Getenv("KVNODE_SCREENSHOTS")
	if dir == "" {
		dir = filepath.Join(t.TempDir(), "screenshots")
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Logf("screenshots in %s", dir)
	return dir
}

// securityFile writes a security file in which admin may do everything
// and viewer only read, and returns its path.
func securityFile(t *testing.T) string {
	t.Helper()
	hash := func(pw string) string {
		h, err := auth.HashPassword([]byte(pw + "\n"))
		if err != nil {
			t.Fatal(err)
		}
		return h
	}
	sec, err := json.Marshal(auth.File{
		Users: []auth.User{{Name: adminUser, Password: hash(adminPassword), Roles: []string{"admin"}},
			{Name: viewerUser, Password: hash(viewerPassword), Roles: []string{"reader"}}},
		Roles: []auth.Role{{Name: "admin", Permissions: []string{"DATA:READ", "DATA:WRITE", "CLUSTER:READ", "CLUSTER:MANAGE"}},
			{Name: "reader", Permissions: []string{"DATA:READ", "CLUSTER:READ"}}},
	})
	if err != nil {
		t.Fatal(err)
	}
	secPath := filepath.Join(t.TempDir(), "security.json")
	if err := os.WriteFile(secPath, sec, 0o600); err != nil {
		t.Fatal(err)
	}
	return secPath
}

// startSecureCluster starts three members with security on (admin may do
// everything, viewer only read) and waits until each is ready; it answers a member's URL.
func startSecureCluster(t *testing.T) string {
	t.Helper()
	secPath := securityFile(t)
	c := nodetest.New(t)
	c.Tune = func(_ string, cfg *node.Config) { cfg.SecurityFile = secPath }
	var members []*node.Node
	for _, name := range []string{"n1", "n2", "n3"} {
		members = append(members, c.Start(name, 3))
	}
	for _, m := range members {
		waitfor.Cond(t, 30*time.Second, m.Name()+" to be ready", func() bool {
			resp, err := http.Get("http://" + m.HTTPAddr() + "/readyz")
			if err != nil {
				return false
			}
			resp.Body.Close()
			return resp.StatusCode == http.StatusOK
		})
	}
	return "http://" + members[0].HTTPAddr()
}

// browser is one headless Chromium tab on the console.
type browser struct {
	t     *testing.T
	ctx   context.Context
	shots string

	mu         sync.Mutex
	pageErrors []string
}

func newBrowser(t *testing.T, path, shots string, extra ...chromedp.ExecAllocatorOption) *browser {
	t.Helper()
	opts := append(slices.Clone(chromedp.DefaultExecAllocatorOptions[:]),
		chromedp.ExecPath(path),
		chromedp.NoSandbox, // CI runs as root, where Chromium's sandbox cannot start
		chromedp.WindowSize(1440, 900),
		chromedp.Flag("lang", "en-US"),
	)
	opts = append(opts, extra...)
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancelCtx := chromedp.NewContext(actx)
	t.Cleanup(func() { cancelCtx(); cancelAlloc() })
	b := &browser{t: t, ctx: ctx, shots: shots}
	// Script errors, failed promises and refusals of the
	// Content-Security-Policy fail the test: the page must run as it is
	// served. (Answers of 4xx and 5xx, which the test asks for, are the
	// network's messages, not the page's.)
	messages := chromedp.Console(ctx)
	go func() {
		for m, err := range messages {
			if err != nil {
				return
			}
			if m.IsException() || m.Type == chromedp.ConsoleError && m.Source != "network" {
				b.mu.Lock()
				b.pageErrors = append(b.pageErrors, m.String())
				b.mu.Unlock()
			}
		}
	}()
	return b
}

// run runs actions within stepTimeout, and on failure saves a screenshot
// and fails the test.
func (b *browser) run(actions ...chromedp.Action[chromedp.Void]) {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, stepTimeout)
	defer cancel()
	if err := chromedp.Do(ctx, actions...); err != nil {
		b.shot("failed")
		b.t.Fatalf("browser: %v\n%s", err, b.errors())
	}
}

// eval evaluates a JavaScript expression in the page.
func eval[T any](b *browser, expr string) T {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, stepTimeout)
	defer cancel()
	v, err := chromedp.Run(ctx, chromedp.Evaluate[T](expr))
	if err != nil {
		b.t.Fatalf("evaluate %s: %v", expr, err)
	}
	return v
}

func (b *browser) location() string {
	b.t.Helper()
	return eval[string](b, "location.href")
}

// shot saves the visible page as name.png.
func (b *browser) shot(name string) {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, stepTimeout)
	defer cancel()
	// Let the last change be painted.
	if err := chromedp.Do(ctx, chromedp.Sleep(150*time.Millisecond)); err != nil {
		b.t.Errorf("screenshot %s: %v", name, err)
		return
	}
	png, err := chromedp.Run(ctx, chromedp.CaptureScreenshot())
	if err != nil {
		b.t.Errorf("screenshot %s: %v", name, err)
		return
	}
	if err := os.WriteFile(filepath.Join(b.shots, name+".png"), png, 0o644); err != nil {
		b.t.Errorf("screenshot %s: %v", name, err)
	}
}

// waitJS waits until the expression is true.
func (b *browser) waitJS(what, expr string) {
	b.t.Helper()
	deadline := time.Now().Add(stepTimeout)
	for !eval[bool](b, `(() => { try { return !!(`+expr+`); } catch (e) { return false; } })()`) {
		if time.Now().After(deadline) {
			b.shot("failed")
			b.t.Fatalf("waited %s for %s; the page shows:\n%s\n%s", stepTimeout, what, eval[string](b, "document.body.innerText"), b.errors())
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// waitText waits until the element sel's text contains want.
func (b *browser) waitText(sel, want string) {
	b.t.Helper()
	b.waitJS(fmt.Sprintf("%s to show %s", sel, want), fmt.Sprintf(`document.querySelector(%s).textContent.includes(%s)`, quote(sel), quote(want)))
}

// goTo moves the console to a view (#/...) as its links do, without
// reloading the page.
func (b *browser) goTo(hash string) {
	b.t.Helper()
	eval[string](b, "location.hash = "+quote(hash))
}

// input sets a field's value and fires input, as typing does.
func (b *browser) input(sel, value string) {
	b.t.Helper()
	b.set(sel, value, "input")
}

// choose selects an option and fires change, as a click on it does.
func (b *browser) choose(sel, value string) {
	b.t.Helper()
	b.set(sel, value, "change")
}

func (b *browser) set(sel, value, event string) {
	b.t.Helper()
	b.run(chromedp.WaitVisible(chromedp.CSS(sel)))
	if !eval[bool](b, fmt.Sprintf(`(() => { const e = document.querySelector(%s); e.value = %s;
		return e.value === %[2]s && e.dispatchEvent(new Event(%s, {bubbles: true})); })()`, quote(sel), quote(value), quote(event))) {
		b.t.Fatalf("could not set %s to %q", sel, value)
	}
}

// table is the text of each body row's cells.
func (b *browser) table(sel string) [][]string {
	b.t.Helper()
	return eval[[][]string](b, fmt.Sprintf(`[...document.querySelectorAll(%s + ' tbody tr')].map(r => [...r.cells].map(c => c.textContent))`, quote(sel)))
}

// tableWithHead is table with the header row first.
func (b *browser) tableWithHead(sel string) [][]string {
	b.t.Helper()
	head := eval[[]string](b, fmt.Sprintf(`[...document.querySelectorAll(%s + ' thead th')].map(c => c.textContent)`, quote(sel)))
	return append([][]string{head}, b.table(sel)...)
}

// nothingButLogin checks that the page shows the sign-in form and nothing
// of the cluster: no navigation, no member, region or entry.
func (b *browser) nothingButLogin() {
	b.t.Helper()
	text := eval[string](b, `document.body.innerText`)
	if eval[bool](b, `!!document.querySelector('.shell, nav, main, table')`) {
		b.t.Errorf("without credentials the page shows more than the sign-in form:\n%s", text)
	}
	for _, secret := range []string{"n1", "n2", "n3", "orders", "127.0.0.1", "leader"} {
		if strings.Contains(text, secret) {
			b.t.Errorf("without credentials the page shows %q:\n%s", secret, text)
		}
	}
}

// api calls the API as the admin, outside the browser.
func (b *browser) api(method, path, body string, want int) {
	b.t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, eval[string](b, "location.origin")+path, rd)
	if err != nil {
		b.t.Fatal(err)
	}
	req.SetBasicAuth(adminUser, adminPassword)
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		b.t.Fatal(err)
	}
	data, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != want {
		b.t.Fatalf("%s %s = %d %s, want %d", method, path, resp.StatusCode, data, want)
	}
}

func (b *browser) errors() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	if len(b.pageErrors) == 0 {
		return ""
	}
	return "errors in the page:\n" + strings.Join(b.pageErrors, "\n")
}

func (b *browser) checkNoPageErrors() {
	b.t.Helper()
	if e := b.errors(); e != "" {
		b.t.Error(e)
	}
}

// quote writes s as a JavaScript string literal.
func quote(s string) string {
	q, _ := json.Marshal(s)
	return string(q)
}

// TestConsoleWithoutSecurity: a node without a security file shows the
// console at once, says that security is off, and offers no sign-out.
func TestConsoleWithoutSecurity(t *testing.T) {
	browserPath := findChromium(t)
	c := nodetest.New(t)
	n := c.Start("solo", 1)
	waitfor.Cond(t, 30*time.Second, "the node to be ready", func() bool {
		resp, err := http.Get("http://" + n.HTTPAddr() + "/readyz")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	})
	b := newBrowser(t, browserPath, screenshotDir(t))
	b.run(chromedp.Navigate("http://" + n.HTTPAddr() + "/"))
	b.waitJS("the member table", `!!document.querySelector('#members-table tr[data-member="solo"]')`)
	b.waitText(".topbar", "Security off")
	if eval[bool](b, `!!document.querySelector('#login-form, #sign-out')`) {
		t.Error("without security the console shows a sign-in form or a sign-out button")
	}
	b.shot("20-security-off")
	b.checkNoPageErrors()
}
