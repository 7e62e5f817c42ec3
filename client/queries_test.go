package client_test

import (
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/kvnode/kvnode/client"
	"github.com/kvnode/kvnode/internal/waitfor"
)

// TestQueries runs ad-hoc and named queries with bind values of every
// kind, and the index operations, and each of their errors, on a real
// 3-member cluster.
func TestQueries(t *testing.T) {
	tc := startCluster(t, 3, nil)
	c := tc.c
	if err := c.CreateRegion(ctx(t), client.RegionInfo{Name: "orders", Type: client.Partition}); err != nil {
		t.Fatalf("CreateRegion: %v", err)
	}
	orders := c.Region("orders")
	var entries []client.Entry
	for i := 1; i <= 9; i++ {
		entries = append(entries, client.Entry{Key: "o" + string(rune('0'+i)), Value: map[string]any{
			"@type": "Order", "id": i, "customer": []string{"ann", "O'Brien", "bob"}[i%3], "total": float64(i) * 1.5,
		}})
	}
	if err := orders.PutAll(ctx(t), entries); err != nil {
		t.Fatalf("PutAll: %v", err)
	}
	ids := func(t *testing.T, rows []json.RawMessage, err error, want string) {
		t.Helper()
		if err != nil {
			t.Fatalf("query: %v", err)
		}
		var got []string
		for _, r := range rows {
			got = append(got, string(r))
		}
		if s := strings.Join(got, ","); s != want {
			t.Fatalf("rows = %s, want %s", s, want)
		}
	}

	// staleSent: a request since the last take asked for a stale read.
	staleSent := func() bool {
		for _, ex := range tc.seen.take() {
			if strings.Contains(ex.url, "consistency=stale") {
				return true
			}
		}
		return false
	}

	t.Run("adhoc", func(t *testing.T) {
		rows, err := c.Query(ctx(t), "SELECT o.id FROM /orders o WHERE o.customer = $1 AND o.total > $2 ORDER BY o.id", "O'Brien", 2.0)
		ids(t, rows, err, "4,7")
		// The same, stale: from the replica of the member asked, which the
		// writes have reached once a linearizable read saw them... or soon.
		tc.seen.take()
		waitfor.Cond(t, 10*time.Second, "a stale query to see the rows", func() bool {
			rows, err := c.QueryWith(ctx(t), "SELECT o.id FROM /orders o WHERE o.customer = $1 AND o.total > $2 ORDER BY o.id", []any{"O'Brien", 2.0}, client.Stale())
			return err == nil && len(rows) == 2 && string(rows[0]) == "4" && string(rows[1]) == "7"
		})
		if !staleSent() {
			t.Error("QueryWith(Stale()) did not send consistency=stale")
		}
		// A $ inside a string literal is text; an explicit type; an int.
		rows, err = c.Query(ctx(t), "SELECT o.id FROM /orders o WHERE o.id >= $1 AND o.id < $2 AND o.customer <> '$1' ORDER BY o.id DESC", client.Typed{Type: "int", Value: "7"}, 9)
		ids(t, rows, err, "8,7")
		rows, err = c.Query(ctx(t), "SELECT o.id FROM /orders o WHERE (o.total > $1) = $2 AND o.id < $3 ORDER BY o.id", float32(3), false, int64(-1)*-3)
		ids(t, rows, err, "1,2")
		rows, err = c.Query(ctx(t), "SELECT o.id FROM /orders o WHERE o.id = $1", -5)
		ids(t, rows, err, "")
		if _, err := c.Query(ctx(t), "SELECT * FROM /orders o WHERE o.id = $2", 1); !errors.Is(err, client.ErrInvalidArgument) {
			t.Fatalf("too few binds = %v, want ErrInvalidArgument", err)
		}
		if _, err := c.Query(ctx(t), "SELECT * FROM /orders o WHERE o.id = $1", 1, 2); !errors.Is(err, client.ErrInvalidArgument) {
			t.Fatalf("too many binds = %v, want ErrInvalidArgument", err)
		}
		if _, err := c.Query(ctx(t), "SELECT * FROM /orders o WHERE o.id = $1", []int{1}); !errors.Is(err, client.ErrInvalidArgument) {
			t.Fatalf("a slice as a bind = %v, want ErrInvalidArgument", err)
		}
		// A query's own failure is the API's 500.
		var e *client.Error
		if _, err := c.Query(ctx(t), "SELEC nothing"); !errors.As(err, &e) || e.Status != http.StatusInternalServerError || e.Message == "" {
			t.Fatalf("bad OQL = %v, want a 500 with its cause", err)
		}
	})

	t.Run("named", func(t *testing.T) {
		q := c.Queries()
		const text = "SELECT o.id FROM /orders o WHERE o.customer = $1 AND o.id > $2 ORDER BY o.id"
		if err := q.Create(ctx(t), "byCustomer", text); err != nil {
			t.Fatalf("Create: %v", err)
		}
		err := q.Create(ctx(t), "byCustomer", "SELECT * FROM /orders")
		var e *client.Error
		if !errors.Is(err, client.ErrConflict) || !errors.As(err, &e) || !strings.Contains(string(e.Current), "o.customer = $1") {
			t.Fatalf("Create again = %v, want ErrConflict with the stored query", err)
		}
		if err := q.Create(ctx(t), "bad", "SELEC nothing"); !errors.Is(err, client.ErrInvalid) {
			t.Fatalf("Create(bad OQL) = %v, want ErrInvalid", err)
		}
		list, err := q.List(ctx(t))
		if err != nil || len(list) != 1 || list[0] != (client.NamedQuery{ID: "byCustomer", OQL: text}) {
			t.Fatalf("List = %+v, %v", list, err)
		}
		rows, err := q.Run(ctx(t), "byCustomer", "ann", 3)
		ids(t, rows, err, "6,9")
		tc.seen.take()
		waitfor.Cond(t, 10*time.Second, "a stale run to see the rows", func() bool {
			rows, err := q.RunWith(ctx(t), "byCustomer", []any{"ann", 3}, client.Stale())
			return err == nil && len(rows) == 2 && string(rows[0]) == "6" && string(rows[1]) == "9"
		})
		if !staleSent() {
			t.Error("RunWith(Stale()) did not send consistency=stale")
		}
		rows, err = q.Run(ctx(t), "byCustomer", "ann", client.Typed{Type: "java.lang.Short", Value: "6"})
		ids(t, rows, err, "9")
		if _, err := q.Run(ctx(t), "byCustomer", "ann"); !errors.As(err, &e) || e.Status != http.StatusInternalServerError {
			t.Fatalf("Run with a bind missing = %v, want the API's 500", err)
		}
		if _, err := q.Run(ctx(t), "byCustomer", "ann", client.Typed{Type: "int", Value: "x"}); !errors.As(err, &e) || e.Status != http.StatusInternalServerError {
			t.Fatalf("Run with a bad int = %v, want the API's 500", err)
		}
		if _, err := q.Run(ctx(t), "nope"); !errors.Is(err, client.ErrNotFound) {
			t.Fatalf("Run(nope) = %v, want ErrNotFound", err)
		}
		if err := q.Update(ctx(t), "byCustomer", "SELECT o.id FROM /orders o WHERE o.customer = $1 AND o.id < $2 ORDER BY o.id"); err != nil {
			t.Fatalf("Update: %v", err)
		}
		rows, err = q.Run(ctx(t), "byCustomer", "bob", 6)
		ids(t, rows, err, "2,5")
		if err := q.Update(ctx(t), "nope", "SELECT * FROM /orders"); !errors.Is(err, client.ErrNotFound) {
			t.Fatalf("Update(nope) = %v, want ErrNotFound", err)
		}
		if err := q.Update(ctx(t), "byCustomer", "SELEC nothing"); !errors.Is(err, client.ErrInvalid) {
			t.Fatalf("Update(bad OQL) = %v, want ErrInvalid", err)
		}
		if err := q.Delete(ctx(t), "byCustomer"); err != nil {
			t.Fatalf("Delete: %v", err)
		}
		if err := q.Delete(ctx(t), "byCustomer"); !errors.Is(err, client.ErrNotFound) {
			t.Fatalf("Delete again = %v, want ErrNotFound", err)
		}
		if list, err := q.List(ctx(t)); err != nil || len(list) != 0 {
			t.Fatalf("List after Delete = %+v, %v", list, err)
		}
	})

	t.Run("indexes", func(t *testing.T) {
		x := c.Indexes("orders")
		def := client.Index{Name: "byCustomer", Expression: "o.customer", From: "/orders o"}
		if err := x.Create(ctx(t), def); err != nil {
			t.Fatalf("Create: %v", err)
		}
		var e *client.Error
		if err := x.Create(ctx(t), def); !errors.Is(err, client.ErrConflict) || !errors.As(err, &e) || !strings.Contains(string(e.Current), "o.customer") {
			t.Fatalf("Create again = %v, want ErrConflict with the existing definition", err)
		}
		if err := x.Create(ctx(t), client.Index{Name: "bad", From: "/orders o"}); !errors.Is(err, client.ErrInvalid) {
			t.Fatalf("Create(no expression) = %v, want ErrInvalid", err)
		}
		got, err := x.Get(ctx(t), "byCustomer")
		if err != nil || got.Name != def.Name || got.Expression != def.Expression || got.From != def.From || got.Region != "orders" {
			t.Fatalf("Get = %+v, %v", got, err)
		}
		list, err := x.List(ctx(t))
		if err != nil || len(list) != 1 || list[0].Name != "byCustomer" {
			t.Fatalf("List = %+v, %v", list, err)
		}
		// The index serves the query; the answer is the same.
		rows, err := c.Query(ctx(t), "SELECT o.id FROM /orders o WHERE o.customer = $1 ORDER BY o.id", "bob")
		ids(t, rows, err, "2,5,8")
		if _, err := x.Get(ctx(t), "nope"); !errors.Is(err, client.ErrNotFound) {
			t.Fatalf("Get(nope) = %v, want ErrNotFound", err)
		}
		if _, err := c.Indexes("nope").List(ctx(t)); !errors.Is(err, client.ErrNotFound) {
			t.Fatalf("List on an unknown region = %v, want ErrNotFound", err)
		}
		if err := x.Delete(ctx(t), "byCustomer"); err != nil {
			t.Fatalf("Delete: %v", err)
		}
		if err := x.Delete(ctx(t), "byCustomer"); !errors.Is(err, client.ErrNotFound) {
			t.Fatalf("Delete again = %v, want ErrNotFound", err)
		}
	})
}
