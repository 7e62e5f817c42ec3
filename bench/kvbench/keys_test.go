package kvbench

import (
	"math"
	"math/rand/v2"
	"slices"
	"sort"
	"testing"
)

func draw(kc keyChooser, n, keys int, t *testing.T) []int {
	t.Helper()
	counts := make([]int, keys)
	for range n {
		i := kc.next()
		if i < 0 || i >= keys {
			t.Fatalf("drew key %d outside [0,%d)", i, keys)
		}
		counts[i]++
	}
	return counts
}

// TestUniformKeys: every key about as often as every other.
func TestUniformKeys(t *testing.T) {
	cfg := Default()
	cfg.Keys = 20
	const n = 200_000
	counts := draw(newKeyChooser(&cfg, rand.New(rand.NewPCG(1, 2))), n, cfg.Keys, t)
	want := float64(n) / float64(cfg.Keys)
	chi2 := 0.0
	for k, c := range counts {
		if math.Abs(float64(c)-want) > 0.05*want {
			t.Errorf("key %d drawn %d times, want %.0f ± 5%%", k, c, want)
		}
		chi2 += (float64(c) - want) * (float64(c) - want) / want
	}
	// 19 degrees of freedom: 43.8 is the 0.999 quantile.
	if chi2 > 43.8 {
		t.Errorf("chi² = %.1f over 19 degrees of freedom: not uniform", chi2)
	}
}

// TestZipfKeys: the frequencies follow (v+k)^-s, key 0 the hottest.
func TestZipfKeys(t *testing.T) {
	cfg := Default()
	cfg.Keys, cfg.Zipf, cfg.ZipfS, cfg.ZipfV = 1000, true, 1.2, 1
	const n = 400_000
	counts := draw(newKeyChooser(&cfg, rand.New(rand.NewPCG(3, 4))), n, cfg.Keys, t)
	weights := make([]float64, cfg.Keys)
	sum := 0.0
	for k := range weights {
		weights[k] = math.Pow(cfg.ZipfV+float64(k), -cfg.ZipfS)
		sum += weights[k]
	}
	for _, k := range []int{0, 1, 2, 5, 10, 50} {
		want := weights[k] / sum * n
		if got := float64(counts[k]); math.Abs(got-want) > 0.1*want {
			t.Errorf("key %d drawn %.0f times, want %.0f ± 10%% (zipf s=%g v=%g)", k, got, want, cfg.ZipfS, cfg.ZipfV)
		}
	}
	if counts[0] < 10*counts[100] {
		t.Errorf("key 0 drawn %d times, key 100 %d: not skewed", counts[0], counts[100])
	}
	// The hottest 1% of the keys carry their share.
	top := 0
	wantTop := 0.0
	for k := range 10 {
		top += counts[k]
		wantTop += weights[k] / sum * n
	}
	if math.Abs(float64(top)-wantTop) > 0.03*wantTop {
		t.Errorf("the 10 hottest keys drew %d, want %.0f ± 3%%", top, wantTop)
	}
}

// TestDistinctKeys: a multi-key request never names a key twice, even
// when the distribution keeps drawing the same one.
func TestDistinctKeys(t *testing.T) {
	cfg := Default()
	cfg.Keys, cfg.Zipf, cfg.ZipfS = 12, true, 6 // key 0 nearly always
	kc := newKeyChooser(&cfg, rand.New(rand.NewPCG(5, 6)))
	var buf []int
	for _, n := range []int{2, 10, 12} {
		for range 50 {
			buf = distinctKeys(kc, n, cfg.Keys, buf)
			if len(buf) != n {
				t.Fatalf("asked %d keys, got %v", n, buf)
			}
			s := slices.Clone(buf)
			sort.Ints(s)
			if len(slices.Compact(s)) != n || s[0] < 0 || s[n-1] >= cfg.Keys {
				t.Fatalf("keys %v: not %d distinct keys in [0,%d)", buf, n, cfg.Keys)
			}
		}
	}
}

func TestKeyNames(t *testing.T) {
	cfg := Default()
	names := newKeyNamer(&cfg)
	if got := names.name(7); got != "kvbench-00000007" {
		t.Errorf("name(7) = %q", got)
	}
	cfg.Keys, cfg.KeyPrefix = MaxKeys, "k"
	names = newKeyNamer(&cfg)
	if a, b := names.name(99), names.name(MaxKeys-1); a >= b || len(a) != len(b) {
		t.Errorf("names %q and %q do not sort as their indexes", a, b)
	}
	if a, b := names.fresh("r1", 3, 9), names.fresh("r1", 30, 9); a == b || a != "knew-r1-3-9" {
		t.Errorf("fresh keys %q, %q", a, b)
	}
}

func TestValues(t *testing.T) {
	for _, size := range []int{0, 100, 256, 1000, 4096} {
		v := value(42, 7, size)
		if size > 160 && len(v) != size {
			t.Errorf("value of size %d has %d bytes", size, len(v))
		}
		rev, err := revision(v)
		if err != nil || rev != 7 {
			t.Errorf("revision(%s) = %d, %v; want 7", v, rev, err)
		}
	}
	if rev, err := revision([]byte(`{"total":1}`)); err != nil || rev != 0 {
		t.Errorf("a value without rev: %d, %v", rev, err)
	}
}
