package cron

import (
	"strings"
	"testing"
	"time"
)

// TestSundaySeven: 7 in the day-of-week field is Sunday, alone, in ranges,
// lists and steps, and fires exactly as the same days written with 0.
func TestSundaySeven(t *testing.T) {
	ny := loadZone(t, "America/New_York")
	cases := []struct{ expr, same, rewritten string }{
		{"0 0 * * 7", "0 0 * * 0", "0 0 * * 0"},
		{"0 0 * * SUN", "0 0 * * 0", "0 0 * * SUN"},
		{"0 9 * * 5-7", "0 9 * * 0,5,6", "0 9 * * 5,6,0"},
		{"0 9 * * fri-7", "0 9 * * 0,5,6", "0 9 * * 5,6,0"},
		{"0 9 * * 0-7", "0 9 * * 0,1,2,3,4,5,6", "0 9 * * 0,1,2,3,4,5,6"},
		{"0 9 * * 1,7", "0 9 * * 0,1", "0 9 * * 1,0"},
		{"0 9 * * 1-7/3", "0 9 * * 1,4,0", "0 9 * * 1,4,0"},
		{"0 9 * * 6/1", "0 9 * * 6", "0 9 * * 6/1"},
		{"0 9 * * 7/2", "0 9 * * 0", "0 9 * * 0"},
		{"0 9 * * 7-7", "0 9 * * 0", "0 9 * * 0"},
		{"0 0 13 * 7", "0 0 13 * 0", "0 0 13 * 0"}, // day-of-month OR Sunday
		{"30 0 0 * * 7", "30 0 0 * * 0", "30 0 0 * * 0"},
		{"  0\t0 * * 7 ", "0 0 * * 0", "0 0 * * 0"},
		{"@weekly", "0 0 * * 0", "@weekly"},
		{"0 7 * 7 *", "0 7 * 7 *", "0 7 * 7 *"}, // 7 outside day-of-week is July / 07:00
	}
	for _, c := range cases {
		t.Run(c.expr, func(t *testing.T) {
			got, err := withSundaySeven(strings.Trim(c.expr, " \t"))
			if err != nil || got != c.rewritten {
				t.Fatalf("withSundaySeven(%q) = %q, %v; want %q", c.expr, got, err, c.rewritten)
			}
			for _, loc := range []*time.Location{time.UTC, ny} {
				s, err := Parse(c.expr, loc)
				if err != nil {
					t.Fatalf("Parse(%q): %v", c.expr, err)
				}
				if s.String() != strings.Trim(c.expr, " \t") {
					t.Fatalf("String() = %q, want the expression as written", s.String())
				}
				same, err := Parse(c.same, loc)
				if err != nil {
					t.Fatal(err)
				}
				at, sameAt := time.Date(2026, 2, 20, 0, 0, 0, 0, loc), time.Date(2026, 2, 20, 0, 0, 0, 0, loc)
				for range 40 { // across New York's spring-forward Sunday
					if at, err = s.Next(at); err != nil {
						t.Fatal(err)
					}
					if sameAt, err = same.Next(sameAt); err != nil {
						t.Fatal(err)
					}
					if !at.Equal(sameAt) {
						t.Fatalf("%q in %s fires %s, %q fires %s", c.expr, loc, at, c.same, sameAt)
					}
				}
			}
		})
	}
}

func TestSundaySevenFirstFires(t *testing.T) {
	after := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC) // a Thursday
	for expr, want := range map[string]string{
		"0 0 * * 7":    "2026-01-04T00:00:00Z",
		"0 0 * * 5-7":  "2026-01-02T00:00:00Z",
		"0 0 * * 6,7":  "2026-01-03T00:00:00Z",
		"0 12 * * 7-7": "2026-01-04T12:00:00Z",
	} {
		s, err := Parse(expr, time.UTC)
		if err != nil {
			t.Fatalf("Parse(%q): %v", expr, err)
		}
		if got, err := s.Next(after); err != nil || got.Format(time.RFC3339) != want {
			t.Errorf("%q: Next = %v, %v; want %s", expr, got, err, want)
		}
	}
}
