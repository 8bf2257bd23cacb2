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
	translated, err := withSundaySeven(expr)
	if err != nil {
		t.Fatalf("day-of-week rewrite of %q: %v", expr, err)
	}
	parsed, err := parser.Parse(translated)
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
	w := r.walk(from)
	for i := from + 1; i <= to; i++ {
		if w.firesAt(i) {
			out = append(out, i)
		}
	}
	return out
}

// firstFire returns the model's first fire in (from, to], or false.
func (r reference) firstFire(from, to int64) (int64, bool) {
	w := r.walk(from)
	for i := from + 1; i <= to; i++ {
		if w.firesAt(i) {
			return i, true
		}
	}
	return 0, false
}

// referenceWalk visits consecutive seconds after a start instant.
type referenceWalk struct {
	r    reference
	seen map[int64]bool // offsets observed from two days before the start
	prev int64          // offset at the second before the next one visited
	next int64          // the second firesAt expects next
	// The offset is known to be prev up to second steady: asking the zone
	// every second made the walk slow under footer rules, where Go parses
	// the rule on each lookup. An hour with the same offset at both ends is
	// taken as steady (no zone changes its offset twice within an hour).
	steady int64
}

func (r reference) walk(from int64) *referenceWalk {
	w := &referenceWalk{r: r, seen: map[int64]bool{}, prev: r.offset(from), next: from + 1, steady: from}
	for i := from - 2*secondsPerDay; i <= from; i += 900 {
		w.seen[r.offset(i)] = true
	}
	return w
}

// firesAt decides whether the schedule fires at second i, straight from the
// policy's definitions; i must follow the previously visited second.
func (w *referenceWalk) firesAt(i int64) bool {
	if i != w.next {
		panic("referenceWalk: seconds must be visited in order")
	}
	w.next++
	r := w.r
	off, prev := w.prev, w.prev
	if i > w.steady {
		off = r.offset(i)
		if r.offset(i+3599) == off {
			w.steady = i + 3599
		}
		w.prev = off
		w.seen[off] = true
	}
	wall := i + off
	if r.cadence {
		return r.matches(wall)
	}
	if prev < off && r.anyMatch(i+prev, i+off) {
		return true // first instant after a spring-forward gap
	}
	return r.matches(wall) && !r.happenedBefore(wall, i, w.seen)
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

// transitions returns the instants in [from, to) at which loc changes
// offset. It probes every six hours and bisects rather than following
// Time.ZoneBounds, which is what Next relies on and which is wrong at the end
// of leap years under a zone's footer rule (golang/go#81583); no zone changes
// its offset twice within six hours.
func transitions(loc *time.Location, from, to time.Time) []time.Time {
	offset := func(unix int64) int {
		_, off := time.Unix(unix, 0).In(loc).Zone()
		return off
	}
	var out []time.Time
	lo, end := from.Unix(), to.Unix()
	for lo < end {
		hi := min(lo+6*3600, end)
		if offset(lo) != offset(hi) {
			a, b := lo, hi // offset(a) != offset(b): the change is in (a, b]
			for b-a > 1 {
				if m := a + (b-a)/2; offset(m) == offset(a) {
					a = m
				} else {
					b = m
				}
			}
			if b < end {
				out = append(out, time.Unix(b, 0).UTC())
			}
		}
		lo = hi
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
