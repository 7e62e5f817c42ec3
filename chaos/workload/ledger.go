package workload

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/kvnode/kvnode/client"
)

// Ledger writes keys that are never touched again (L1, L2, ...) one after
// another through random members, and remembers which writes were
// acknowledged. At the end every acknowledged key must be on every
// member: a write a client was told is stored may not be lost, whatever
// happened in between.
type Ledger struct {
	Region string
	// URLs are the members' REST base URLs; Names their node names.
	URLs, Names []string

	mu      sync.Mutex
	acked   []int64
	unknown int
}

// Run writes until ctx ends.
func (l *Ledger) Run(ctx context.Context) {
	cl, err := client.New(client.Config{Endpoints: l.URLs})
	if err != nil {
		return
	}
	defer cl.Close()
	r := cl.Region(l.Region)
	for n := int64(1); ctx.Err() == nil; n++ {
		// A put sent again is harmless here: the key is written once, and
		// only an acknowledgement counts.
		wctx, cancel := context.WithTimeout(ctx, 3*time.Second)
		err := r.Put(wctx, fmt.Sprintf("L%d", n), ValueJSON(n))
		cancel()
		l.mu.Lock()
		if err == nil {
			l.acked = append(l.acked, n)
		} else {
			l.unknown++
		}
		l.mu.Unlock()
		if err != nil {
			time.Sleep(20 * time.Millisecond)
		}
	}
}

// LedgerResult is what Check found.
type LedgerResult struct {
	Acked    int
	Lost     int // acknowledged keys missing on some member, counted once
	Problems []string
}

// Check waits (up to 30s) until every member's own replica holds every
// acknowledged key with its value, and also reads them linearizably
// through every member.
func (l *Ledger) Check(ctx context.Context) LedgerResult {
	l.mu.Lock()
	acked := append([]int64(nil), l.acked...)
	l.mu.Unlock()
	res := LedgerResult{Acked: len(acked)}
	if len(acked) == 0 {
		return res
	}
	lost := map[int64]bool{}
	for m := range l.URLs {
		// This member alone, each read as sent (no single hop).
		cl, err := client.New(client.Config{Endpoints: []string{l.URLs[m]}, DisableSingleHop: true})
		if err != nil {
			res.Problems = append(res.Problems, fmt.Sprintf("%s: %v", l.Names[m], err))
			continue
		}
		defer cl.Close()
		for _, stale := range []bool{true, false} {
			deadline := time.Now().Add(30 * time.Second)
			for {
				missing, err := l.missing(ctx, cl.Region(l.Region), stale, acked)
				if err == nil && len(missing) == 0 {
					break
				}
				if time.Now().After(deadline) || ctx.Err() != nil {
					kind := "linearizable"
					if stale {
						kind = "own replica"
					}
					if err != nil {
						res.Problems = append(res.Problems, fmt.Sprintf("%s (%s): %v", l.Names[m], kind, err))
						break
					}
					for _, n := range missing {
						lost[n] = true
					}
					res.Problems = append(res.Problems, fmt.Sprintf("%s (%s) lacks %d acknowledged keys, e.g. %s", l.Names[m], kind, len(missing), sample(missing)))
					break
				}
				time.Sleep(250 * time.Millisecond)
			}
		}
	}
	res.Lost = len(lost)
	return res
}

// ledgerBatch is how many keys one read asks for.
const ledgerBatch = 500

// missing reads the acknowledged ledger keys through r's member, from its
// own replica when stale, and lists those it lacks (or holds with a
// wrong value).
func (l *Ledger) missing(ctx context.Context, r *client.Region, stale bool, acked []int64) ([]int64, error) {
	var opts []client.Option
	if stale {
		opts = append(opts, client.Stale())
	}
	var out []int64
	for len(acked) > 0 {
		batch := acked[:min(ledgerBatch, len(acked))]
		acked = acked[len(batch):]
		keys := make([]string, len(batch))
		for i, n := range batch {
			keys[i] = fmt.Sprintf("L%d", n)
		}
		rctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		values, err := r.GetMany(rctx, keys, opts...)
		cancel()
		if err != nil {
			return nil, err
		}
		for i, n := range batch {
			if v, err := ParseValue(values[i]); values[i] == nil || err != nil || v != n {
				out = append(out, n)
			}
		}
	}
	return out, nil
}

func sample(ns []int64) string {
	ns = append([]int64(nil), ns...)
	sort.Slice(ns, func(i, j int) bool { return ns[i] < ns[j] })
	var parts []string
	for i, n := range ns {
		if i == 5 {
			parts = append(parts, "...")
			break
		}
		parts = append(parts, fmt.Sprintf("L%d", n))
	}
	return strings.Join(parts, ",")
}
