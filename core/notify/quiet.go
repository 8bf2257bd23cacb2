package notify

import (
	"fmt"
	"time"

	"github.com/ql3/ql3/core/errs"
)

// Quiet-hour modes: what happens to a notification that falls inside.
const (
	QuietHold = "hold" // kept, then sent in one digest when the window ends
	QuietDrop = "drop" // not sent (recorded as dropped)
)

// QuietHours is a daily window of wall-clock time in a named zone, e.g.
// 22:00–07:00 Asia/Shanghai. Start == End is refused (a window of nothing
// or of everything is a mistake, not a setting).
type QuietHours struct {
	Zone  string
	Start string // "HH:MM", 24-hour wall clock
	End   string
	Mode  string
}

// Validate checks the zone exists and the times read as HH:MM.
func (q QuietHours) Validate() (QuietHours, error) {
	if _, err := time.LoadLocation(q.Zone); err != nil || q.Zone == "" {
		return QuietHours{}, errs.Invalidf("zone", "must be an IANA time zone such as Asia/Shanghai, got %q", q.Zone)
	}
	s, err := clock("start", q.Start)
	if err != nil {
		return QuietHours{}, err
	}
	e, err := clock("end", q.End)
	if err != nil {
		return QuietHours{}, err
	}
	if s == e {
		return QuietHours{}, errs.Invalidf("end", "must differ from start (%s)", q.Start)
	}
	switch q.Mode {
	case "":
		q.Mode = QuietHold
	case QuietHold, QuietDrop:
	default:
		return QuietHours{}, errs.Invalidf("mode", "must be %q or %q, got %q", QuietHold, QuietDrop, q.Mode)
	}
	return q, nil
}

func clock(field, s string) (int, error) {
	var h, m int
	if len(s) != 5 || s[2] != ':' {
		return 0, errs.Invalidf(field, "must be HH:MM, got %q", s)
	}
	if _, err := fmt.Sscanf(s, "%02d:%02d", &h, &m); err != nil || h > 23 || m > 59 || h < 0 || m < 0 {
		return 0, errs.Invalidf(field, "must be HH:MM between 00:00 and 23:59, got %q", s)
	}
	return h*60 + m, nil
}

// Until reports whether atMs falls inside the window and, if so, the
// first instant at which it is over: the first time the zone's wall clock
// reads End or later. Across a DST change this is the real end: a window
// ending at 02:30 on a spring-forward night (02:00 → 03:00) ends at 03:00
// local; on a fall-back night it ends at the first 02:30.
// q must have passed Validate.
func (q QuietHours) Until(atMs int64) (endMs int64, quiet bool) {
	loc, err := time.LoadLocation(q.Zone)
	if err != nil {
		return 0, false
	}
	start, _ := clock("start", q.Start)
	end, _ := clock("end", q.End)
	t := time.UnixMilli(atMs).In(loc)
	now := t.Hour()*60 + t.Minute()
	var in bool
	if start < end {
		in = now >= start && now < end
	} else { // the window crosses midnight
		in = now >= start || now < end
	}
	if !in {
		return 0, false
	}
	day := t
	if now >= end { // before midnight in a crossing window: ends tomorrow
		day = t.AddDate(0, 0, 1)
	}
	return wallInstant(day, end, loc).UnixMilli(), true
}

// wallInstant is the first instant on day's date at which the wall clock
// reads minute-of-day m or later (a wall time skipped by DST maps to the
// end of the gap).
func wallInstant(day time.Time, m int, loc *time.Location) time.Time {
	y, mo, d := day.Date()
	want := time.Date(y, mo, d, m/60, m%60, 0, 0, loc)
	// time.Date resolves a skipped wall time with the offset before the
	// change, which can land after the gap's end wall time, or before the
	// window's end; walk to the first minute whose wall clock reads >= m.
	for probe := want.Add(-3 * time.Hour); probe.Before(want.Add(3 * time.Hour)); probe = probe.Add(time.Minute) {
		p := probe.In(loc)
		py, pm, pd := p.Date()
		if py == y && pm == mo && pd == d && p.Hour()*60+p.Minute() >= m {
			return p.Truncate(time.Minute)
		}
	}
	return want
}
