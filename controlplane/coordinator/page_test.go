package coordinator

import (
	"context"
	"slices"
	"testing"
)

// TestBacklogIsAdmittedInPages (ADR 0066): a fresh round claims its
// budget; once a round used all of it, its admission claims a page in the
// same round trip, and every later round of the backlog admits a page per
// transaction until a claim comes back short. Each occurrence is still
// admitted exactly once (here: 40 uninitialised schedules, so every claim
// ends initialised).
func TestBacklogIsAdmittedInPages(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	e := newEnv(t)
	e.triggers(t, 40, "0 0 1 1 *")
	c, _ := newCoord(t, e.pool(t, "coord-page"), Config{Owner: "replica-page", Budget: 2, Page: 8, DisableSweep: true})
	var sizes []int
	var inited []int
	res, next, err := c.round(ctx, nil, true)
	for ; err == nil; res, next, err = c.round(ctx, next, true) {
		sizes = append(sizes, res.Claimed)
		inited = append(inited, res.Initialized)
		if len(next) == 0 {
			break
		}
	}
	if err != nil {
		t.Fatal(err)
	}
	if want := []int{2, 8, 8, 8, 8, 6}; !slices.Equal(sizes, want) || !slices.Equal(inited, want) {
		t.Fatalf("rounds claimed %v and initialised %v, want %v: the budget first, then pages", sizes, inited, want)
	}
	m := c.Metrics()
	if m.ClaimedChained.Load() != 38 || m.Initialized.Load() != 40 || m.BatchFallbacks.Load() != 0 {
		t.Fatalf("want 38 rows claimed in pages, 40 initialised, no fallback: %s", metricsString(m))
	}
	if n := e.count(t, `SELECT count(*) FROM ql3.trigger_schedules WHERE next_fire_at_ms IS NULL OR claim_token IS NOT NULL`); n != 0 {
		t.Fatalf("%d schedules left uninitialised or claimed", n)
	}
}
