package cron

import (
	"testing"
	"time"

	robfig "github.com/robfig/cron/v3"
)

// reference is a brute-force model of the DST policy in the package doc,
// written from the definitions and independent of Next's segment walk: it
// visits every second of a window and decides from the zone's offset at that
// second (and the second before) whether the schedule fires there.
type reference struct {
	spec    *robfig.SpecSchedule
	loc     *time.Location
	cadence bool
}

func newReference(t testing.TB, expr string, loc *time.Location) reference {
	t.Helper()
	parsed, err := parser.Parse(expr)
	if err != nil {
		t.Fatalf("robfig parse %q: %v", expr, err)
	}
	return reference{spec: parsed.(*robfig.SpecSchedule), loc: loc, cadence: cadenceMode(expr)}
}

func (r reference) offset(unix int64) int64 {
	_, off := time.Unix(unix, 0).In(r.loc).Zone()
	return int64(off)
}

// matches decides whether the naive wall time (seconds, read as UTC) matches
// the robfig bit fields, using the time package's calendar.
func (r reference) matches(wall int64) bool {
	w := time.Unix(wall, 0).UTC()
	has := func(field uint64, v int) bool { return field&(1<<uint(v)) != 0 }
	if !has(r.spec.Second, w.Second()) || !has(r.spec.Minute, w.Minute()) ||
		!has(r.spec.Hour, w.Hour()) || !has(r.spec.Month, int(w.Month())) {
		return false
	}
	dom, dow := has(r.spec.Dom, w.Day()), has(r.spec.Dow, int(w.Weekday()))
	if r.spec.Dom&starBit != 0 || r.spec.Dow&starBit != 0 {
		return dom && dow
	}
	return dom || dow
}

// fires lists every fire in (from, to].
func (r reference) fires(from, to int64) []int64 {
	var out []int64
	seen := map[int64]bool{} // offsets observed from two days before the window
	for i := from - 2*secondsPerDay; i <= from; i += 900 {
		seen[r.offset(i)] = true
	}
	for i := from + 1; i <= to; i++ {
		off := r.offset(i)
		seen[off] = true
		wall := i + off
		if r.cadence {
			if r.matches(wall) {
				out = append(out, i)
			}
			continue
		}
		if prev := r.offset(i - 1); prev < off && r.anyMatch(i+prev, i+off) {
			out = append(out, i) // first instant after a spring-forward gap
			continue
		}
		if r.matches(wall) && !r.happenedBefore(wall, i, seen) {
			out = append(out, i)
		}
	}
	return out
}

func (r reference) anyMatch(fromWall, toWall int64) bool {
	for w := fromWall; w < toWall; w++ {
		if r.matches(w) {
			return true
		}
	}
	return false
}

// happenedBefore reports whether the wall time was already shown by the
// clock at some instant before i.
func (r reference) happenedBefore(wall, i int64, offsets map[int64]bool) bool {
	for o := range offsets {
		if j := wall - o; j < i && r.offset(j) == o {
			return true
		}
	}
	return false
}

func loadZone(t testing.TB, name string) *time.Location {
	t.Helper()
	loc, err := time.LoadLocation(name)
	if err != nil {
		t.Fatalf("load zone %s: %v", name, err)
	}
	return loc
}

// transitions returns the instants in [from, to) at which loc changes offset.
func transitions(loc *time.Location, from, to time.Time) []time.Time {
	var out []time.Time
	for at := from; at.Before(to); {
		_, end := at.In(loc).ZoneBounds()
		if end.IsZero() || !end.Before(to) {
			break
		}
		if _, a := end.Add(-time.Second).In(loc).Zone(); true {
			if _, b := end.In(loc).Zone(); a != b {
				out = append(out, end)
			}
		}
		at = end
	}
	return out
}

var referenceExpressions = []string{
	"30 2 * * *", "30 1 * * *", "0 2 * * *", "0 3 * * *", "15 2 * * *", "45 1 * * *",
	"*/15 * * * *", "0 * * * *", "30 * * * *", "0 */2 * * *", "*/7 1-3 * * *",
	"* 2 * * *", "0 0-23 * * *", "59 23 * * *", "0 0 * * *", "@daily", "@hourly",
	"30 30 1 * * *", "*/20 * 1,2 * * *", "*/10 * * * * *", "0 0 * * 0", "0 1,2 * * *",
}

// TestNextMatchesReference compares Next with the brute-force model for two
// days around every transition of 2026 (and selected historical ones).
func TestNextMatchesReference(t *testing.T) {
	windows := []struct {
		zone     string
		from, to string
	}{
		{"America/New_York", "2026-01-01T00:00:00Z", "2027-01-01T00:00:00Z"},
		{"Europe/London", "2026-01-01T00:00:00Z", "2027-01-01T00:00:00Z"},
		{"Australia/Lord_Howe", "2026-01-01T00:00:00Z", "2027-01-01T00:00:00Z"},
		{"Asia/Shanghai", "1991-01-01T00:00:00Z", "1992-01-01T00:00:00Z"},
		{"America/Sao_Paulo", "2018-01-01T00:00:00Z", "2019-01-01T00:00:00Z"}, // DST began at midnight
		{"Pacific/Apia", "2011-12-01T00:00:00Z", "2012-01-01T00:00:00Z"},      // skipped a whole day
	}
	for _, w := range windows {
		loc := loadZone(t, w.zone)
		from, _ := time.Parse(time.RFC3339, w.from)
		to, _ := time.Parse(time.RFC3339, w.to)
		trs := transitions(loc, from, to)
		if len(trs) == 0 {
			t.Fatalf("%s: no transitions between %s and %s; tzdata too old?", w.zone, w.from, w.to)
		}
		for _, tr := range trs {
			start, end := tr.Unix()-secondsPerDay-1800, tr.Unix()+secondsPerDay+1800
			for _, expr := range referenceExpressions {
				s, err := Parse(expr, loc)
				if err != nil {
					t.Fatalf("Parse(%q): %v", expr, err)
				}
				want := newReference(t, expr, loc).fires(start, end)
				var got []int64
				for at := start; ; {
					next, err := s.nextUnix(at)
					if err != nil {
						t.Fatalf("%s %q Next(%d): %v", w.zone, expr, at, err)
					}
					if next > end {
						break
					}
					got = append(got, next)
					at = next
				}
				if !equalInts(got, want) {
					t.Errorf("%s %q around %s:\n got  %v\n want %v", w.zone, expr, tr.In(loc).Format(time.RFC3339),
						formatAll(got, loc), formatAll(want, loc))
				}
			}
		}
	}
}

func equalInts(a, b []int64) bool {
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

func formatAll(xs []int64, loc *time.Location) []string {
	out := make([]string, len(xs))
	for i, x := range xs {
		out[i] = time.Unix(x, 0).In(loc).Format(time.RFC3339)
	}
	return out
}
