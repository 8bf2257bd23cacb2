package cron

import (
	"strings"
	"time"

	robfig "github.com/robfig/cron/v3"

	"github.com/ql3/ql3/core/errs"
)

// MaxExpressionBytes bounds an expression; real ones are a few dozen bytes.
const MaxExpressionBytes = 256

// Fields named in errors.
const (
	fieldExpression = "expression"
	fieldTimeZone   = "timeZone"
	fieldAfter      = "after"
)

const (
	secondsPerDay = 86400
	// horizon is how far Next searches before it reports that nothing fires.
	// Ten years exceed the longest gap between two occurrences of any
	// expression that fires at all (Feb 29 from 2096 to 2104).
	horizon = 10 * 366 * secondsPerDay
	// maxSegments bounds the constant-offset segments one Next visits; no
	// zone changes its offset anywhere near 100 times in ten years.
	maxSegments = 1024
	// nearTransition is how close to the start of its offset segment an
	// instant must be for the previous offset to matter: no offset change
	// in tzdata exceeds a day.
	nearTransition = 2 * secondsPerDay
	// Supported instants: 0001-01-01T00:00:00Z .. 9999-12-31T23:59:59Z.
	minUnix = -62135596800
	maxUnix = 253402300799
)

// referenceUnix (2000-01-01T00:00:00Z) is where Parse looks for a first
// occurrence to reject expressions that never fire.
const referenceUnix = 946684800

var parser = robfig.NewParser(robfig.SecondOptional | robfig.Minute | robfig.Hour |
	robfig.Dom | robfig.Month | robfig.Dow | robfig.Descriptor)

// Schedule is a parsed expression bound to a time zone. It is immutable and
// safe for concurrent use.
type Schedule struct {
	expr    string
	loc     *time.Location
	fields  fields
	cadence bool
}

// Parse parses expr (see the package doc) for the zone loc.
func Parse(expr string, loc *time.Location) (*Schedule, error) {
	if loc == nil {
		return nil, errs.Invalidf(fieldTimeZone, "must be set")
	}
	expr = strings.Trim(expr, " \t")
	if err := checkSyntax(expr); err != nil {
		return nil, err
	}
	translated, err := withSundaySeven(expr)
	if err != nil {
		return nil, err
	}
	parsed, err := parser.Parse(translated)
	if err != nil {
		return nil, errs.Invalidf(fieldExpression, "%q: %v", expr, err)
	}
	spec, ok := parsed.(*robfig.SpecSchedule)
	if !ok {
		// Only @every yields another type, and checkSyntax rejected it.
		return nil, errs.Invalidf(fieldExpression, "%q is not a calendar schedule", expr)
	}
	s := &Schedule{expr: expr, loc: loc, fields: fieldsOf(spec), cadence: cadenceMode(expr)}
	if name := s.fields.empty(); name != "" {
		return nil, errs.Invalidf(fieldExpression, "%q: the %s field selects no value", expr, name)
	}
	if _, ok := s.fields.next(referenceUnix, referenceUnix+horizon); !ok {
		return nil, errs.Invalidf(fieldExpression, "%q never fires (no matching day of month, month and weekday)", expr)
	}
	return s, nil
}

func checkSyntax(expr string) error {
	switch {
	case expr == "":
		return errs.Invalidf(fieldExpression, "must not be empty")
	case len(expr) > MaxExpressionBytes:
		return errs.Invalidf(fieldExpression, "is %d bytes, limit %d", len(expr), MaxExpressionBytes)
	case strings.HasPrefix(expr, "TZ=") || strings.HasPrefix(expr, "CRON_TZ="):
		return errs.Invalidf(fieldExpression, "must not carry a TZ= or CRON_TZ= prefix; the trigger's time zone is set separately")
	case strings.HasPrefix(expr, "@every"):
		return errs.Invalidf(fieldExpression, "@every is not supported: a trigger needs a calendar schedule whose occurrences do not depend on when it was last evaluated")
	}
	for i := 0; i < len(expr); i++ {
		if c := expr[i]; (c < 0x20 || c > 0x7e) && c != '\t' {
			return errs.Invalidf(fieldExpression, "contains byte 0x%02x at offset %d; only printable ASCII is allowed", c, i)
		}
	}
	return nil
}

// cadenceMode reports whether expr's hour field is a wildcard or a step
// (see "Daylight saving time" in the package doc).
func cadenceMode(expr string) bool {
	if expr[0] == '@' {
		return expr == "@hourly"
	}
	f := strings.Fields(expr)
	hour := f[1]
	if len(f) == 6 {
		hour = f[2]
	}
	return strings.ContainsAny(hour, "*?/")
}

// String returns the expression as parsed (surrounding blanks removed).
func (s *Schedule) String() string { return s.expr }

// Location returns the zone the schedule is evaluated in.
func (s *Schedule) Location() *time.Location { return s.loc }

// Next returns the first fire time strictly after `after`, in the
// schedule's zone, or an error if nothing fires within ten years or after is
// outside years 1..9999.
func (s *Schedule) Next(after time.Time) (time.Time, error) {
	sec, err := s.nextUnix(after.Unix())
	if err != nil {
		return time.Time{}, err
	}
	return time.Unix(sec, 0).In(s.loc), nil
}

// NextMs is Next on Unix milliseconds.
func (s *Schedule) NextMs(afterMs int64) (int64, error) {
	sec, err := s.nextUnix(floorDiv(afterMs, 1000))
	if err != nil {
		return 0, err
	}
	return sec * 1000, nil
}

// nextUnix returns the first fire strictly after the Unix second after.
func (s *Schedule) nextUnix(after int64) (int64, error) {
	if after < minUnix || after >= maxUnix {
		return 0, errs.Invalidf(fieldAfter, "%d is outside years 1..9999", after)
	}
	t := after + 1
	limit := t + horizon
	for range maxSegments {
		at := time.Unix(t, 0).In(s.loc)
		_, off := at.Zone()
		offset := int64(off)
		startT, endT := at.ZoneBounds()
		lower := t + offset
		if !s.cadence && !startT.IsZero() {
			if segStart := startT.Unix(); t-segStart < nearTransition {
				_, prev := time.Unix(segStart-1, 0).In(s.loc).Zone()
				prevOffset := int64(prev)
				if prevOffset < offset && t == segStart {
					// Spring forward: wall times [segStart+prev, segStart+off)
					// never happen; any that match fire once, right now.
					if _, ok := s.fields.next(segStart+prevOffset, segStart+offset-1); ok {
						return segStart, nil
					}
				}
				if prevOffset > offset {
					// Fall back: wall times below segStart+prev already
					// happened in the previous segment.
					lower = max(lower, segStart+prevOffset)
				}
			}
		}
		wall, ok := s.fields.next(lower, limit+offset)
		if !ok {
			return 0, errs.Invalidf(fieldExpression, "%q does not fire within ten years after %s", s.expr,
				time.Unix(after, 0).In(s.loc).Format(time.RFC3339))
		}
		instant := wall - offset
		if endT.IsZero() {
			return checkedFire(instant, s.expr)
		}
		end := endT.Unix()
		if end <= t {
			end = s.footerSegmentEnd(t, off)
		}
		if instant < end {
			return checkedFire(instant, s.expr)
		}
		t = end
	}
	return 0, errs.E(errs.Internal, fieldExpression, "%q: zone %s changes offset more than %d times in ten years",
		s.expr, s.loc, maxSegments)
}

func checkedFire(instant int64, expr string) (int64, error) {
	if instant > maxUnix {
		return 0, errs.Invalidf(fieldExpression, "%q does not fire before year 10000", expr)
	}
	return instant, nil
}

// footerSegmentEnd returns the end of the constant-offset segment holding t
// (offset off) when Time.ZoneBounds gave an end that is not after t.
//
// That happens under a zone file's footer rule (instants after its last
// explicit transition, 2037 for most zones): Go evaluates the rule one UTC
// year at a time and ends the year's last segment 365 days after 1 January
// 00:00 UTC, which in a leap year is 31 December 00:00 UTC, so for the last
// day of a leap year from 2040 on ZoneBounds returns an end at or before the
// instant (golang/go#81583). Following it walked backwards until the segment
// bound ran out. The year's last segment runs to the next 1 January 00:00
// UTC, where Go starts the next year's computation. The offset is still
// probed hour by hour up to there (the instant is on 31 December, so that is
// at most 24 probes) and a change found is located by bisection: no zone
// changes its offset twice within an hour. Drop this once the minimum Go
// version carries the upstream fix.
func (s *Schedule) footerSegmentEnd(t int64, off int) int64 {
	end := daysFromCivil(yearOf(t)+1, 1, 1) * secondsPerDay
	for lo := t; lo < end-1; lo += 3600 {
		hi := min(lo+3600, end-1)
		if s.offsetAt(hi) == off {
			continue
		}
		for hi-lo > 1 { // offset(lo) == off != offset(hi)
			if mid := lo + (hi-lo)/2; s.offsetAt(mid) == off {
				lo = mid
			} else {
				hi = mid
			}
		}
		return hi
	}
	return end
}

func (s *Schedule) offsetAt(unix int64) int {
	_, off := time.Unix(unix, 0).In(s.loc).Zone()
	return off
}

// yearOf returns the UTC calendar year of a Unix second.
func yearOf(unix int64) int64 {
	y, _, _ := civilFromDays(floorDiv(unix, secondsPerDay))
	return y
}
