package oql

import (
	"context"
	"encoding/json"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/tidwall/gjson"
)

// fuzzSeeds are queries for the fuzzers to start from: every construct of
// the grammar appears in at least one.
var fuzzSeeds = append([]string{
	"<TRACE> <HINT 'i1', 'i2'> IMPORT com.example.Order AS O; SELECT DISTINCT o.id AS x, y: o.total FROM /o o TYPE O WHERE o.id > 1L LIMIT $1;",
	"select * from /o where total > 1.5d and name like 'a\\_%' or not (id = 2)",
	"SELECT o->id, o.items[0].p, o.name.toUpperCase(), o.items.size FROM o IN /o WHERE o.\"type\" = UNDEFINED",
	"SELECT * FROM /o o WHERE o.d = DATE '2024-01-31' OR o.t > TIMESTAMP '2024-01-31 10:00:00.5' OR o.c = CHAR 'a'",
	"ELEMENT(SELECT x.id FROM /o x WHERE x.id = 0)",
	"/o.keySet",
	"/o['k0001'].items",
	"SELECT NVL(o.name, 'n/a'), IS_DEFINED(o.cust), -o.total * 2 % 7 MOD 3 FROM /o o -- comment\n/* block */",
	"SELECT (int) o.id, 0x1F, 017, 1e3, 2.5f FROM /o o WHERE o.id IN SET(1, 2, $2)",
	"SELECT COUNT(DISTINCT o.cust), SUM(DISTINCT o.total), AVG(o.total) FROM /o o WHERE TO_DATE('01/31/2024', 'MM/dd/yyyy') = TO_DATE($1, 'MM/dd/yyyy')",
	"SELECT o.cust, COUNT(*) FROM /o o GROUP BY o.cust HAVING COUNT(*) > 1",
	"SELECT * FROM /o o WHERE o.id IN (1, 2)",
	"SELECT * FROM /o o, o.items i, /c c WHERE c.cust = o.cust ORDER BY i.p DESC, o.id",
}, splitQueries...)

// FuzzParse: the parser never panics, and whatever parses prints back to
// text that parses to the same printed form (the printer and the parser
// agree on every construct).
func FuzzParse(f *testing.F) {
	for _, s := range fuzzSeeds {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, text string) {
		q, err := Parse(text)
		if err != nil {
			if _, ok := err.(*SyntaxError); !ok {
				t.Fatalf("Parse(%q) error %T %v, want *SyntaxError", text, err, err)
			}
			return
		}
		printed := q.String()
		q2, err := Parse(printed)
		if err != nil {
			t.Fatalf("Parse(%q) ok, but its printed form %q does not parse: %v", text, printed, err)
		}
		if again := q2.String(); again != printed {
			t.Fatalf("round trip of %q:\n first  %s\n second %s", text, printed, again)
		}
	})
}

// FuzzExecute: any query that parses runs over random data without
// panicking, within a bounded time.
func FuzzExecute(f *testing.F) {
	for i, s := range fuzzSeeds {
		f.Add(s, uint64(i))
	}
	f.Fuzz(func(t *testing.T, text string, seed uint64) {
		q, err := Parse(text)
		if err != nil {
			return
		}
		rng := rand.New(rand.NewPCG(seed, 7))
		data := mapSource{"/o": randomOrders(rng, 20), "/c": {"1": `{"cust":1,"vip":true}`}}
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		params := []any{int64(rng.IntN(5)), "01/31/2024", 2.5, true}
		res, err := q.Execute(ctx, data, params, Options{MaxRows: 10000})
		if err == nil {
			if _, err := res.MarshalJSON(); err != nil {
				t.Fatalf("%q: result does not encode: %v", text, err)
			}
		}
	})
}

// FuzzMember: reading a member of a valid JSON object answers the value
// gjson's full reading gives (package member's quick find and fromText's
// single parse change nothing a query sees).
func FuzzMember(f *testing.F) {
	for _, s := range []string{`{"a":1,"b":"x"}`, `{"a":12345678901234567890,"b":-0}`, `{"a":"\u00e9\n","a":2}`, `{"b":{"a":1},"a":[1,{"a":2}]}`, `{"a":1.5e3,"c":true,"d":null}`, `{"\u0061":false}`} {
		f.Add(s, "a")
	}
	f.Fuzz(func(t *testing.T, raw, name string) {
		if !json.Valid([]byte(raw)) || !strings.HasPrefix(raw, "{") {
			return
		}
		got := Object{raw: raw}.member(name)
		want := Undefined
		if r := gjson.Get(raw, gjson.Escape(name)); r.Exists() {
			want = fromResult(r)
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("member %q of %s = %#v, gjson: %#v", name, raw, got, want)
		}
	})
}
