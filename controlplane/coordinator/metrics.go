package coordinator

import (
	"strconv"
	"strings"
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

// Counter is one named counter of Metrics as an exposition (Prometheus,
// a log line, an admin endpoint) reads it: Name is a stable snake_case
// metric name, Labels an optional fixed label set, Help one line.
type Counter struct {
	Name   string
	Labels [][2]string
	Help   string
	Value  int64
}

// Counters returns every counter's current value under a stable name, in a
// fixed order. Refused admissions share one name with the reason as a label.
func (m *Metrics) Counters() []Counter {
	refused := func(reason string, v *atomic.Int64) Counter {
		return Counter{Name: "ql3_scheduler_admissions_refused_total", Labels: [][2]string{{"reason", reason}},
			Help:  "admissions refused: raced (claim fence lost), stale (revision, state or cursor moved), corrupt (fail-closed)",
			Value: v.Load()}
	}
	c := func(name, help string, v *atomic.Int64) Counter {
		return Counter{Name: name, Help: help, Value: v.Load()}
	}
	return []Counter{
		c("ql3_scheduler_rounds_total", "scheduler rounds run", &m.Rounds),
		c("ql3_scheduler_claimed_total", "schedule rows claimed", &m.Claimed),
		c("ql3_scheduler_claimed_chained_total", "rows claimed in the previous admission's round trip", &m.ClaimedChained),
		c("ql3_scheduler_takeovers_total", "rows taken over from a claim that expired unadmitted", &m.TakenOver),
		c("ql3_scheduler_admitted_total", "Runs admitted", &m.Admitted),
		c("ql3_scheduler_skipped_total", "missed occurrences skipped (no Run)", &m.Skipped),
		c("ql3_scheduler_initialized_total", "schedule cursors (re)initialised", &m.Initialized),
		c("ql3_scheduler_released_total", "claims given back unchanged", &m.Released),
		refused("raced", &m.Raced),
		refused("stale", &m.Stale),
		refused("corrupt", &m.Corrupt),
		c("ql3_scheduler_missed_occurrences_total", "occurrences that will never run", &m.Missed),
		c("ql3_scheduler_serialization_retries_total", "admission transactions re-run after a serialization failure", &m.SerializationRetries),
		c("ql3_scheduler_batch_fallbacks_total", "batches re-admitted one occurrence per transaction", &m.BatchFallbacks),
		c("ql3_scheduler_commit_unknown_total", "admissions whose COMMIT outcome was lost", &m.CommitUnknown),
		c("ql3_scheduler_admit_errors_total", "admission transactions that failed", &m.AdmitErrors),
		c("ql3_scheduler_decide_errors_total", "claimed rows the decision refused", &m.DecideErrors),
		c("ql3_scheduler_claim_errors_total", "rounds whose claim failed", &m.Errors),
		c("ql3_scheduler_notifications_total", "publish notifications received", &m.Notifications),
		c("ql3_scheduler_sweep_passes_total", "lifecycle sweep passes (startup recovery included)", &m.SweepPasses),
		c("ql3_scheduler_sweep_changed_total", "Runs and leases the sweep changed", &m.SweepChanged),
		c("ql3_scheduler_sweep_lost_total", "Attempts the sweep declared lost", &m.SweepLost),
		c("ql3_scheduler_sweep_requeued_total", "unstarted Runs the sweep put back to queued", &m.SweepRequeued),
		c("ql3_scheduler_sweep_locked_total", "sweep candidates skipped: locked elsewhere", &m.SweepLocked),
		c("ql3_scheduler_sweep_errors_total", "sweep passes that failed", &m.SweepErrors),
	}
}

// Summary is the counters as one line of name=value pairs (labels folded
// into the name), for a log line a person reads.
func (m *Metrics) Summary() string {
	var b strings.Builder
	for i, c := range m.Counters() {
		if i > 0 {
			b.WriteByte(' ')
		}
		name := strings.TrimSuffix(strings.TrimPrefix(c.Name, "ql3_scheduler_"), "_total")
		for _, l := range c.Labels {
			name += "_" + l[1]
		}
		b.WriteString(name)
		b.WriteByte('=')
		b.WriteString(strconv.FormatInt(c.Value, 10))
	}
	return b.String()
}

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
