package protocol

import (
	"testing"

	"github.com/ql3/ql3/core/errs"
)

var nodePacing = PullPacing{IdleMs: 2000, MarginMs: 50, FloorMs: 100}

func TestPullPacingPauseMs(t *testing.T) {
	for _, c := range []struct {
		name string
		p    PullPacing
		f    PullForecast
		want int64
	}{
		{"nothing forecast: idle", nodePacing, PullForecast{}, 2000},
		{"unknown ignores DueInMs", nodePacing, PullForecast{DueInMs: 10}, 2000},
		{"due in 700 ms: due + margin", nodePacing, PullForecast{Known: true, DueInMs: 700}, 750},
		{"due in 1 ms: floor", nodePacing, PullForecast{Known: true, DueInMs: 1}, 100},
		{"due now (being admitted): floor", nodePacing, PullForecast{Known: true, DueInMs: 0}, 100},
		{"overdue: floor", nodePacing, PullForecast{Known: true, DueInMs: -900}, 100},
		{"due + margin just below idle", nodePacing, PullForecast{Known: true, DueInMs: 1949}, 1999},
		{"due + margin past idle: idle", nodePacing, PullForecast{Known: true, DueInMs: 1990}, 2000},
		{"due at idle: idle", nodePacing, PullForecast{Known: true, DueInMs: 2000}, 2000},
		{"due far away: idle", nodePacing, PullForecast{Known: true, DueInMs: 1 << 62}, 2000},
		{"no margin", PullPacing{IdleMs: 2000, FloorMs: 100}, PullForecast{Known: true, DueInMs: 300}, 300},
		{"floor above due", PullPacing{IdleMs: 5000, MarginMs: 0, FloorMs: 400}, PullForecast{Known: true, DueInMs: 300}, 400},
		// Out-of-range settings are clamped, never trusted.
		{"idle below 1 s", PullPacing{IdleMs: 10, FloorMs: 100}, PullForecast{}, 1000},
		{"idle above 60 s", PullPacing{IdleMs: 1 << 40, FloorMs: 100}, PullForecast{}, 60_000},
		{"floor below the minimum", PullPacing{IdleMs: 2000, FloorMs: 1}, PullForecast{Known: true, DueInMs: -1}, 100},
		{"floor above idle", PullPacing{IdleMs: 2000, FloorMs: 9000}, PullForecast{Known: true, DueInMs: 5}, 2000},
		{"negative margin", PullPacing{IdleMs: 2000, MarginMs: -500, FloorMs: 100}, PullForecast{Known: true, DueInMs: 700}, 700},
		{"huge margin", PullPacing{IdleMs: 60_000, MarginMs: 1 << 62, FloorMs: 100}, PullForecast{Known: true, DueInMs: 700}, 10_700},
	} {
		if got := c.p.PauseMs(c.f); got != c.want {
			t.Errorf("%s: PauseMs(%+v) = %d, want %d", c.name, c.f, got, c.want)
		}
	}
}

func TestPullPacingValidate(t *testing.T) {
	if err := nodePacing.Validate(); err != nil {
		t.Fatalf("valid pacing refused: %v", err)
	}
	for _, c := range []struct {
		p     PullPacing
		field string
	}{
		{PullPacing{IdleMs: 999, FloorMs: 100}, "idleMs"},
		{PullPacing{IdleMs: 60_001, FloorMs: 100}, "idleMs"},
		{PullPacing{IdleMs: 2000, MarginMs: -1, FloorMs: 100}, "marginMs"},
		{PullPacing{IdleMs: 2000, MarginMs: MaxPullMarginMs + 1, FloorMs: 100}, "marginMs"},
		{PullPacing{IdleMs: 2000, FloorMs: 99}, "floorMs"},
		{PullPacing{IdleMs: 2000, FloorMs: 2001}, "floorMs"},
	} {
		if err := c.p.Validate(); errs.Field(err) != c.field {
			t.Errorf("Validate(%+v) = %v, want an error naming %s", c.p, err, c.field)
		}
	}
}

// FuzzPullPacingPauseMs: whatever the settings and forecast, the pause is a
// valid header value, never above the idle pause, never before the
// occurrence plus margin unless that is past the idle pause, and it does
// not shrink when the occurrence moves later.
func FuzzPullPacingPauseMs(f *testing.F) {
	f.Add(int64(2000), int64(50), int64(100), true, int64(700), int64(5))
	f.Add(int64(0), int64(-1), int64(0), false, int64(-1), int64(1<<62))
	f.Add(int64(60_000), int64(1<<62), int64(1<<62), true, int64(-1<<62), int64(1))
	f.Fuzz(func(t *testing.T, idle, margin, floor int64, known bool, due, later int64) {
		p := PullPacing{IdleMs: idle, MarginMs: margin, FloorMs: floor}
		fc := PullForecast{Known: known, DueInMs: due}
		got := p.PauseMs(fc)
		cIdle := min(max(idle, 1000), MaxRetryAfterMs)
		if got < MinRetryAfterMs || got > cIdle {
			t.Fatalf("PauseMs(%+v, %+v) = %d, outside [%d, %d]", p, fc, got, MinRetryAfterMs, cIdle)
		}
		if !known {
			if got != cIdle {
				t.Fatalf("PauseMs(%+v, unknown) = %d, want idle %d", p, got, cIdle)
			}
			return
		}
		cMargin := min(max(margin, 0), MaxPullMarginMs)
		if due >= 0 && due < cIdle && got < min(due+cMargin, cIdle) {
			t.Fatalf("PauseMs(%+v, %+v) = %d, before due + margin", p, fc, got)
		}
		if later >= 0 && due <= 1<<62 {
			if g2 := p.PauseMs(PullForecast{Known: true, DueInMs: due + later}); g2 < got {
				t.Fatalf("PauseMs shrank from %d to %d when the occurrence moved %d ms later", got, g2, later)
			}
		}
	})
}

func TestParseRetryAfterMs(t *testing.T) {
	for _, c := range []struct {
		in     string
		want   int64
		ok     bool
		bad    bool
		reason string
	}{
		{in: "", reason: "absent"},
		{in: "250", want: 250, ok: true},
		{in: "0", want: MinRetryAfterMs, ok: true, reason: "clamped up"},
		{in: "99", want: MinRetryAfterMs, ok: true},
		{in: "60000", want: 60_000, ok: true},
		{in: "999999999", want: MaxRetryAfterMs, ok: true, reason: "clamped down"},
		{in: "1000000000", bad: true},
		{in: "-1", bad: true},
		{in: "1.5", bad: true},
		{in: " 2", bad: true},
		{in: "2s", bad: true},
	} {
		got, ok, err := ParseRetryAfterMs(c.in)
		if c.bad {
			if errs.Field(err) != HeaderRetryAfterMs || ok {
				t.Errorf("ParseRetryAfterMs(%q) = %d %v %v; want an error naming %s", c.in, got, ok, err, HeaderRetryAfterMs)
			}
			continue
		}
		if err != nil || got != c.want || ok != c.ok {
			t.Errorf("ParseRetryAfterMs(%q) = %d %v %v; want %d %v (%s)", c.in, got, ok, err, c.want, c.ok, c.reason)
		}
	}
}

func FuzzParseRetryAfterMs(f *testing.F) {
	for _, s := range []string{"", "1", "250", "60000", "999999999", "x", "-0", "1e3"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		ms, ok, err := ParseRetryAfterMs(s)
		switch {
		case err != nil:
			if ok {
				t.Fatalf("ParseRetryAfterMs(%q): ok with an error", s)
			}
		case !ok:
			if s != "" {
				t.Fatalf("ParseRetryAfterMs(%q): not ok without an error", s)
			}
		case ms < MinRetryAfterMs || ms > MaxRetryAfterMs:
			t.Fatalf("ParseRetryAfterMs(%q) = %d out of bounds", s, ms)
		}
	})
}
