package kvbench

import (
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
)

// keyChooser draws key indexes in [0, n).
type keyChooser interface {
	next() int
}

type uniformKeys struct {
	rng *rand.Rand
	n   int
}

func (u uniformKeys) next() int { return u.rng.IntN(u.n) }

// zipfKeys draws from math/rand/v2's Zipf: P(k) ∝ (v + k)^(-s), so key 0
// is the hottest and the heat falls off with the index.
type zipfKeys struct{ z *rand.Zipf }

func (z zipfKeys) next() int { return int(z.z.Uint64()) }

// newKeyChooser is the chooser of one client, drawing from rng.
func newKeyChooser(cfg *Config, rng *rand.Rand) keyChooser {
	if cfg.Zipf {
		return zipfKeys{rand.NewZipf(rng, cfg.ZipfS, cfg.ZipfV, uint64(cfg.Keys-1))}
	}
	return uniformKeys{rng: rng, n: cfg.Keys}
}

// distinctKeys draws n different indexes (n ≤ the key count), for one
// multi-key request, which may not name a key twice. Under a steep zipf
// the draws repeat; after a bounded number of tries the rest are taken
// in order after the last one drawn, so the loop always ends.
func distinctKeys(kc keyChooser, n, keys int, buf []int) []int {
	buf = buf[:0]
	seen := make(map[int]bool, n)
	for tries := 0; len(buf) < n && tries < 8*n; tries++ {
		if i := kc.next(); !seen[i] {
			seen[i] = true
			buf = append(buf, i)
		}
	}
	for i := 0; len(buf) < n; i = (i + 1) % keys {
		if !seen[i] {
			seen[i] = true
			buf = append(buf, i)
		}
	}
	return buf
}

// keyNamer names the keys of the key space: the prefix and the index,
// zero-padded so that names sort as indexes do.
type keyNamer struct {
	prefix string
	width  int
}

func newKeyNamer(cfg *Config) keyNamer {
	return keyNamer{prefix: cfg.KeyPrefix, width: max(8, len(strconv.Itoa(cfg.Keys-1)))}
}

func (k keyNamer) name(i int) string {
	s := strconv.Itoa(i)
	if pad := k.width - len(s); pad > 0 {
		s = strings.Repeat("0", pad) + s
	}
	return k.prefix + s
}

// fresh is a key outside the key space, unique to this run, client and
// sequence number: the keys put-if-absent creates.
func (k keyNamer) fresh(run string, client int, seq uint64) string {
	return fmt.Sprintf("%snew-%s-%d-%d", k.prefix, run, client, seq)
}
