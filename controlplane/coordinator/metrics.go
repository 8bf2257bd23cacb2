package coordinator

import (
	"sync/atomic"
	"time"
)

// Metrics are the coordinator's counters and gauges (wired to /metrics by
// the composition root). Every field is safe for concurrent use.
type Metrics struct {
	Rounds               atomic.Int64
	Claimed              atomic.Int64 // schedule rows claimed
	ClaimedChained       atomic.Int64 // of those, claimed in the round trip of the previous round's admission
	TakenOver            atomic.Int64 // of those, taken over from a claim that expired unadmitted (its replica died or stalled)
	Admitted             atomic.Int64 // Runs admitted
	Skipped              atomic.Int64 // missed occurrences skipped (cursor advanced, no Run)
	Initialized          atomic.Int64 // cursors (re)initialised
	Released             atomic.Int64 // claims given back without a change (Wait)
	Raced                atomic.Int64 // admissions refused because the claim fence no longer held
	Stale                atomic.Int64 // refused because a revision, digest, state or cursor changed
	Corrupt              atomic.Int64 // refused fail-closed (execution revision not digest-valid, bad decision)
	Missed               atomic.Int64 // occurrences that will never run (fell behind, or skipped)
	SerializationRetries atomic.Int64 // admission transactions re-run after a serialization failure
	BatchFallbacks       atomic.Int64 // batches re-admitted one occurrence per transaction
	CommitUnknown        atomic.Int64 // admissions whose COMMIT outcome was lost with the connection
	AdmitErrors          atomic.Int64 // admission transactions that failed
	DecideErrors         atomic.Int64 // claimed rows the decision function refused
	Errors               atomic.Int64 // rounds whose claim failed
	Notifications        atomic.Int64 // publish notifications received
	SweepPasses          atomic.Int64 // lifecycle sweep passes (startup recovery included)
	SweepChanged         atomic.Int64 // Runs and leases the sweep changed
	SweepLost            atomic.Int64 // of those, Attempts declared lost
	SweepRequeued        atomic.Int64 // of those, unstarted Runs put back to queued (same Attempt)
	SweepLocked          atomic.Int64 // sweep candidates skipped: locked by another replica or a worker callback
	SweepErrors          atomic.Int64 // sweep passes that failed (their round scheduled nothing)
	RoundNanosTotal      atomic.Int64 // sum of round durations
	LastRoundNanos       atomic.Int64 // duration of the last round (gauge)
	// FireLag is the distribution of claim-acquired − scheduled time of
	// admitted occurrences, in database milliseconds.
	FireLag Histogram
}

func newMetrics() *Metrics { return &Metrics{} }

func (m *Metrics) observeRound(d time.Duration) {
	m.Rounds.Add(1)
	m.RoundNanosTotal.Add(int64(d))
	m.LastRoundNanos.Store(int64(d))
}

// FireLagBucketsMs are the upper bounds of the fire-lag histogram buckets;
// the last bucket is unbounded.
var FireLagBucketsMs = [...]int64{5, 10, 25, 50, 100, 250, 500, 1000, 2500, 5000, 10000, 30000}

// Histogram counts observations into FireLagBucketsMs (+Inf last).
type Histogram struct {
	buckets [len(FireLagBucketsMs) + 1]atomic.Int64
	count   atomic.Int64
	sum     atomic.Int64
}

// Observe records v; negative values are ignored.
func (h *Histogram) Observe(v int64) {
	if v < 0 {
		return
	}
	i := len(FireLagBucketsMs)
	for j, ub := range FireLagBucketsMs {
		if v <= ub {
			i = j
			break
		}
	}
	h.buckets[i].Add(1)
	h.count.Add(1)
	h.sum.Add(v)
}

// Snapshot returns cumulative-free bucket counts (one per bound, +Inf
// last), the count and the sum.
func (h *Histogram) Snapshot() (buckets []int64, count, sum int64) {
	buckets = make([]int64, len(h.buckets))
	for i := range h.buckets {
		buckets[i] = h.buckets[i].Load()
	}
	return buckets, h.count.Load(), h.sum.Load()
}
