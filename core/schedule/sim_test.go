package schedule

import (
	"testing"
	"time"

	"github.com/ql3/ql3/core/cron"
)

// simulator drives Decide the way a scheduler loop does, persisting each
// decision, and records every Run it would create.
type simulator struct {
	t      *testing.T
	trig   Trigger
	state  State
	fires  []int64
	keys   map[string]bool
	skips  []Decision
	missed int64
}

func newSimulator(t *testing.T, trig Trigger) *simulator {
	return &simulator{t: t, trig: trig, keys: map[string]bool{}}
}

func (m *simulator) tick(now int64) Decision {
	m.t.Helper()
	d, err := Decide(m.trig, m.state, now)
	if err != nil {
		m.t.Fatalf("Decide at %d: %v", now, err)
	}
	if d.Kind != Wait && d.NextFireAtMs <= now {
		m.t.Fatalf("%s at %d moved the cursor to %d, not past now", d.Kind, now, d.NextFireAtMs)
	}
	switch d.Kind {
	case Wait:
		if d.NextFireAtMs != m.state.NextFireAtMs {
			m.t.Fatalf("wait changed the cursor: %+v", d)
		}
	case Fire:
		key := IdempotencyKey(m.trig.ID, m.trig.Revision, d.ScheduledForMs)
		if m.keys[key] {
			m.t.Fatalf("occurrence %d fired twice (key %s)", d.ScheduledForMs, key)
		}
		if d.ScheduledForMs > now || d.ScheduledForMs != m.state.NextFireAtMs {
			m.t.Fatalf("fire of %d at %d with cursor %d", d.ScheduledForMs, now, m.state.NextFireAtMs)
		}
		m.keys[key] = true
		m.fires = append(m.fires, d.ScheduledForMs)
		m.missed += d.Missed
	case Skip:
		m.skips = append(m.skips, d)
		m.missed += d.Missed
	}
	m.state = apply(m.state, m.trig.Revision, d)
	return d
}

// occurrences lists the schedule's fires in (from, to] by chaining NextMs.
func occurrences(t *testing.T, s *cron.Schedule, from, to int64) []int64 {
	var out []int64
	for at := from; ; {
		next, err := s.NextMs(at)
		if err != nil {
			t.Fatal(err)
		}
		if next > to {
			return out
		}
		out = append(out, next)
		at = next
	}
}

func sameMs(a, b []int64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// TestSimulatedDay ticks every second of a day (400 ms after each second,
// as a real loop would) and proves one Fire per occurrence, in order, with
// nothing missed, skipped or replayed.
func TestSimulatedDay(t *testing.T) {
	ny := loadZone(t, "America/New_York")
	cases := []struct {
		expr string
		loc  *time.Location
		day  string
	}{
		{"* * * * * *", time.UTC, "2026-06-01T00:00:00Z"},
		{"*/7 * * * * *", time.UTC, "2026-06-01T00:00:00Z"},
		{"*/5 * * * *", time.UTC, "2026-06-01T00:00:00Z"},
		{"0 * * * *", ny, "2026-11-01T00:00:00-04:00"},
		{"*/15 * * * *", ny, "2026-03-08T00:00:00-05:00"},
		{"30 2 * * *", ny, "2026-03-08T00:00:00-05:00"},
	}
	for _, c := range cases {
		t.Run(c.expr+"@"+c.loc.String(), func(t *testing.T) {
			sched := mustCron(t, c.expr, c.loc)
			start := ms(c.day)
			end := start + 86_400_000
			m := newSimulator(t, Trigger{ID: "sim", Revision: 1, Cron: sched, Misfire: MisfireSkip, GraceMs: DefaultEdgeGraceMs})
			if d := m.tick(start - 600); d.Kind != Init {
				t.Fatalf("first decision %+v, want init", d)
			}
			last := start - 600
			for now := start + 400; now <= end; now += 1000 {
				m.tick(now)
				last = now
			}
			want := occurrences(t, sched, start-600, last)
			if len(want) == 0 || !sameMs(m.fires, want) {
				t.Fatalf("fired %d occurrences, want %d", len(m.fires), len(want))
			}
			if len(m.skips) != 0 || m.missed != 0 {
				t.Fatalf("skips %d, missed %d; want none", len(m.skips), m.missed)
			}
		})
	}
}

// TestSimulatedOutage stops the ticks for an hour: on recovery fire_once
// admits exactly the oldest missed occurrence and skip admits none; regular
// fires resume afterwards; nothing fires twice.
func TestSimulatedOutage(t *testing.T) {
	sched := mustCron(t, "*/5 * * * *", time.UTC)
	start := ms("2026-06-01T09:00:00Z")
	down, up := ms("2026-06-01T10:00:00Z"), ms("2026-06-01T11:00:00Z")
	end := ms("2026-06-01T12:00:00Z")
	for _, c := range []struct {
		policy    MisfirePolicy
		wantFires int // 09:05..09:55 (11) + the recovery fire + 11:05..11:55 (11; the last tick is 11:59:59.4)
		wantSkips int
	}{
		{MisfireFireOnce, 11 + 1 + 11, 0},
		{MisfireSkip, 11 + 11, 1},
	} {
		t.Run(string(c.policy), func(t *testing.T) {
			m := newSimulator(t, Trigger{ID: "sim", Revision: 4, Cron: sched, Misfire: c.policy, GraceMs: DefaultEdgeGraceMs})
			m.tick(start)
			var recovery Decision
			last := start
			for now := start + 400; now <= end; now += 1000 {
				if now > down-1000 && now < up {
					continue // the scheduler is down
				}
				d := m.tick(now)
				last = now
				if now-up < 1000 && now >= up {
					recovery = d
				}
			}
			// Before the outage: 09:05..09:55 fire (11). The cursor is 10:00
			// when ticks stop at 09:59:59.4.
			cursor := ms("2026-06-01T10:00:00Z")
			wantRecovery := Decision{Kind: Fire, ScheduledForMs: cursor, NextFireAtMs: ms("2026-06-01T11:05:00Z"),
				LateMs: up + 400 - cursor, ChargedLateMs: up + 400 - cursor, Missed: 12}
			if c.policy == MisfireSkip {
				wantRecovery.Kind, wantRecovery.Missed = Skip, 13
			}
			if recovery != wantRecovery {
				t.Fatalf("recovery decision %+v\nwant                %+v", recovery, wantRecovery)
			}
			want := occurrences(t, sched, start, down-1)
			if c.policy == MisfireFireOnce {
				want = append(want, cursor)
			}
			want = append(want, occurrences(t, sched, up, last)...)
			if !sameMs(m.fires, want) || len(m.fires) != c.wantFires || len(m.skips) != c.wantSkips {
				t.Fatalf("fires %v (skips %d)\nwant  %v (skips %d)", m.fires, len(m.skips), want, c.wantSkips)
			}
		})
	}
}

// TestDailyAcrossDST: a daily 02:30 New York trigger, ticked every second
// across both 2026 transition days, fires exactly once per day; 01:30 on
// the fall-back day fires once although the wall clock shows it twice.
func TestDailyAcrossDST(t *testing.T) {
	ny := loadZone(t, "America/New_York")
	for _, c := range []struct {
		expr, day string
		want      []string
	}{
		{"30 2 * * *", "2026-03-08T00:00:00-05:00", []string{"2026-03-08T03:00:00-04:00"}},
		{"30 2 * * *", "2026-11-01T00:00:00-04:00", []string{"2026-11-01T02:30:00-05:00"}},
		{"30 1 * * *", "2026-11-01T00:00:00-04:00", []string{"2026-11-01T01:30:00-04:00"}},
		{"30 1 * * *", "2026-03-08T00:00:00-05:00", []string{"2026-03-08T01:30:00-05:00"}},
	} {
		m := newSimulator(t, Trigger{ID: "nightly", Revision: 1, Cron: mustCron(t, c.expr, ny), Misfire: MisfireFireOnce, GraceMs: DefaultEdgeGraceMs})
		start := ms(c.day)
		m.tick(start - 1)
		end := time.UnixMilli(start).In(ny).AddDate(0, 0, 1).UnixMilli()
		for now := start + 250; now < end; now += 1000 {
			m.tick(now)
		}
		var got []string
		for _, f := range m.fires {
			got = append(got, time.UnixMilli(f).In(ny).Format(time.RFC3339))
		}
		if len(got) != len(c.want) || got[0] != c.want[0] {
			t.Errorf("%q on %s: fired %v, want %v", c.expr, c.day, got, c.want)
		}
	}
}
