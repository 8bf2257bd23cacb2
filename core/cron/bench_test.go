package cron

import (
	"testing"
	"time"

	robfig "github.com/robfig/cron/v3"
)

// BenchmarkNext cycles through 64 start instants spread over 2026 so the
// figures are not those of one lucky position in the calendar.
func BenchmarkNext(b *testing.B) {
	ny := loadZone(b, "America/New_York")
	cases := []struct {
		name, expr string
		loc        *time.Location
	}{
		{"every5min_UTC", "*/5 * * * *", time.UTC},
		{"0230_6field_UTC", "0 30 2 * * *", time.UTC},
		{"daily_UTC", "@daily", time.UTC},
		{"weekdays0900_UTC", "0 9 * * 1-5", time.UTC},
		{"every15min_NewYork", "*/15 * * * *", ny},
		{"daily0230_NewYork", "30 2 * * *", ny},
	}
	var afters [64]time.Time
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for i := range afters {
		afters[i] = start.Add(time.Duration(i) * (5*24*time.Hour + 37*time.Minute + 11*time.Second))
	}
	for _, c := range cases {
		s, err := Parse(c.expr, c.loc)
		if err != nil {
			b.Fatal(err)
		}
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				if _, err := s.Next(afters[i&63]); err != nil {
					b.Fatal(err)
				}
				i++
			}
		})
	}
}

// BenchmarkNextFooterRule is Next where Go derives offsets from the zone
// file's footer rule (after 2037): 64 start instants spread over 2040..2048,
// some on the last day of a leap year (issue #15's workaround path).
func BenchmarkNextFooterRule(b *testing.B) {
	ny := loadZone(b, "America/New_York")
	var afters [64]time.Time
	start := time.Date(2040, 12, 31, 6, 0, 0, 0, time.UTC)
	for i := range afters {
		afters[i] = start.Add(time.Duration(i) * (45*24*time.Hour + 37*time.Minute + 11*time.Second))
		if i%8 == 0 { // the last day of a leap year
			afters[i] = time.Date(2040+4*(i/16), 12, 31, 12+i/8, 0, 0, 0, time.UTC)
		}
	}
	for _, c := range []struct{ name, expr string }{
		{"every15min_NewYork", "*/15 * * * *"},
		{"daily0230_NewYork", "30 2 * * *"},
	} {
		s, err := Parse(c.expr, ny)
		if err != nil {
			b.Fatal(err)
		}
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				if _, err := s.Next(afters[i&63]); err != nil {
					b.Fatal(err)
				}
				i++
			}
		})
	}
}

// BenchmarkRobfigNext is the baseline: robfig's own Next for the same
// expressions (UTC only; in other zones it is not correct, see the doc).
func BenchmarkRobfigNext(b *testing.B) {
	var afters [64]time.Time
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for i := range afters {
		afters[i] = start.Add(time.Duration(i) * (5*24*time.Hour + 37*time.Minute + 11*time.Second))
	}
	for _, c := range []struct{ name, expr string }{
		{"every5min_UTC", "*/5 * * * *"},
		{"0230_6field_UTC", "0 30 2 * * *"},
		{"daily_UTC", "@daily"},
		{"weekdays0900_UTC", "0 9 * * 1-5"},
	} {
		parsed, err := parser.Parse(c.expr)
		if err != nil {
			b.Fatal(err)
		}
		spec := parsed.(*robfig.SpecSchedule)
		spec.Location = time.UTC
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				if spec.Next(afters[i&63]).IsZero() {
					b.Fatal("no next")
				}
				i++
			}
		})
	}
}
