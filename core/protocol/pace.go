package protocol

import "github.com/ql3/ql3/core/errs"

// Pull pacing (ADR 0030). The 204 answer to a pull says when to pull again
// twice: Retry-After in whole seconds (RFC 9110, the fallback every HTTP
// client understands) and HeaderRetryAfterMs in milliseconds. The
// authority computes the pause from the cluster's next scheduled
// occurrence (PullPacing.PauseMs), so a worker comes back just after work
// appears instead of up to a whole idle pause later — without holding the
// request open (no long-poll, ADR 0004) and without any per-worker state.
const (
	HeaderRetryAfterMs = "Ql3-Retry-After-Ms"
	// MinRetryAfterMs is the shortest pause the header may ask for: it
	// bounds the pull rate of one session at 10/s whatever the schedule.
	MinRetryAfterMs = 100
	// MaxRetryAfterMs is the longest (MaxRetryAfterSeconds).
	MaxRetryAfterMs = MaxRetryAfterSeconds * 1000
	// MaxPullMarginMs bounds the admission margin a pacing may add.
	MaxPullMarginMs = 10_000
)

// PullForecast is what the authority knows, at answer time, about when
// scheduled work will next appear. Only scheduled occurrences can be
// forecast; run-now requests, retries and re-offers cannot, and for them a
// worker finds the work at its next idle pull.
type PullForecast struct {
	// Known is false when nothing is forecast: no occurrence is due within
	// the authority's horizon, or the forecast is unavailable.
	Known bool
	// DueInMs is the time from now until the next occurrence is due; zero
	// or negative means one is due now and is being admitted.
	DueInMs int64
}

// PullPacing are the authority's pacing settings.
type PullPacing struct {
	// IdleMs is the pause when nothing is forecast sooner (1 s – 60 s, the
	// range of Retry-After).
	IdleMs int64
	// MarginMs is added to the forecast: the admission lag (due → Run
	// queued) a pull should not try to beat (0 – MaxPullMarginMs).
	MarginMs int64
	// FloorMs is the shortest pause answered (MinRetryAfterMs – IdleMs):
	// a pull that arrives while an occurrence is still being admitted is
	// told to come back after FloorMs.
	FloorMs int64
}

// Validate checks the settings, naming the field and its limit.
func (p PullPacing) Validate() error {
	if p.IdleMs < MinRetryAfterSeconds*1000 || p.IdleMs > MaxRetryAfterMs {
		return errs.Invalidf("idleMs", "must be %d..%d, got %d", MinRetryAfterSeconds*1000, MaxRetryAfterMs, p.IdleMs)
	}
	if p.MarginMs < 0 || p.MarginMs > MaxPullMarginMs {
		return errs.Invalidf("marginMs", "must be 0..%d, got %d", MaxPullMarginMs, p.MarginMs)
	}
	if p.FloorMs < MinRetryAfterMs || p.FloorMs > p.IdleMs {
		return errs.Invalidf("floorMs", "must be %d..idleMs (%d), got %d", MinRetryAfterMs, p.IdleMs, p.FloorMs)
	}
	return nil
}

// PauseMs is the pause an empty pull asks for: the idle pause, or —
// when an occurrence is forecast sooner — the time until it is due plus
// the margin, never below the floor. Out-of-range settings are clamped,
// so the answer is always within [MinRetryAfterMs, MaxRetryAfterMs] and
// never above the idle pause.
func (p PullPacing) PauseMs(f PullForecast) int64 {
	idle := min(max(p.IdleMs, MinRetryAfterSeconds*1000), MaxRetryAfterMs)
	floor := min(max(p.FloorMs, MinRetryAfterMs), idle)
	if !f.Known {
		return idle
	}
	due := max(f.DueInMs, 0)
	if due >= idle {
		return idle // also keeps due + margin from overflowing
	}
	margin := min(max(p.MarginMs, 0), MaxPullMarginMs)
	return min(max(due+margin, floor), idle)
}

// ParseRetryAfterMs reads HeaderRetryAfterMs: 1–9 decimal digits, clamped
// to [MinRetryAfterMs, MaxRetryAfterMs]. ok is false when the header is
// absent; the worker then falls back to Retry-After.
func ParseRetryAfterMs(v string) (ms int64, ok bool, err error) {
	if v == "" {
		return 0, false, nil
	}
	// At most 9 digits: a huge value is clamped, never overflows.
	if len(v) > 9 {
		return 0, false, errs.Invalidf(HeaderRetryAfterMs, "must be 1..9 digits")
	}
	for i := 0; i < len(v); i++ {
		if v[i] < '0' || v[i] > '9' {
			return 0, false, errs.Invalidf(HeaderRetryAfterMs, "must be whole milliseconds")
		}
		ms = ms*10 + int64(v[i]-'0')
	}
	return min(max(ms, MinRetryAfterMs), MaxRetryAfterMs), true, nil
}
