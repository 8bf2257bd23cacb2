package pullpace_test

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/ql3/ql3/controlplane/postgres/pullpace"
	"github.com/ql3/ql3/core/errs"
	"github.com/ql3/ql3/core/schedule"
)

// TestPullForecastReadsOneIndexEntry: the pacer's read starts the due
// index at "now − grace" and stops at its first entry, custom and generic
// plans alike, over 3,000 schedules — never a sort or a sequential scan.
func TestPullForecastReadsOneIndexEntry(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := newSchedFixture(t)
	tr := f.Trigger(t, "* * * * * *", schedule.MisfireSkip)
	f.BulkSchedules(t, tr.ID, 3000)
	for _, mode := range []string{"force_custom_plan", "force_generic_plan"} {
		tx, err := f.SU.Begin(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := tx.Exec(ctx, "SET LOCAL plan_cache_mode = "+mode); err != nil {
			t.Fatal(err)
		}
		if _, err := tx.Exec(ctx, "PREPARE pull_forecast(bigint) AS "+pullpace.PullForecastSQLForTest); err != nil {
			t.Fatal(err)
		}
		rows, err := tx.Query(ctx, "EXPLAIN EXECUTE pull_forecast(1000)")
		if err != nil {
			t.Fatal(err)
		}
		plan, err := pgx.CollectRows(rows, pgx.RowTo[string])
		_ = tx.Rollback(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := f.SU.Exec(ctx, "DEALLOCATE pull_forecast"); err != nil {
			t.Fatal(err)
		}
		text := strings.Join(plan, "\n")
		limit, scan := strings.Index(text, "Limit"), strings.Index(text, "Index Scan using trigger_schedules_due_idx")
		if limit < 0 || scan < limit || strings.Contains(text, "Sort") || strings.Contains(text, "Seq Scan") {
			t.Errorf("%s: the forecast does not read the due index in order under its limit:\n%s", mode, text)
		}
	}
}

// TestPullPacerAnswersFromMemory: forecasts are answered from memory
// however many pulls ask (reads are Run's business, not the pulls'); Run's
// next read comes after the TTL or just after the forecast instant (plus
// the margin), whichever is first; a forecast older than five TTLs is not
// used.
func TestPullPacerAnswersFromMemory(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := newSchedFixture(t)
	tr := f.Trigger(t, "* * * * * *", schedule.MisfireSkip)
	f.Exec(t, `UPDATE ql3.trigger_schedules SET next_fire_at_ms = (extract(epoch FROM clock_timestamp()) * 1000)::bigint + 20000
		WHERE trigger_id = $1`, tr.ID)
	var mu sync.Mutex
	now := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	p, err := pullpace.NewPullPacer(f.Runtime, pullpace.PullPacerOptions{TTL: time.Second, Now: clock})
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Refresh(ctx); err != nil {
		t.Fatal(err)
	}
	first := p.Forecast()
	if !first.Known || first.DueInMs <= 0 || first.DueInMs > 20_000 {
		t.Fatalf("forecast %+v, want the cursor within 20 s", first)
	}
	for range 1000 {
		if got := p.Forecast(); got != first {
			t.Fatalf("forecast moved without the clock: %+v, then %+v", first, got)
		}
		if got := p.PullPauseMs(60_000); got != first.DueInMs+pullpace.DefaultPullMargin.Milliseconds() {
			t.Fatalf("pause %d, want the cursor + margin %d", got, first.DueInMs+pullpace.DefaultPullMargin.Milliseconds())
		}
	}
	if st := p.Stats(); st.Reads != 1 || st.Failures != 0 {
		t.Fatalf("1,000 fresh forecasts read the database: %+v", st)
	}
	mu.Lock()
	now = now.Add(999 * time.Millisecond)
	mu.Unlock()
	if got := p.Forecast(); got.DueInMs != first.DueInMs-999 || p.Stats().Reads != 1 {
		t.Fatalf("forecast 999 ms later %+v (reads %d), want %d ms from memory", got, p.Stats().Reads, first.DueInMs-999)
	}
	start := now.Add(-999 * time.Millisecond)
	if got := p.NextReadForTest(start); got != time.Second {
		t.Errorf("next read with the occurrence %d ms away: in %s, want the TTL", first.DueInMs, got)
	}
	soon := start.Add(time.Duration(first.DueInMs-500) * time.Millisecond)
	if got, want := p.NextReadForTest(soon), 500*time.Millisecond+pullpace.DefaultPullMargin; got != want {
		t.Errorf("next read 500 ms before the occurrence: in %s, want %s (just after it, margin included)", got, want)
	}
	mu.Lock()
	now = start.Add(5*time.Second + time.Millisecond)
	mu.Unlock()
	if got := p.Forecast(); got.Known {
		t.Errorf("a forecast five TTLs old is still used: %+v", got)
	}
	// An occurrence being admitted (its instant had passed at the read):
	// every pull is told the floor, so the next read comes soon.
	f.Exec(t, `UPDATE ql3.trigger_schedules SET next_fire_at_ms = (extract(epoch FROM clock_timestamp()) * 1000)::bigint - 300
		WHERE trigger_id = $1`, tr.ID)
	if err := p.Refresh(ctx); err != nil {
		t.Fatal(err)
	}
	if got := p.PullPauseMs(2000); got != pullpace.DefaultPullFloor.Milliseconds() {
		t.Errorf("pause while an occurrence is being admitted: %d ms, want the floor", got)
	}
	if got := p.NextReadForTest(clock()); got != 25*time.Millisecond {
		t.Errorf("next read while an occurrence is being admitted: in %s, want 25 ms", got)
	}
}

func TestPullPacerOptionsNameTheField(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		o     pullpace.PullPacerOptions
		field string
	}{
		{pullpace.PullPacerOptions{Margin: -time.Millisecond}, "pullMargin"},
		{pullpace.PullPacerOptions{Margin: 11 * time.Second}, "pullMargin"},
		{pullpace.PullPacerOptions{Floor: 99 * time.Millisecond}, "pullFloor"},
		{pullpace.PullPacerOptions{Floor: 61 * time.Second}, "pullFloor"},
		{pullpace.PullPacerOptions{TTL: time.Millisecond}, "pullForecastTTL"},
		{pullpace.PullPacerOptions{TTL: 6 * time.Second}, "pullForecastTTL"},
		{pullpace.PullPacerOptions{DueGrace: -time.Second}, "pullDueGrace"},
		{pullpace.PullPacerOptions{DueGrace: time.Minute}, "pullDueGrace"},
	} {
		if _, err := pullpace.NewPullPacer(nil, c.o); errs.Field(err) != c.field {
			t.Errorf("NewPullPacer(%+v) = %v, want an error naming %s", c.o, err, c.field)
		}
	}
}
