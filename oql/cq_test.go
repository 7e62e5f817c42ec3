package oql

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"
)

func mustParse(t testing.TB, text string) *Query {
	t.Helper()
	q, err := Parse(text)
	if err != nil {
		t.Fatalf("Parse(%q): %v", text, err)
	}
	return q
}

func TestNewCQRefuses(t *testing.T) {
	for _, tc := range []struct {
		text string
		want string // in the message
	}{
		{"/o.size", "bare expression"},
		{"SELECT * FROM /a a, /b b WHERE a.id = b.id", "joins: FROM has 2 iterators"},
		{"SELECT * FROM /o o, o.items i", "joins: FROM has 2 iterators"},
		{"SELECT * FROM /o['k'].items i", "FROM /o['k'].items is not a region path"},
		{"SELECT * FROM $1 p", "FROM $1 is not a region path"},
		{"SELECT DISTINCT * FROM /o o", "DISTINCT"},
		{"SELECT COUNT(*) FROM /o", "aggregates"},
		{"SELECT SUM(o.total) AS s FROM /o o WHERE o.cust = 1", "aggregates"},
		{"SELECT o.cust FROM /o o GROUP BY o.cust", "GROUP BY"},
		{"SELECT * FROM /o o ORDER BY o.id", "ORDER BY"},
		{"SELECT * FROM /o o LIMIT 5", "LIMIT"},
		{"SELECT o.id FROM /o o", "projection must be *"},
		{"SELECT o AS x FROM /o o", "projection must be *"},
		{"SELECT o, o.id FROM /o o", "projection must be *"},
		{"SELECT e.value FROM /o.entrySet e", "projection must be *"},
		{"SELECT o FROM /o", "projection must be *"}, // o is an attribute here, not the iterator
		{"SELECT * FROM /o o WHERE o.cust IN (SELECT c.cust FROM /c c)", "WHERE reads region /c"},
		{"SELECT * FROM /o o WHERE o.id IN (SELECT x.id FROM /o x WHERE x.total > 5)", "WHERE reads region /o"},
		{"SELECT * FROM /o o WHERE o.v = ELEMENT(SELECT c.v FROM /c c WHERE c.id = 1)", "WHERE reads region /c"},
		{"SELECT * FROM /o o WHERE 1 IN (SELECT i.q FROM o.items i WHERE i.p = /c['k'].p)", "WHERE reads region /c"},
		{"SELECT * FROM /o o WHERE /c['k'].v = o.v", "WHERE reads region /c"},
		{"SELECT * FROM /o o WHERE /o.size > 3", "WHERE reads region /o"},
	} {
		q := mustParse(t, tc.text)
		c, err := NewCQ(q, nil)
		if !errors.Is(err, ErrNotContinuous) {
			t.Errorf("NewCQ(%q) = %v, %v; want an error wrapping ErrNotContinuous", tc.text, c, err)
			continue
		}
		if !strings.Contains(err.Error(), tc.want) {
			t.Errorf("NewCQ(%q): got %q, want it to name %q", tc.text, err, tc.want)
		}
	}
}

func TestNewCQRegion(t *testing.T) {
	for _, tc := range []struct{ text, region string }{
		{"SELECT * FROM /orders", "orders"},
		{"SELECT * FROM /orders o WHERE o.total > 5", "orders"},
		{"SELECT * FROM /orders AS o", "orders"},
		{"SELECT o FROM o IN /orders", "orders"},
		{"SELECT * FROM /orders.values v", "orders"},
		{"SELECT v FROM /orders.values() v", "orders"},
		{"SELECT * FROM /orders.keySet k WHERE k > 'a'", "orders"},
		{"SELECT * FROM /orders.keys k", "orders"},
		{"SELECT e FROM /orders.entrySet e WHERE e.key = 'a'", "orders"},
		{"SELECT * FROM /orders.entries e", "orders"},
		{"SELECT * FROM /root/child c", "root/child"},
		{"<TRACE> SELECT * FROM /orders o TYPE example.Item WHERE 2 IN (SELECT i.q FROM o.items i)", "orders"},
		{"SELECT * FROM /orders o WHERE o.cust IN (SELECT x FROM SET(1, 2) x)", "orders"},
	} {
		c, err := NewCQ(mustParse(t, tc.text), nil)
		if err != nil {
			t.Errorf("NewCQ(%q): %v", tc.text, err)
			continue
		}
		if got := c.Region(); got != tc.region {
			t.Errorf("NewCQ(%q).Region() = %q, want %q", tc.text, got, tc.region)
		}
	}
}

func TestNewCQBinds(t *testing.T) {
	for _, tc := range []struct {
		text   string
		params []any
		bind   bool // wants ErrBind; otherwise a compile error (*EvalError)
	}{
		{"SELECT * FROM /o o WHERE o.a = $1", nil, true},
		{"SELECT * FROM /o o WHERE o.a = $1", []any{1, 2}, true},
		{"SELECT * FROM /o o", []any{1}, true},
		{"SELECT * FROM /o o WHERE o.a = $2", []any{1}, true},
		{"SELECT * FROM /o o WHERE o.a = $1", []any{[]int{1}}, true},
		{"SELECT * FROM /o o WHERE COUNT(*) > 1", nil, false},
	} {
		_, err := NewCQ(mustParse(t, tc.text), tc.params)
		var ee *EvalError
		switch {
		case err == nil:
			t.Errorf("NewCQ(%q, %v) succeeded, want an error", tc.text, tc.params)
		case errors.Is(err, ErrNotContinuous):
			t.Errorf("NewCQ(%q, %v) = %v, want it not to wrap ErrNotContinuous", tc.text, tc.params, err)
		case tc.bind && !errors.Is(err, ErrBind):
			t.Errorf("NewCQ(%q, %v) = %v, want an error wrapping ErrBind", tc.text, tc.params, err)
		case !tc.bind && !errors.As(err, &ee):
			t.Errorf("NewCQ(%q, %v) = %v (%T), want an *EvalError", tc.text, tc.params, err, err)
		}
	}
}

func TestCQMatches(t *testing.T) {
	const order = `{"id":7,"cust":3,"total":150.5,"qty":4,"name":"Joan","email":null,` +
		`"address":{"city":"Paris","zip":"75001"},"tags":["vip","eu"],"items":[{"p":2,"q":1},{"p":9,"q":2}]}`
	for _, tc := range []struct {
		where  string // the query, or its WHERE over /o o
		params []any
		key    string
		value  string // order when empty
		want   bool
		err    bool
	}{
		{where: "SELECT * FROM /o o", want: true},
		{where: "SELECT * FROM /o", value: `{}`, want: true},
		// numbers, with numeric promotion both ways
		{where: "o.total > 100", want: true},
		{where: "o.total > 150.5", want: false},
		{where: "o.qty = 4.0", want: true},
		{where: "o.total >= 150.5d AND o.qty < 5", want: true},
		{where: "o.total > 100", value: `{"total":null}`, want: false},
		{where: "o.total > 100", value: `{}`, want: false},
		{where: "o.total > 100", value: `{"total":"200"}`, err: true},
		{where: "o.qty * 2 = 8", want: true},
		{where: "o.qty * 2 = 8", value: `{}`, err: true},
		{where: "NOT (o.total < 10)", want: true},
		{where: "NOT (o.total < 10)", value: `{"total":null}`, want: false},
		// strings are case-sensitive
		{where: "o.name = 'Joan'", want: true},
		{where: "o.name = 'joan'", want: false},
		{where: "o.name.toUpperCase() = 'JOAN'", want: true},
		{where: "o.name < 'K'", want: true},
		// <> keeps missing members, and the lone-<> UNDEFINED row
		{where: "o.phone <> '555'", want: true},
		{where: "o.phone <> o.fax", want: true},
		{where: "o.phone <> o.fax AND o.id = 7", want: false},
		// implicit attributes and nested members
		{where: "SELECT * FROM /o WHERE cust = 3", want: true},
		{where: "o.address.city = 'Paris'", want: true},
		{where: "o.address.city = 'Paris'", value: `{"address":null}`, want: false},
		{where: "o.address.zip.startsWith('75')", want: true},
		{where: "o.items[1].p = 9", want: true},
		{where: "o.items.size = 2 AND NOT o.items.isEmpty", want: true},
		// LIKE, with Geode's UNDEFINED quirk
		{where: "o.name LIKE 'J%n'", want: true},
		{where: "o.name LIKE 'J_n'", want: false},
		{where: "o.name LIKE '%'", value: `{}`, want: true},
		{where: "o.name LIKE 'J%'", value: `{"name":null}`, want: false},
		{where: "o.name LIKE 'J%'", value: `{"name":5}`, want: false},
		// IN over SET, member arrays and member subqueries
		{where: "o.cust IN SET(1, 3)", want: true},
		{where: "o.cust IN SET(1, 2)", want: false},
		{where: "o.cust IN SET(1, 3)", value: `{}`, want: false},
		{where: "'vip' IN o.tags", want: true},
		{where: "'us' IN o.tags", want: false},
		{where: "2 IN (SELECT i.q FROM o.items i WHERE i.p > 5)", want: true},
		{where: "1 IN (SELECT i.q FROM o.items i WHERE i.p > 5)", want: false},
		// defined and undefined, null counts as defined
		{where: "IS_DEFINED(o.email)", want: true},
		{where: "IS_UNDEFINED(o.email)", want: false},
		{where: "IS_DEFINED(o.phone)", want: false},
		{where: "o.email = null", want: true},
		{where: "o.phone = UNDEFINED", want: true},
		// bind values, of the kinds Bind produces
		{where: "o.cust = $1", params: []any{int64(3)}, want: true},
		{where: "o.cust = $1", params: []any{"3"}, want: false},
		{where: "o.total > $1 AND o.total < $2", params: []any{float32(150), 151.0}, want: true},
		{where: "o.name LIKE $1", params: []any{"Jo%"}, want: true},
		{where: "o.name LIKE $1", params: []any{"Ja%"}, want: false},
		{where: "o.cust IN SET($1, $2)", params: []any{int64(9), int64(3)}, want: true},
		{where: "o.email = $1", params: []any{nil}, want: true},
		// keys: entries and keySet
		{where: "SELECT * FROM /o.entrySet e WHERE e.key = 'k1'", key: "k1", want: true},
		{where: "SELECT * FROM /o.entrySet e WHERE e.key = 'k1'", key: "k2", want: false},
		{where: "SELECT e FROM /o.entries e WHERE e.key LIKE 'ord-%' AND e.value.total > 100", key: "ord-9", want: true},
		{where: "SELECT e FROM /o.entries e WHERE e.key LIKE 'ord-%' AND e.value.total > 200", key: "ord-9", want: false},
		{where: "SELECT * FROM /o.entries WHERE key = $1 AND value.cust = 3", params: []any{"a"}, key: "a", want: true},
		{where: "SELECT * FROM /o.entrySet e WHERE e.getKey() > 'm'", key: "n", want: true},
		{where: "SELECT * FROM /o.keySet k WHERE k LIKE 'k%'", key: "k7", want: true},
		{where: "SELECT * FROM /o.keys k WHERE k.length() = 3", key: "k7", want: false},
		{where: "SELECT * FROM /o.keySet k WHERE k = 1001", key: "1001", want: false}, // keys are strings
	} {
		text := tc.where
		if !strings.HasPrefix(text, "SELECT") {
			text = "SELECT * FROM /o o WHERE " + tc.where
		}
		value := tc.value
		if value == "" {
			value = order
		}
		c, err := NewCQ(mustParse(t, text), tc.params)
		if err != nil {
			t.Errorf("NewCQ(%q): %v", text, err)
			continue
		}
		got, err := c.Matches(tc.key, json.RawMessage(value))
		switch {
		case tc.err && err == nil:
			t.Errorf("%s %v on %s: got %v, want an error", text, tc.params, value, got)
		case !tc.err && err != nil:
			t.Errorf("%s %v on %s: got error %v, want %v", text, tc.params, value, err, tc.want)
		case !tc.err && got != tc.want:
			t.Errorf("%s %v on %s: got %v, want %v", text, tc.params, value, got, tc.want)
		}
	}
}

// randomCQ builds a continuous query over /o (iterator forms, predicates
// on values and keys, AND/OR/NOT, member subqueries, bind values).
func randomCQ(rng *rand.Rand, params *[]any) string {
	if rng.IntN(8) == 0 {
		from := []string{"/o.keySet k", "/o.keys k"}[rng.IntN(2)]
		preds := []string{"k LIKE 'k00_5'", "k > 'k0040'", "k = 'k0003'", "k.endsWith('7')", "k IN SET('k0001', 'k0002')"}
		return fmt.Sprintf("SELECT * FROM %s WHERE %s OR %s", from, preds[rng.IntN(len(preds))], preds[rng.IntN(len(preds))])
	}
	forms := []struct{ from, prefix string }{
		{"/o o", "o."}, {"/o AS o", "o."}, {"o IN /o", "o."}, {"/o.values o", "o."},
		{"/o.entrySet o", "o.value."}, {"/o.entries o", "o.value."},
	}
	form := forms[rng.IntN(len(forms))]
	extra := []string{
		"o.items.size > 1", "2 IN (SELECT i.q FROM o.items i)", "IS_DEFINED(o.name)",
		"IS_UNDEFINED(o.cust)", "o.name <> 'Ax'", "NOT (o.total < 100)", "o.total * 2 > 300",
		"o.name = null", "o.id % 3 = 0", "o.items[0].p > 20",
	}
	var terms []string
	for range 1 + rng.IntN(3) {
		var p string
		switch {
		case rng.IntN(3) == 0:
			p = extra[rng.IntN(len(extra))]
		case form.prefix == "o.value." && rng.IntN(3) == 0:
			*params = append(*params, fmt.Sprintf("k%04d", rng.IntN(60)))
			p = []string{"o.key < $%d", "o.key = $%d", "o.key >= $%d"}[rng.IntN(3)]
			p = fmt.Sprintf(p, len(*params))
			p = strings.ReplaceAll(p, "o.key", "o.KEY") // keep it from the prefix rewrite
		default:
			p = randomPredicate(rng, params)
		}
		if rng.IntN(5) == 0 {
			p = "NOT (" + p + ")"
		}
		terms = append(terms, p)
	}
	where := terms[0]
	for _, t := range terms[1:] {
		where += []string{" AND ", " OR "}[rng.IntN(2)] + t
	}
	where = strings.ReplaceAll(strings.ReplaceAll(where, "o.", form.prefix), form.prefix+"KEY", "o.key")
	proj := "*"
	if rng.IntN(3) == 0 {
		proj = "o"
	}
	return fmt.Sprintf("SELECT %s FROM %s WHERE %s", proj, form.from, where)
}

// TestCQMatchesAgreesWithExecute: for random queries and entries, Matches
// says what Execute says over a region holding that entry alone: a match
// iff it returns one row, an error iff it fails.
func TestCQMatchesAgreesWithExecute(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	ctx := context.Background()
	var matched, missed, failed int
	for round := range 400 {
		var params []any
		text := randomCQ(rng, &params)
		q := mustParse(t, text)
		c, err := NewCQ(q, params)
		if err != nil {
			t.Fatalf("round %d: NewCQ(%q, %v): %v", round, text, params, err)
		}
		for key, value := range randomOrders(rng, 40) {
			res, xerr := q.Execute(ctx, mapSource{"/o": {key: value}}, params, Options{})
			got, merr := c.Matches(key, json.RawMessage(value))
			if (xerr == nil) != (merr == nil) {
				t.Fatalf("round %d: %s %v on %s=%s: Execute error %v, Matches error %v", round, text, params, key, value, xerr, merr)
			}
			if xerr != nil {
				failed++
				continue
			}
			if want := len(res.Rows) == 1; got != want {
				t.Fatalf("round %d: %s %v on %s=%s: Matches %v, Execute returned %d row(s)", round, text, params, key, value, got, len(res.Rows))
			}
			if got {
				matched++
			} else {
				missed++
			}
		}
	}
	// The comparison means something only if all three outcomes occur often.
	if matched < 1000 || missed < 1000 || failed < 100 {
		t.Fatalf("got %d matches, %d misses and %d errors over 16,000 entries, want at least 1000, 1000 and 100", matched, missed, failed)
	}
	t.Logf("%d matches, %d misses, %d errors", matched, missed, failed)
}

// TestCQMatchesConcurrently: goroutines sharing one CQ (and its pooled
// states, which cache a bound LIKE pattern) get each entry's own answer.
func TestCQMatchesConcurrently(t *testing.T) {
	c, err := NewCQ(mustParse(t, "SELECT * FROM /o o WHERE o.name LIKE $1 AND o.n >= $2"), []any{"a%", int64(50)})
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for g := range 8 {
		wg.Go(func() {
			for i := range 500 {
				name := []string{"ab", "ba"}[(i+g)%2]
				v := fmt.Sprintf(`{"name":%q,"n":%d}`, name, i%100)
				got, err := c.Matches("k", json.RawMessage(v))
				want := name == "ab" && i%100 >= 50
				if err != nil || got != want {
					errs <- fmt.Errorf("goroutine %d on %s: got %v, %v; want %v", g, v, got, err, want)
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

func BenchmarkCQMatches(b *testing.B) {
	src := benchOrders(1000)
	for _, bc := range []struct {
		name, text string
		params     []any
	}{
		{"two members, binds", "SELECT * FROM /orders o WHERE o.customerId = $1 AND o.totalPrice > $2", []any{int64(17), 100.0}},
		{"LIKE bind", "SELECT * FROM /orders o WHERE o.contact LIKE $1", []any{"Contact 1%"}},
		{"key and nested member", "SELECT * FROM /orders.entrySet e WHERE e.key >= '0000500' AND e.value.items[0].quantity > 3", nil},
	} {
		b.Run(bc.name, func(b *testing.B) {
			c, err := NewCQ(mustParse(b, bc.text), bc.params)
			if err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				k := i % len(src.keys)
				if _, err := c.Matches(src.keys[k], src.values[k]); err != nil {
					b.Fatal(err)
				}
				i++
			}
		})
	}
}
