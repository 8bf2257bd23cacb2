package agent

import (
	"github.com/ql3/ql3/core/scriptpath"
	"github.com/ql3/ql3/worker/scriptcache"

	"fmt"
	"log/slog"
	"math/rand/v2"
	"time"

	"github.com/ql3/ql3/core/lease"
	"github.com/ql3/ql3/core/placement"
	"github.com/ql3/ql3/worker/clock"
)

// Profile numbers (DESIGN.md §8, QL3-0234).
const (
	RouterCapacity = 1
	RouterCadence  = 2 * time.Second
	RouterLogBytes = 4 << 20
	NodeCapacity   = 8
	NodeCadence    = 500 * time.Millisecond
	NodeLogBytes   = 64 << 20

	DefaultHeartbeat   = lease.DefaultHeartbeatMs * time.Millisecond // the lease policy's (core/lease)
	DefaultDrainGrace  = 60 * time.Second
	DefaultFenceMargin = lease.DefaultFenceMarginMs * time.Millisecond
	DefaultKillGrace   = lease.DefaultKillGraceMs * time.Millisecond
	MaxPullTries       = 16
	PullBackoffCap     = 60 * time.Second
	pullBackoffBase    = time.Second
	maxLogBytes        = 1 << 30
	maxIdlePause       = 60 * time.Second
	// chunksPerTick bounds log upload per pass (64 × 32 KiB = 2 MiB); a
	// pass also yields as soon as a heartbeat is due, so renewals keep
	// their pace on a slow link.
	chunksPerTick = 64
)

// Config is what the agent needs; app builds it from flags, QL3_* and the
// config file.
type Config struct {
	AgentVersion string // "ql3-worker/<version> linux/<arch>"
	Capacity     int    // concurrent attempts (router 1, node 8)
	Cadence      time.Duration
	LogBytes     int64 // spool cap per attempt
	// Heartbeat is used until the authority names its interval.
	Heartbeat    time.Duration
	DrainGrace   time.Duration // running work may finish within this after SIGTERM
	FenceMargin  time.Duration // stop this long (plus KillGrace) before a lease lapses
	KillGrace    time.Duration // the executor's SIGTERM → SIGKILL grace
	Capabilities placement.Capabilities
	// Scripts is the script tree cache (ADR 0052); nil: script tasks fail
	// at start. Interpreters maps extensions to programs (nil: defaults).
	Scripts *scriptcache.Cache
	// DepsRoot holds a deps directory per project (<root>/<project id>,
	// ADR 0062); "" gives processes none.
	DepsRoot     string
	Interpreters scriptpath.Interpreters

	Clock  clock.Clock
	Logger *slog.Logger
	Rand   *rand.Rand // jitter; nil → a random seed
	Hooks  Hooks
}

// Hooks let tests observe the loop without sleeping. Production leaves them
// nil.
type Hooks struct {
	// Idle is called each time the loop is about to wait for its cadence
	// timer (the timer already exists, so advancing a fake clock fires it).
	Idle func()
	// IdleFor is called just before Idle with the timer's duration (the
	// cadence, or less when a paced pull is due sooner), so a test can
	// advance a fake clock to exactly the next pass.
	IdleFor func(wait time.Duration)
	// Fenced is called when the worker stops an attempt on its own
	// (attempt id, reason), from the goroutine that decided it.
	Fenced func(attemptID, reason string)
}

func (c *Config) defaults() error {
	if c.Capacity == 0 {
		c.Capacity = RouterCapacity
	}
	if c.Capacity < 1 || c.Capacity > 64 {
		return fmt.Errorf("capacity: must be 1..64, got %d", c.Capacity)
	}
	if c.Cadence == 0 {
		c.Cadence = RouterCadence
	}
	if c.Cadence < 10*time.Millisecond || c.Cadence > time.Minute {
		return fmt.Errorf("cadence: must be 10ms..1m, got %s", c.Cadence)
	}
	if c.LogBytes == 0 {
		c.LogBytes = RouterLogBytes
	}
	if c.LogBytes < 1024 || c.LogBytes > maxLogBytes {
		return fmt.Errorf("logMaxBytes: must be 1024..%d, got %d", maxLogBytes, c.LogBytes)
	}
	if c.Heartbeat == 0 {
		c.Heartbeat = DefaultHeartbeat
	}
	if c.Heartbeat < 100*time.Millisecond || c.Heartbeat > 5*time.Minute {
		return fmt.Errorf("heartbeat: must be 100ms..5m, got %s", c.Heartbeat)
	}
	if c.DrainGrace == 0 {
		c.DrainGrace = DefaultDrainGrace
	}
	if c.DrainGrace < 0 || c.DrainGrace > time.Hour {
		return fmt.Errorf("drainGrace: must be 0..1h, got %s", c.DrainGrace)
	}
	if c.FenceMargin == 0 {
		c.FenceMargin = DefaultFenceMargin
	}
	if c.KillGrace == 0 {
		c.KillGrace = DefaultKillGrace
	}
	if c.AgentVersion == "" {
		c.AgentVersion = "ql3-worker/dev"
	}
	if c.Clock == nil {
		c.Clock = clock.Real{}
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	if c.Rand == nil {
		c.Rand = rand.New(rand.NewPCG(rand.Uint64(), rand.Uint64()))
	}
	return nil
}

// fullJitter is the full-jitter exponential backoff after n failures:
// uniform in [0, min(cap, base·2^n)).
func fullJitter(r *rand.Rand, n int, base, cap time.Duration) time.Duration {
	d := cap
	if n < 30 && base<<n < cap {
		d = base << n
	}
	if d <= 0 {
		return 0
	}
	return time.Duration(r.Int64N(int64(d)))
}
