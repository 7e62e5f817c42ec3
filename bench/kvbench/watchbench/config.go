package watchbench

import (
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/kvnode/kvnode/bench/kvbench"
)

// Limits on one run: every loop is bounded.
const (
	MaxWatchers = 20_000
	// MaxWrites bounds rate × duration: each watcher keeps a bit per write.
	MaxWrites = 10_000_000
)

// Defaults of the watch workload.
const (
	DefaultWatchers     = 1000
	DefaultRate         = 1000
	DefaultReadyTimeout = time.Minute
	DefaultDrainTimeout = 30 * time.Second
	DefaultSampleEvery  = 500 * time.Millisecond
)

// Config is one watch run.
//
// From the embedded kvbench.Config it takes the endpoints (the watchers
// all watch the first; the writes go to every endpoint in turn), the
// credentials and TLS files, the request timeout (of the writes), the
// region (and CreateRegion), Keys and KeyPrefix (the writes spread over
// Keys keys), ValueSize (values are padded up to it), Rate (writes per
// second, > 0), Duration (of the writes), Concurrency[0] (writers in
// flight), MaxOps (a bound on the writes) and Label. Its Workload must be
// kvbench.Watch; it preloads nothing.
type Config struct {
	// Its Target is the system measured: TargetKvnode ("" too) or
	// TargetEtcd (its JSON gateway; the region is then a key prefix, and
	// CreateRegion is refused: etcd has no regions to create).
	kvbench.Config
	// Watchers is the number of SSE streams opened on the member.
	Watchers int
	// ReadyTimeout bounds the wait for every watcher's `ready` event.
	ReadyTimeout time.Duration
	// DrainTimeout bounds the wait, after the last write, for every
	// watcher to receive every acknowledged write.
	DrainTimeout time.Duration
	// SampleEvery is how often the member's /metrics is read while the
	// writes flow (for the peak).
	SampleEvery time.Duration
}

// Default is a watch run of DefaultWatchers watchers and DefaultRate
// writes per second on kvbench's default endpoint and region.
func Default() Config {
	c := Config{Config: kvbench.Default(), Watchers: DefaultWatchers, ReadyTimeout: DefaultReadyTimeout,
		DrainTimeout: DefaultDrainTimeout, SampleEvery: DefaultSampleEvery}
	c.Workload, c.Rate, c.ValueSize, c.Preload = kvbench.Watch, DefaultRate, 0, false
	return c
}

// Validate refuses a run that is not a watch run, or not bounded.
func (c *Config) Validate() error {
	if err := c.Config.Validate(); err != nil {
		return err
	}
	if c.Workload != kvbench.Watch {
		return fmt.Errorf("workload %q: watchbench runs only %q", c.Workload, kvbench.Watch)
	}
	switch c.Target {
	case "", TargetKvnode:
	case TargetEtcd:
		if c.CreateRegion != "" {
			return errors.New("etcd has no regions to create: its keys are prefixed with the region's name")
		}
	default:
		return fmt.Errorf("target %q: want %s or %s", c.Target, TargetKvnode, TargetEtcd)
	}
	if c.Watchers < 1 || c.Watchers > MaxWatchers {
		return fmt.Errorf("watchers must be in 1..%d", MaxWatchers)
	}
	if c.Rate <= 0 {
		return errors.New("the watch workload writes at a fixed rate: give --rate > 0")
	}
	if len(c.Concurrency) != 1 {
		return errors.New("the watch workload has one concurrency (its writers), not a sweep")
	}
	if c.Warmup > 0 {
		return errors.New("the watch workload has no warm-up")
	}
	if n := c.writes(); n < 1 || n > MaxWrites {
		return fmt.Errorf("rate × duration is %d writes: want 1..%d", n, MaxWrites)
	}
	if c.ReadyTimeout <= 0 || c.DrainTimeout <= 0 || c.SampleEvery <= 0 {
		return errors.New("ready timeout, drain timeout and sample interval must be positive")
	}
	return nil
}

// writes is the number of writes due: rate × duration, at most MaxOps.
func (c *Config) writes() int64 {
	return min(int64(math.Ceil(c.Rate*c.Duration.Seconds())), c.MaxOps)
}
