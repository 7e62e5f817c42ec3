package kvrest

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"regexp"
	"strconv"
	"strings"

	"github.com/kvnode/kvnode/bench/kvbench"
	"github.com/kvnode/kvnode/client"
)

// placeholder matches the bind placeholders of an OQL text, $1, $2...
var placeholder = regexp.MustCompile(`\$([0-9]+)`)

// queryPlan is the query workload's OQL text ({region} replaced) and how
// it runs: Client.QueryWith (GET /kv/v1/queries/adhoc, the client writing
// the bind values into the text), or Queries.RunWith of the named query
// (POST /kv/v1/queries/{id} with the bind values), linearizable or stale.
type queryPlan struct {
	text   string
	params int // the highest placeholder number: binds per run
	named  bool
	id     string
	opts   []client.Option
}

// newQueryPlan prepares cfg's query.
func newQueryPlan(cfg *kvbench.Config) *queryPlan {
	q := &queryPlan{text: strings.ReplaceAll(cfg.Query, "{region}", cfg.Region), named: cfg.NamedQuery, id: cfg.QueryID}
	if cfg.Stale {
		q.opts = []client.Option{client.Stale()}
	}
	for _, m := range placeholder.FindAllStringSubmatch(q.text, -1) {
		if n, err := strconv.Atoi(m[1]); err == nil {
			q.params = max(q.params, n)
		}
	}
	return q
}

// binds draws the values of $1..$params: customer ids, bound as the API's
// int.
func (q *queryPlan) binds(rng *rand.Rand) []any {
	b := make([]any, q.params)
	for i := range b {
		b[i] = int32(rng.IntN(kvbench.Customers))
	}
	return b
}

// run runs the query once with binds drawn from rng.
func (q *queryPlan) run(ctx context.Context, c *client.Client, rng *rand.Rand) error {
	var err error
	if q.named {
		_, err = c.Queries().RunWith(ctx, q.id, q.binds(rng), q.opts...)
	} else {
		_, err = c.QueryWith(ctx, q.text, q.binds(rng), q.opts...)
	}
	return opError(err)
}

// storeQuery stores the named query under its id, replacing the text of a
// query of the same id.
func (t *target) storeQuery(ctx context.Context) error {
	q := t.query
	err := t.retry(ctx, "store query", func(ctx context.Context) error { return t.c.Queries().Create(ctx, q.id, q.text) })
	if errors.Is(err, client.ErrConflict) {
		err = t.retry(ctx, "update query", func(ctx context.Context) error { return t.c.Queries().Update(ctx, q.id, q.text) })
	}
	if err != nil {
		return fmt.Errorf("store query %s: %w", q.id, err)
	}
	return nil
}
