package cron

import (
	"strings"
	"testing"
	"time"

	robfig "github.com/robfig/cron/v3"

	"github.com/ql3/ql3/core/errs"
)

var fuzzZones = []string{
	"UTC", "America/New_York", "Europe/London", "Australia/Lord_Howe", "Asia/Shanghai",
	"America/Sao_Paulo", "Pacific/Apia", "Asia/Kathmandu", "America/St_Johns", "Pacific/Chatham",
}

// FuzzParse: Parse never panics and only fails with an invalid error; Next
// strictly advances or fails; every fire's wall time matches the fields
// unless it is the coalesced fire right after a spring-forward gap; a
// wall-clock-mode fire is never the second occurrence of a repeated wall
// time; and in UTC Next equals robfig's Next (differential).
func FuzzParse(f *testing.F) {
	locs := make([]*time.Location, len(fuzzZones))
	for i, z := range fuzzZones {
		locs[i] = loadZone(f, z)
	}
	const span = 200 * 366 * secondsPerDay // instants 1900..2100
	base := time.Date(1900, 1, 1, 0, 0, 0, 0, time.UTC).Unix()
	f.Fuzz(func(t *testing.T, expr string, afterSeed int64, zone uint8) {
		loc := locs[int(zone)%len(locs)]
		s, err := Parse(expr, loc)
		if err != nil {
			if errs.Code(err) != errs.Invalid {
				t.Fatalf("Parse(%q): %v has code %q", expr, err, errs.Code(err))
			}
			return
		}
		if s.String() != strings.Trim(expr, " \t") {
			t.Fatalf("String() = %q for %q", s.String(), expr)
		}
		after := base + floorMod(afterSeed, span)
		at := after
		for range 4 {
			next, err := s.nextUnix(at)
			if err != nil {
				if errs.Code(err) != errs.Invalid {
					t.Fatalf("%q in %s Next(%d): %v", expr, loc, at, err)
				}
				break
			}
			if next <= at {
				t.Fatalf("%q in %s: Next(%d) = %d does not advance", expr, loc, at, next)
			}
			checkFire(t, s, next)
			at = next
		}
		if loc == time.UTC {
			differential(t, expr, s, after)
		}
	})
}

// checkFire asserts the per-fire invariants of the DST policy.
func checkFire(t *testing.T, s *Schedule, fire int64) {
	t.Helper()
	at := time.Unix(fire, 0).In(s.loc)
	_, off := at.Zone()
	_, prev := time.Unix(fire-1, 0).In(s.loc).Zone()
	wall := fire + int64(off)
	if w, ok := s.fields.next(wall, wall); !ok || w != wall {
		gapEnd := !s.cadence && prev < off
		if !gapEnd {
			t.Fatalf("%q in %s: fire %s does not match the fields", s.expr, s.loc, at.Format(time.RFC3339))
		}
	}
	if s.cadence {
		return
	}
	// Wall-clock mode: the wall time must not have been shown before under
	// the previous offset (fall back).
	start, _ := at.ZoneBounds()
	if !start.IsZero() {
		_, before := start.Add(-time.Second).In(s.loc).Zone()
		if before > off && wall < start.Unix()+int64(before) && fire-start.Unix() < nearTransition {
			t.Fatalf("%q in %s: fire %s repeats a wall time", s.expr, s.loc, at.Format(time.RFC3339))
		}
	}
}

func differential(t *testing.T, expr string, s *Schedule, after int64) {
	t.Helper()
	translated, err := withSundaySeven(strings.Trim(expr, " \t"))
	if err != nil {
		t.Fatalf("Parse accepted %q that the day-of-week rewrite refuses: %v", expr, err)
	}
	parsed, err := parser.Parse(translated)
	if err != nil {
		t.Fatalf("robfig rejects %q that Parse accepted: %v", expr, err)
	}
	spec := parsed.(*robfig.SpecSchedule)
	spec.Location = time.UTC
	want := spec.Next(time.Unix(after, 0).UTC())
	got, err := s.nextUnix(after)
	if want.IsZero() {
		// robfig gives up after five years; we search ten.
		if err == nil && got-after < 4*365*secondsPerDay {
			t.Fatalf("%q after %d: robfig finds nothing, we found %d", expr, after, got)
		}
		return
	}
	if err != nil || got != want.Unix() {
		t.Fatalf("%q after %s: got %d (%v), robfig %s", expr, time.Unix(after, 0).UTC(), got, err, want)
	}
}

// FuzzNextAroundTransitions compares Next with the brute-force reference
// model (reference_test.go) for arbitrary expressions in a four-hour window
// around a real offset transition.
func FuzzNextAroundTransitions(f *testing.F) {
	type window struct {
		loc *time.Location
		at  int64
	}
	var windows []window
	for _, z := range []struct{ zone, from, to string }{
		{"America/New_York", "2026-01-01T00:00:00Z", "2027-01-01T00:00:00Z"},
		{"Europe/London", "2026-01-01T00:00:00Z", "2027-01-01T00:00:00Z"},
		{"Australia/Lord_Howe", "2026-01-01T00:00:00Z", "2027-01-01T00:00:00Z"},
		{"America/Sao_Paulo", "2018-01-01T00:00:00Z", "2019-01-01T00:00:00Z"},
		{"Pacific/Apia", "2011-12-01T00:00:00Z", "2012-01-01T00:00:00Z"},
	} {
		loc := loadZone(f, z.zone)
		from, _ := time.Parse(time.RFC3339, z.from)
		to, _ := time.Parse(time.RFC3339, z.to)
		for _, tr := range transitions(loc, from, to) {
			windows = append(windows, window{loc, tr.Unix()})
		}
	}
	f.Fuzz(func(t *testing.T, expr string, which uint8, shift int16) {
		w := windows[int(which)%len(windows)]
		s, err := Parse(expr, w.loc)
		if err != nil {
			return
		}
		start := w.at + int64(shift)%7200 - 7200
		end := start + 4*3600
		want := newReference(t, s.expr, w.loc).fires(start, end)
		var got []int64
		for at := start; ; {
			next, err := s.nextUnix(at)
			if err != nil || next > end {
				break
			}
			got = append(got, next)
			at = next
		}
		if !equalInts(got, want) {
			t.Fatalf("%q in %s from %s:\n got  %v\n want %v", s.expr, w.loc, time.Unix(start, 0).In(w.loc).Format(time.RFC3339),
				formatAll(got, w.loc), formatAll(want, w.loc))
		}
	})
}
