package cron

import (
	"math/rand/v2"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/ql3/ql3/core/errs"
)

// The reference model in TestNextMatchesReference looks at 2026 and a few
// historical transitions only. Instants after the zone file's last explicit
// transition (2037 for most zones) are computed by Go from the footer rule,
// a different code path with its own bugs (golang/go#81583, issue #15); the
// tests here cover 1970..2199.

var (
	sampleFrom = time.Date(1970, 1, 1, 0, 0, 0, 0, time.UTC).Unix()
	sampleTo   = time.Date(2200, 1, 1, 0, 0, 0, 0, time.UTC).Unix()
)

// goldenZonesAndExpressions returns the zones and distinct expressions of
// testdata/dst, so the sampled comparison grows with the golden tables.
func goldenZonesAndExpressions(t *testing.T) ([]*time.Location, []string) {
	t.Helper()
	paths, err := filepath.Glob("testdata/dst/*.txt")
	if err != nil || len(paths) == 0 {
		t.Fatalf("no golden files: %v", err)
	}
	var zones []*time.Location
	var exprs []string
	for _, path := range paths {
		g := readGolden(t, path)
		zones = append(zones, loadZone(t, g.zone))
		for _, c := range g.cases {
			if !slices.Contains(exprs, c.expr) {
				exprs = append(exprs, c.expr)
			}
		}
	}
	return zones, exprs
}

// TestNextLeapYearEnds pins the cases of issue #15: under the footer rule,
// Time.ZoneBounds ends the last segment of a leap year at 31 December
// 00:00 UTC, and Next used to walk backwards from there until it gave up.
func TestNextLeapYearEnds(t *testing.T) {
	zones := []string{"America/New_York", "Europe/London", "Australia/Sydney", "Australia/Lord_Howe"}
	for _, zone := range zones {
		loc := loadZone(t, zone)
		for _, year := range []int{2039, 2040, 2044, 2096, 2196} {
			cases := []struct {
				expr        string
				after, want time.Time
			}{
				{"0 0 * * *", time.Date(year, 12, 30, 12, 0, 0, 0, loc), time.Date(year, 12, 31, 0, 0, 0, 0, loc)},
				{"0 0 * * *", time.Date(year, 12, 31, 12, 0, 0, 0, loc), time.Date(year+1, 1, 1, 0, 0, 0, 0, loc)},
				{"@yearly", time.Date(year, 1, 1, 0, 0, 0, 0, loc), time.Date(year+1, 1, 1, 0, 0, 0, 0, loc)},
				{"30 2 31 12 *", time.Date(year, 6, 1, 0, 0, 0, 0, loc), time.Date(year, 12, 31, 2, 30, 0, 0, loc)},
				{"*/15 * * * *", time.Date(year, 12, 31, 23, 50, 0, 0, time.UTC), time.Date(year+1, 1, 1, 0, 0, 0, 0, time.UTC)},
			}
			for _, c := range cases {
				s, err := Parse(c.expr, loc)
				if err != nil {
					t.Fatal(err)
				}
				got, err := s.Next(c.after)
				if err != nil || !got.Equal(c.want) {
					t.Errorf("%s %q Next(%s) = %s, %v; want %s", zone, c.expr, c.after.Format(time.RFC3339),
						got.Format(time.RFC3339), err, c.want.In(loc).Format(time.RFC3339))
				}
			}
		}
	}
}

// TestNextMatchesReferenceAtLeapYearEnds replays every second of the 26
// hours around the broken 31 December 00:00 UTC boundary of 2040, 2044 and
// 2096 against the brute-force model.
func TestNextMatchesReferenceAtLeapYearEnds(t *testing.T) {
	exprs := []string{"0 0 * * *", "30 2 * * *", "*/15 * * * *", "0 * * * *", "30 30 1 * * *", "@daily"}
	for _, zone := range []string{"America/New_York", "Australia/Lord_Howe"} {
		loc := loadZone(t, zone)
		for _, year := range []int{2040, 2044, 2096} {
			start := time.Date(year, 12, 30, 23, 0, 0, 0, time.UTC).Unix()
			end := time.Date(year+1, 1, 1, 1, 0, 0, 0, time.UTC).Unix()
			for _, expr := range exprs {
				s, err := Parse(expr, loc)
				if err != nil {
					t.Fatal(err)
				}
				want := newReference(t, expr, loc).fires(start, end)
				var got []int64
				for at := start; ; {
					next, err := s.nextUnix(at)
					if err != nil {
						t.Fatalf("%s %q Next(%s): %v", zone, expr, time.Unix(at, 0).In(loc).Format(time.RFC3339), err)
					}
					if next > end {
						break
					}
					got = append(got, next)
					at = next
				}
				if !equalInts(got, want) {
					t.Errorf("%s %q at the end of %d:\n got  %v\n want %v", zone, expr, year, formatAll(got, loc), formatAll(want, loc))
				}
			}
		}
	}
}

// TestNextMatchesReferenceSampled compares Next with the brute-force model
// at instants drawn (fixed seed) from 1970..2199 for every golden zone and
// expression, in three strata: anywhere, the last two days of a year (half
// of them in leap years from 2040), and within 36 hours of an offset change.
func TestNextMatchesReferenceSampled(t *testing.T) {
	zones, exprs := goldenZonesAndExpressions(t)
	const perStratum = 6
	rng := rand.New(rand.NewPCG(15, 2040))
	changes := map[*time.Location]map[int][]time.Time{}
	yearChanges := func(loc *time.Location, year int) []time.Time {
		if changes[loc] == nil {
			changes[loc] = map[int][]time.Time{}
		}
		trs, ok := changes[loc][year]
		if !ok {
			trs = transitions(loc, time.Date(year, 1, 1, 0, 0, 0, 0, time.UTC), time.Date(year+1, 1, 1, 0, 0, 0, 0, time.UTC))
			changes[loc][year] = trs
		}
		return trs
	}
	randomYear := func() int { return 1970 + rng.IntN(230) }
	samples := 0
	for _, loc := range zones {
		for _, expr := range exprs {
			s, err := Parse(expr, loc)
			if err != nil {
				t.Fatal(err)
			}
			ref := newReference(t, expr, loc)
			var afters []int64
			for i := range perStratum {
				afters = append(afters, sampleFrom+rng.Int64N(sampleTo-sampleFrom))
				year := randomYear()
				if i%2 == 0 {
					year = 2040 + 4*rng.IntN(40) // leap years 2040..2196 (2100 is not one; harmless)
				}
				yearEnd := time.Date(year, 12, 30, 0, 0, 0, 0, time.UTC).Unix()
				afters = append(afters, yearEnd+rng.Int64N(2*secondsPerDay+12*3600))
				year = randomYear()
				if trs := yearChanges(loc, year); len(trs) > 0 {
					tr := trs[rng.IntN(len(trs))].Unix()
					afters = append(afters, tr-36*3600+rng.Int64N(72*3600))
				} else {
					afters = append(afters, time.Date(year, 1, 1, 0, 0, 0, 0, time.UTC).Unix()+rng.Int64N(365*secondsPerDay))
				}
			}
			for _, after := range afters {
				samples++
				got, err := s.nextUnix(after)
				if err != nil {
					t.Errorf("%s %q Next(%s): %v", loc, expr, time.Unix(after, 0).In(loc).Format(time.RFC3339), err)
					continue
				}
				want, ok := ref.firstFire(after, got)
				if !ok || want != got {
					t.Errorf("%s %q Next(%s) = %s; the model fires first at %s (found: %v)", loc, expr,
						time.Unix(after, 0).In(loc).Format(time.RFC3339), time.Unix(got, 0).In(loc).Format(time.RFC3339),
						time.Unix(want, 0).In(loc).Format(time.RFC3339), ok)
				}
			}
		}
	}
	t.Logf("%d samples in %d zones for %d expressions", samples, len(zones), len(exprs))
}

// FuzzNextAcrossYears feeds `after` instants from 1970..2199 into Next in a
// few zones (footer-rule years included) and checks the first fire against
// the brute-force model; a fire more than two days out is checked for the
// two days the model walks (nothing fires there) and the per-fire invariants.
func FuzzNextAcrossYears(f *testing.F) {
	zones := []string{"America/New_York", "Europe/London", "Australia/Lord_Howe", "Australia/Sydney", "Asia/Shanghai", "UTC"}
	locs := make([]*time.Location, len(zones))
	for i, z := range zones {
		locs[i] = loadZone(f, z)
	}
	const window = 2 * secondsPerDay
	f.Fuzz(func(t *testing.T, expr string, afterSeed int64, zone uint8) {
		loc := locs[int(zone)%len(locs)]
		s, err := Parse(expr, loc)
		if err != nil {
			return
		}
		after := sampleFrom + floorMod(afterSeed, sampleTo-sampleFrom)
		got, err := s.nextUnix(after)
		if err != nil {
			if errs.Code(err) != errs.Invalid {
				t.Fatalf("%q in %s Next(%s): %v", s.expr, loc, time.Unix(after, 0).In(loc).Format(time.RFC3339), err)
			}
			return
		}
		if got <= after {
			t.Fatalf("%q in %s: Next(%d) = %d does not advance", s.expr, loc, after, got)
		}
		checkFire(t, s, got)
		want, ok := newReference(t, s.expr, loc).firstFire(after, min(got, after+window))
		switch {
		case ok && want != got, !ok && got <= after+window:
			t.Fatalf("%q in %s Next(%s) = %s; the model fires first at %s (found: %v)", s.expr, loc,
				time.Unix(after, 0).In(loc).Format(time.RFC3339), time.Unix(got, 0).In(loc).Format(time.RFC3339),
				time.Unix(want, 0).In(loc).Format(time.RFC3339), ok)
		}
	})
}

// TestFooterSegmentEndBisects covers the defensive branch of
// footerSegmentEnd: asked for the segment of an instant whose offset changes
// before the next 1 January, it finds the exact change.
func TestFooterSegmentEndBisects(t *testing.T) {
	for _, c := range []struct {
		zone string
		at   time.Time
		want time.Time
	}{
		{"America/New_York", time.Date(2026, 6, 1, 0, 0, 0, 0, time.UTC), time.Date(2026, 11, 1, 6, 0, 0, 0, time.UTC)},
		{"America/New_York", time.Date(2050, 3, 1, 0, 0, 0, 0, time.UTC), time.Date(2050, 3, 13, 7, 0, 0, 0, time.UTC)}, // and back in November
		{"Australia/Lord_Howe", time.Date(2040, 10, 7, 0, 0, 0, 0, time.UTC), time.Date(2041, 1, 1, 0, 0, 0, 0, time.UTC)},
	} {
		s, err := Parse("0 0 * * *", loadZone(t, c.zone))
		if err != nil {
			t.Fatal(err)
		}
		at := c.at.Unix()
		if got := s.footerSegmentEnd(at, s.offsetAt(at)); got != c.want.Unix() {
			t.Errorf("%s from %s: end %s, want %s", c.zone, c.at.Format(time.RFC3339), time.Unix(got, 0).UTC().Format(time.RFC3339), c.want.Format(time.RFC3339))
		}
	}
}
