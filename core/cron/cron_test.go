package cron

import (
	"strings"
	"testing"
	"time"

	"github.com/ql3/ql3/core/errs"
)

func TestParseRejects(t *testing.T) {
	cases := []struct {
		name, expr, field, mention string
	}{
		{"empty", "", "expression", "empty"},
		{"blank", "  \t ", "expression", "empty"},
		{"too long", "0 0 * * " + strings.Repeat("1,", 200) + "1", "expression", "limit 256"},
		{"every", "@every 1h", "expression", "@every"},
		{"every bare", "@every", "expression", "@every"},
		{"TZ prefix", "TZ=UTC 0 0 * * *", "expression", "TZ="},
		{"CRON_TZ prefix", "CRON_TZ=Asia/Shanghai 0 0 * * *", "expression", "CRON_TZ="},
		{"TZ without space", "TZ=UTC", "expression", "TZ="},
		{"control byte", "0 0 * * *\n", "expression", "0x0a"},
		{"non-ASCII", "0 0 * * lün", "expression", "0xc3"},
		{"four fields", "0 0 * *", "expression", "fields"},
		{"seven fields", "0 0 0 * * * *", "expression", "fields"},
		{"minute range", "60 * * * *", "expression", "above maximum"},
		{"hour range", "0 24 * * *", "expression", "above maximum"},
		{"dow 8", "0 0 * * 8", "expression", "above maximum (7"},
		{"dow range to 8", "0 0 * * 5-8", "expression", "above maximum (7"},
		{"dow 7 reversed range", "0 0 * * 7-1", "expression", "beyond end"},
		{"dow 7 zero step", "0 0 * * 1-7/0", "expression", "step"},
		{"zero step", "*/0 * * * *", "expression", "step"},
		{"negative", "-1 * * * *", "expression", "parse int"},
		{"reversed range", "0 5-3 * * *", "expression", "beyond end"},
		{"unknown descriptor", "@fortnightly", "expression", "unrecognized"},
		{"uppercase descriptor", "@DAILY", "expression", "unrecognized"},
		{"empty field list", "0 , * * *", "expression", "selects no value"},
		{"feb 30", "0 0 30 2 *", "expression", "never fires"},
		{"april 31", "0 0 31 4 *", "expression", "never fires"},
		{"short months 31", "0 0 31 2,4,6,9,11 *", "expression", "never fires"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s, err := Parse(c.expr, time.UTC)
			if err == nil {
				t.Fatalf("Parse(%q) = %v, want error", c.expr, s)
			}
			if errs.Code(err) != errs.Invalid || errs.Field(err) != c.field {
				t.Fatalf("Parse(%q): code %q field %q (%v), want invalid/%s", c.expr, errs.Code(err), errs.Field(err), err, c.field)
			}
			if !strings.Contains(err.Error(), c.mention) {
				t.Fatalf("Parse(%q) error %q does not mention %q", c.expr, err, c.mention)
			}
		})
	}
}

func TestParseNilLocation(t *testing.T) {
	_, err := Parse("0 0 * * *", nil)
	if errs.Code(err) != errs.Invalid || errs.Field(err) != "timeZone" {
		t.Fatalf("Parse with nil location: %v", err)
	}
}

func TestParseAccepts(t *testing.T) {
	after := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC) // a Thursday
	cases := []struct {
		expr    string
		cadence bool
		next    string // first fire after 2026-01-01T00:00:00Z
	}{
		{"*/5 * * * *", true, "2026-01-01T00:05:00Z"},
		{"0 30 2 * * *", false, "2026-01-01T02:30:00Z"},
		{"  0 9 * * 1-5\t", false, "2026-01-01T09:00:00Z"},
		{"0 9 * * MON-fri", false, "2026-01-01T09:00:00Z"},
		{"0 0 1 jan *", false, "2027-01-01T00:00:00Z"},
		{"0 0 29 2 *", false, "2028-02-29T00:00:00Z"},
		{"0 0 13 * 5", false, "2026-01-02T00:00:00Z"}, // day-of-month OR Friday
		{"0 0 13 * ?", false, "2026-01-13T00:00:00Z"}, // "?" is a wildcard: AND
		{"0 0 */10 * *", false, "2026-01-11T00:00:00Z"},
		{"0 0 8-18/2 * *", false, "2026-01-08T00:00:00Z"},
		{"0 8-18/2 * * *", true, "2026-01-01T08:00:00Z"},
		{"0 3/4 * * *", true, "2026-01-01T03:00:00Z"},
		{"0 1,13 * * *", false, "2026-01-01T01:00:00Z"},
		{"0 0-23 * * *", false, "2026-01-01T01:00:00Z"},
		{"*/10 * * * * *", true, "2026-01-01T00:00:10Z"},
		{"@yearly", false, "2027-01-01T00:00:00Z"},
		{"@annually", false, "2027-01-01T00:00:00Z"},
		{"@monthly", false, "2026-02-01T00:00:00Z"},
		{"@weekly", false, "2026-01-04T00:00:00Z"},
		{"@daily", false, "2026-01-02T00:00:00Z"},
		{"@midnight", false, "2026-01-02T00:00:00Z"},
		{"@hourly", true, "2026-01-01T01:00:00Z"},
	}
	for _, c := range cases {
		s, err := Parse(c.expr, time.UTC)
		if err != nil {
			t.Fatalf("Parse(%q): %v", c.expr, err)
		}
		if s.String() != strings.Trim(c.expr, " \t") {
			t.Errorf("String() = %q, want %q", s.String(), strings.TrimSpace(c.expr))
		}
		if s.cadence != c.cadence {
			t.Errorf("%q: cadence = %v, want %v", c.expr, s.cadence, c.cadence)
		}
		if s.Location() != time.UTC {
			t.Errorf("%q: Location() = %v", c.expr, s.Location())
		}
		got, err := s.Next(after)
		if err != nil || got.Format(time.RFC3339) != c.next {
			t.Errorf("%q: Next = %v, %v; want %s", c.expr, got, err, c.next)
		}
	}
}

func TestNextStrictlyAfterWholeSeconds(t *testing.T) {
	s, err := Parse("* * * * * *", time.UTC)
	if err != nil {
		t.Fatal(err)
	}
	base := time.Date(2026, 5, 1, 10, 0, 0, 0, time.UTC)
	cases := []struct {
		after time.Time
		want  time.Time
	}{
		{base, base.Add(time.Second)},
		{base.Add(-time.Nanosecond), base},
		{base.Add(999 * time.Millisecond), base.Add(time.Second)},
	}
	for _, c := range cases {
		if got, err := s.Next(c.after); err != nil || !got.Equal(c.want) {
			t.Errorf("Next(%v) = %v, %v; want %v", c.after, got, err, c.want)
		}
	}
	ms := base.UnixMilli()
	for _, c := range []struct{ after, want int64 }{
		{ms, ms + 1000}, {ms - 1, ms}, {ms + 999, ms + 1000}, {-1, 0}, {-1001, -1000},
	} {
		if got, err := s.NextMs(c.after); err != nil || got != c.want {
			t.Errorf("NextMs(%d) = %d, %v; want %d", c.after, got, err, c.want)
		}
	}
}

func TestNextReturnsScheduleZone(t *testing.T) {
	ny := loadZone(t, "America/New_York")
	s, err := Parse("0 9 * * *", ny)
	if err != nil {
		t.Fatal(err)
	}
	got, err := s.Next(time.Date(2026, 6, 1, 0, 0, 0, 0, time.UTC))
	if err != nil || got.Location() != ny || got.Format(time.RFC3339) != "2026-06-01T09:00:00-04:00" {
		t.Fatalf("Next = %v (%v), %v", got, got.Location(), err)
	}
}

func TestNextBounds(t *testing.T) {
	leap, err := Parse("0 0 29 2 *", time.UTC)
	if err != nil {
		t.Fatal(err)
	}
	// 2096-02-29 to 2104-02-29 is the longest gap any expression has.
	got, err := leap.Next(time.Date(2096, 3, 1, 0, 0, 0, 0, time.UTC))
	if err != nil || got.Format(time.RFC3339) != "2104-02-29T00:00:00Z" {
		t.Fatalf("Feb 29 across 2100: %v, %v", got, err)
	}
	if _, err := leap.Next(time.Date(9996, 3, 1, 0, 0, 0, 0, time.UTC)); errs.Code(err) != errs.Invalid {
		t.Fatalf("no Feb 29 before year 10000: err %v", err)
	}
	daily, _ := Parse("@daily", time.UTC)
	for _, at := range []time.Time{
		time.Date(0, 12, 31, 0, 0, 0, 0, time.UTC),
		time.Date(9999, 12, 31, 23, 59, 59, 0, time.UTC),
		time.Date(12000, 1, 1, 0, 0, 0, 0, time.UTC),
	} {
		if _, err := daily.Next(at); errs.Code(err) != errs.Invalid {
			t.Errorf("Next(%v): err %v, want invalid", at, err)
		}
	}
	if _, err := daily.NextMs(1 << 62); errs.Code(err) != errs.Invalid {
		t.Errorf("NextMs(huge): err %v, want invalid", err)
	}
	if got, err := daily.Next(time.Date(1, 1, 1, 0, 0, 0, 0, time.UTC)); err != nil || got.Format(time.RFC3339) != "0001-01-02T00:00:00Z" {
		t.Errorf("Next(year 1) = %v, %v", got, err)
	}
}

// TestDSTPolicy states the policy with hand-written expectations, counted
// over whole local days, independent of the golden tables.
func TestDSTPolicy(t *testing.T) {
	ny := loadZone(t, "America/New_York")
	lh := loadZone(t, "Australia/Lord_Howe")
	day := func(loc *time.Location, y int, m time.Month, d int) (time.Time, time.Time) {
		return time.Date(y, m, d, 0, 0, 0, 0, loc), time.Date(y, m, d+1, 0, 0, 0, 0, loc)
	}
	cases := []struct {
		name      string
		loc       *time.Location
		expr      string
		y         int
		m         time.Month
		d         int
		wantCount int
		wantFirst string
		wantStep  time.Duration // if set, every consecutive pair is this far apart in real time
	}{
		{"NY 02:30 spring forward fires once after the gap", ny, "30 2 * * *", 2026, 3, 8, 1, "2026-03-08T03:00:00-04:00", 0},
		{"NY 02:30 fall back fires once", ny, "30 2 * * *", 2026, 11, 1, 1, "2026-11-01T02:30:00-05:00", 0},
		{"NY 01:30 fall back fires once, first occurrence", ny, "30 1 * * *", 2026, 11, 1, 1, "2026-11-01T01:30:00-04:00", 0},
		{"NY */15 spring forward: 23 h of real cadence", ny, "*/15 * * * *", 2026, 3, 8, 92, "2026-03-08T00:00:00-05:00", 15 * time.Minute},
		{"NY */15 fall back: 25 h of real cadence", ny, "*/15 * * * *", 2026, 11, 1, 100, "2026-11-01T00:00:00-04:00", 15 * time.Minute},
		{"NY hourly fall back: 25 fires", ny, "0 * * * *", 2026, 11, 1, 25, "2026-11-01T00:00:00-04:00", time.Hour},
		{"NY hourly spring forward: 23 fires", ny, "0 * * * *", 2026, 3, 8, 23, "2026-03-08T00:00:00-05:00", time.Hour},
		{"NY fixed hours list on fall back: 24 fires", ny, "0 0-23 * * *", 2026, 11, 1, 24, "2026-11-01T00:00:00-04:00", 0},
		{"Lord Howe 02:15 spring forward fires once at 02:30", lh, "15 2 * * *", 2026, 10, 4, 1, "2026-10-04T02:30:00+11:00", 0},
		{"Lord Howe 01:45 fall back fires once", lh, "45 1 * * *", 2026, 4, 5, 1, "2026-04-05T01:45:00+11:00", 0},
		{"Lord Howe */15 fall back: 24.5 h of cadence", lh, "*/15 * * * *", 2026, 4, 5, 98, "2026-04-05T00:00:00+11:00", 15 * time.Minute},
		{"Lord Howe */15 spring forward: 23.5 h of cadence", lh, "*/15 * * * *", 2026, 10, 4, 94, "2026-10-04T00:00:00+10:30", 15 * time.Minute},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s, err := Parse(c.expr, c.loc)
			if err != nil {
				t.Fatal(err)
			}
			start, end := day(c.loc, c.y, c.m, c.d)
			var fires []time.Time
			for at := start.Add(-time.Second); ; {
				if at, err = s.Next(at); err != nil {
					t.Fatal(err)
				}
				if !at.Before(end) {
					break
				}
				fires = append(fires, at)
			}
			if len(fires) != c.wantCount {
				t.Fatalf("%d fires, want %d: %v", len(fires), c.wantCount, fires)
			}
			if got := fires[0].Format(time.RFC3339); got != c.wantFirst {
				t.Fatalf("first fire %s, want %s", got, c.wantFirst)
			}
			for i := 1; c.wantStep != 0 && i < len(fires); i++ {
				if d := fires[i].Sub(fires[i-1]); d != c.wantStep {
					t.Fatalf("%v -> %v is %v, want %v", fires[i-1], fires[i], d, c.wantStep)
				}
			}
		})
	}
}
