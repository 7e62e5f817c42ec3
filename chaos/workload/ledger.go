package workload

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"sort"
	"strings"
	"sync"
	"time"
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
	hc := &http.Client{Timeout: 3 * time.Second}
	defer hc.CloseIdleConnections()
	rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 7))
	for n := int64(1); ctx.Err() == nil; n++ {
		base := l.URLs[rng.IntN(len(l.URLs))]
		req, err := http.NewRequestWithContext(ctx, http.MethodPut, fmt.Sprintf("%s/kv/v1/%s/L%d", base, l.Region, n), bytes.NewReader(ValueJSON(n)))
		if err != nil {
			return
		}
		req.Header.Set("Content-Type", "application/json")
		resp, err := hc.Do(req)
		if err != nil {
			l.mu.Lock()
			l.unknown++
			l.mu.Unlock()
			time.Sleep(20 * time.Millisecond)
			continue
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		_ = resp.Body.Close()
		l.mu.Lock()
		if resp.StatusCode == http.StatusOK {
			l.acked = append(l.acked, n)
		} else {
			l.unknown++
		}
		l.mu.Unlock()
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
	hc := &http.Client{Timeout: 10 * time.Second}
	defer hc.CloseIdleConnections()
	lost := map[int64]bool{}
	for m := range l.URLs {
		for _, stale := range []bool{true, false} {
			deadline := time.Now().Add(30 * time.Second)
			for {
				missing, err := l.missing(ctx, hc, l.URLs[m], stale, acked)
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

// missing reads the region's entries through base and lists the
// acknowledged ledger numbers it lacks (or holds with a wrong value).
func (l *Ledger) missing(ctx context.Context, hc *http.Client, base string, stale bool, acked []int64) ([]int64, error) {
	url := fmt.Sprintf("%s/kv/v1/%s?limit=ALL", base, l.Region)
	if stale {
		url += "&consistency=stale"
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, err
	}
	resp, err := hc.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET %s: %s", url, resp.Status)
	}
	var body map[string][]json.RawMessage
	if err := json.NewDecoder(resp.Body).Decode(&body); err != nil {
		return nil, err
	}
	// Content-Location names the keys in the order of the values.
	loc := resp.Header.Get("Content-Location")
	i := strings.LastIndex(loc, "/")
	keys := strings.Split(loc[i+1:], ",")
	values := body[l.Region]
	if len(keys) != len(values) {
		return nil, fmt.Errorf("%d keys in Content-Location, %d values", len(keys), len(values))
	}
	have := map[int64]bool{}
	for k, key := range keys {
		var n int64
		if _, err := fmt.Sscanf(key, "L%d", &n); err != nil {
			continue
		}
		if v, err := ParseValue(values[k]); err == nil && v == n {
			have[n] = true
		}
	}
	var out []int64
	for _, n := range acked {
		if !have[n] {
			out = append(out, n)
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
