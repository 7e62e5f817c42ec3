//go:build browser

package console_test

import (
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// TestConsoleRebalance: on the three-member cluster with security on, the
// admin grows the partition groups from 4 to 6 through the console's
// Partitions view and follows the rebalance until it succeeds, with
// buckets moved; the groups' table and the bucket map then show six
// groups owning the 113 buckets. A user without CLUSTER:MANAGE sees the
// 403 and its cause, and no form.
func TestConsoleRebalance(t *testing.T) {
	browserPath := findChromium(t)
	base := startSecureCluster(t)
	shots := screenshotDir(t)
	b := newBrowser(t, browserPath, shots)

	b.run(chromedp.Navigate(base+"/console/#/partitions"), chromedp.WaitVisible(chromedp.CSS("#login-form")))
	b.api("POST", "/management/v1/regions", `{"name":"parts","type":"PARTITION"}`, 201)
	for i := 0; i < 300; i += 100 {
		keys := make([]string, 100)
		vals := make([]string, 100)
		for j := range keys {
			keys[j] = fmt.Sprintf("p%03d", i+j)
			vals[j] = fmt.Sprintf(`{"n":%d,"pad":"%s"}`, i+j, strings.Repeat("x", 100))
		}
		b.api("PUT", "/kv/v1/parts/"+strings.Join(keys, ","), "["+strings.Join(vals, ",")+"]", 200)
	}
	b.run(chromedp.SendKeys(chromedp.CSS("#login-user"), adminUser), chromedp.SendKeys(chromedp.CSS("#login-password"), adminPassword),
		chromedp.Click(chromedp.CSS("#login-submit")))

	// Four groups, every bucket owned, each group led.
	b.waitJS("four partition groups with a leader", `
		document.querySelectorAll('#partition-groups-table tbody tr').length === 4 &&
		![...document.querySelectorAll('#partition-groups-table tbody tr')].some(r => r.textContent.includes('none'))`)
	b.waitJS("the 113 buckets in the map, each with its group", `
		document.querySelectorAll('#bucket-map .bk[data-bucket]').length === 113 &&
		![...document.querySelectorAll('#bucket-map .bk[data-bucket]')].some(c => c.dataset.group === '0')`)
	if got := eval[int](b, `[...document.querySelectorAll('#partition-groups-table tbody tr')].reduce((n, r) => n + Number(r.dataset.buckets), 0)`); got != 113 {
		t.Errorf("the groups' table shows %d buckets in all, want 113", got)
	}
	b.waitText("#operations", "No rebalance yet")
	b.waitJS("the form proposing 5 groups", `document.querySelector('#groups-wanted').value === '5'`)
	b.shot("40-partitions")

	// Grow to six groups through the form.
	b.input("#groups-wanted", "6")
	b.run(chromedp.Click(chromedp.CSS("#grow-groups")))
	b.waitJS("the operation in the table", `!!document.querySelector('#operations-table tbody tr[data-operation]')`)
	id := eval[string](b, `document.querySelector('#operations-table tbody tr').dataset.operation`)
	if eval[bool](b, `!!document.querySelector('#rebalance-live[data-status="IN_PROGRESS"], #rebalance-live .live[data-status="IN_PROGRESS"]')`) {
		b.shot("41-rebalance-running")
	}
	// The moves take some seconds (about 0.1 s a bucket on 2 cores, more
	// on a busy machine): a longer wait than a step's.
	deadline := time.Now().Add(2 * time.Minute)
	sawProgress := false
	for !eval[bool](b, `(() => { const r = document.querySelector('#operations-table tr[data-operation=`+quote(id)+`]'); return !!r && r.dataset.status !== 'IN_PROGRESS'; })()`) {
		if !sawProgress && eval[bool](b, `(() => { const l = document.querySelector('#rebalance-live .live'); return !!l && l.dataset.status === 'IN_PROGRESS' && Number(l.querySelector('.stat .value').textContent.replace(/,/g, '')) > 0; })()`) {
			sawProgress = true
			b.shot("41-rebalance-running")
		}
		if time.Now().After(deadline) {
			b.shot("failed")
			t.Fatalf("the rebalance %s has not ended after 2 minutes; the page shows:\n%s", id, eval[string](b, "document.body.innerText"))
		}
		time.Sleep(200 * time.Millisecond)
	}
	row := fmt.Sprintf(`#operations-table tr[data-operation=%s]`, quote(id))
	if status := eval[string](b, `document.querySelector(`+quote(row)+`).dataset.status`); status != "SUCCESS" {
		b.shot("failed")
		t.Fatalf("the rebalance ended %s; the page shows:\n%s", status, eval[string](b, "document.body.innerText"))
	}
	moved, err := strconv.Atoi(strings.ReplaceAll(eval[string](b, `document.querySelector(`+quote(row+" td.moved-buckets")+`).textContent`), ",", ""))
	if err != nil || moved <= 0 {
		t.Errorf("the operation's row shows %d buckets moved (%v), want some", moved, err)
	}
	t.Logf("rebalance %s: SUCCESS, %d buckets moved; progress seen while it ran: %v", id, moved, sawProgress)
	b.waitText(row, "parts:")
	b.waitText("#rebalance-live", "Rebalance finished")
	b.waitJS("six partition groups, each with buckets and a leader", `
		document.querySelectorAll('#partition-groups-table tbody tr').length === 6 &&
		![...document.querySelectorAll('#partition-groups-table tbody tr')].some(r => r.textContent.includes('none') || r.dataset.buckets === '0')`)
	b.waitJS("groups 5 and 6 in the bucket map", `
		[...document.querySelectorAll('#bucket-map .bk[data-bucket]')].some(c => c.dataset.group === '5') &&
		[...document.querySelectorAll('#bucket-map .bk[data-bucket]')].some(c => c.dataset.group === '6')`)
	b.shot("42-rebalance-done")
	eval[bool](b, `(document.querySelector('#operations-table').scrollIntoView(), true)`)
	b.shot("43-rebalance-operations")
	eval[bool](b, `(document.querySelector('#main').scrollTop = 0, true)`)
	// The API agrees: every entry is still there.
	b.api("GET", "/kv/v1/parts/p000,p150,p299", "", 200)

	// Fewer groups than there are: the API's 400 and its cause.
	b.input("#groups-wanted", "3")
	b.run(chromedp.Click(chromedp.CSS("#grow-groups")))
	b.waitText("#rebalance-error", "Bad request")
	b.waitText("#rebalance-error", "not removed")

	// A user without CLUSTER:MANAGE: the 403 with its cause, no form.
	b.run(chromedp.Click(chromedp.CSS("#sign-out")), chromedp.WaitVisible(chromedp.CSS("#login-form")))
	b.run(chromedp.SendKeys(chromedp.CSS("#login-user"), viewerUser), chromedp.SendKeys(chromedp.CSS("#login-password"), viewerPassword),
		chromedp.Click(chromedp.CSS("#login-submit")), chromedp.WaitVisible(chromedp.CSS("#sign-out")))
	b.goTo("#/partitions")
	b.waitText("#partitions-forbidden", "need CLUSTER:MANAGE")
	b.waitText("#partitions-forbidden", "lacks CLUSTER:MANAGE")
	if eval[bool](b, `!!document.querySelector('#grow-groups, #start-rebalance, #operations-table')`) {
		t.Error("a user without CLUSTER:MANAGE is shown the form or the operations")
	}
	b.shot("44-partitions-forbidden")
	b.checkNoPageErrors()
}
