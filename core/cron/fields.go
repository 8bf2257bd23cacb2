package cron

import (
	"math/bits"

	robfig "github.com/robfig/cron/v3"
)

// starBit is robfig's marker for a field written as "*" or "?".
const starBit = 1 << 63

// fields are the parsed bit sets: bit n set means value n matches.
type fields struct {
	second, minute, hour, dom, month, dow uint64
	// domStar/dowStar: the field was a wildcard, which switches the
	// day-of-month/day-of-week combination from OR to AND (Vixie cron).
	domStar, dowStar bool
}

func fieldsOf(s *robfig.SpecSchedule) fields {
	return fields{
		second:  s.Second &^ starBit,
		minute:  s.Minute &^ starBit,
		hour:    s.Hour &^ starBit,
		dom:     s.Dom &^ starBit,
		month:   s.Month &^ starBit,
		dow:     s.Dow &^ starBit,
		domStar: s.Dom&starBit != 0,
		dowStar: s.Dow&starBit != 0,
	}
}

// empty names a field that selects no value, or returns "".
func (f *fields) empty() string {
	switch {
	case f.second == 0:
		return "second"
	case f.minute == 0:
		return "minute"
	case f.hour == 0:
		return "hour"
	case f.dom == 0:
		return "day-of-month"
	case f.month == 0:
		return "month"
	case f.dow == 0:
		return "day-of-week"
	}
	return ""
}

// next returns the first matching wall time at or after wall and not after
// limit. Wall times are seconds on a naive proleptic Gregorian calendar (a
// local date and time encoded as if it were UTC), so there is no DST here.
// The walk is bounded by the number of months up to limit's year.
func (f *fields) next(wall, limit int64) (int64, bool) {
	days := floorDiv(wall, secondsPerDay)
	sod := int(wall - days*secondsPerDay)
	y, mo, d := civilFromDays(days)
	// A loop bound only (w <= limit below is exact): no year is shorter
	// than 365 days, so limit's year is at most this.
	limitYear := y + (limit-wall)/(365*secondsPerDay) + 1
	for y <= limitYear {
		m := nextBit(f.month, mo)
		if m > 12 {
			y, mo, d, sod = y+1, 1, 1, 0
			continue
		}
		if m != mo {
			mo, d, sod = m, 1, 0
		}
		first := daysFromCivil(y, mo, 1)
		last := daysIn(y, mo)
		for ; d <= last; d, sod = d+1, 0 {
			day := first + int64(d) - 1
			if !f.dayMatches(d, weekday(day)) {
				continue
			}
			if tod, ok := f.timeOfDay(sod); ok {
				w := day*secondsPerDay + int64(tod)
				return w, w <= limit
			}
		}
		mo, d, sod = mo+1, 1, 0
		if mo > 12 {
			y, mo = y+1, 1
		}
	}
	return 0, false
}

// timeOfDay returns the first matching second of the day at or after sod.
func (f *fields) timeOfDay(sod int) (int, bool) {
	h, mi, s := sod/3600, sod/60%60, sod%60
	for hh := nextBit(f.hour, h); hh < 24; hh = nextBit(f.hour, hh+1) {
		if hh != h {
			mi, s = 0, 0
		}
		for mm := nextBit(f.minute, mi); mm < 60; mm = nextBit(f.minute, mm+1) {
			if mm != mi {
				s = 0
			}
			if ss := nextBit(f.second, s); ss < 60 {
				return hh*3600 + mm*60 + ss, true
			}
		}
		h = -1 // any later hour starts at minute 0, second 0
	}
	return 0, false
}

func (f *fields) dayMatches(dayOfMonth, weekday int) bool {
	domMatch := f.dom&(1<<uint(dayOfMonth)) != 0
	dowMatch := f.dow&(1<<uint(weekday)) != 0
	if f.domStar || f.dowStar {
		return domMatch && dowMatch
	}
	return domMatch || dowMatch
}

// nextBit returns the lowest set bit of mask at or above from, or 64.
func nextBit(mask uint64, from int) int {
	if from >= 64 {
		return 64
	}
	m := mask >> uint(from)
	if m == 0 {
		return 64
	}
	return from + bits.TrailingZeros64(m)
}

// weekday of a day number (days since 1970-01-01, a Thursday); Sunday is 0.
func weekday(day int64) int {
	return int(floorMod(day+4, 7))
}

func daysIn(y int64, m int) int {
	switch m {
	case 2:
		if y%4 == 0 && (y%100 != 0 || y%400 == 0) {
			return 29
		}
		return 28
	case 4, 6, 9, 11:
		return 30
	}
	return 31
}

// civilFromDays and daysFromCivil convert between days since 1970-01-01 and
// proleptic Gregorian dates (H. Hinnant, "chrono-compatible low-level date
// algorithms").
func civilFromDays(z int64) (y int64, m, d int) {
	z += 719468
	era := floorDiv(z, 146097)
	doe := z - era*146097
	yoe := (doe - doe/1460 + doe/36524 - doe/146096) / 365
	doy := doe - (365*yoe + yoe/4 - yoe/100)
	mp := (5*doy + 2) / 153
	d = int(doy - (153*mp+2)/5 + 1)
	m = int(mp + 3)
	if m > 12 {
		m -= 12
	}
	y = yoe + era*400
	if m <= 2 {
		y++
	}
	return y, m, d
}

func daysFromCivil(y int64, m, d int) int64 {
	if m <= 2 {
		y--
	}
	era := floorDiv(y, 400)
	yoe := y - era*400
	mp := int64((m + 9) % 12)
	doy := (153*mp+2)/5 + int64(d) - 1
	doe := yoe*365 + yoe/4 - yoe/100 + doy
	return era*146097 + doe - 719468
}

func floorDiv(a, b int64) int64 {
	q := a / b
	if (a%b != 0) && ((a < 0) != (b < 0)) {
		q--
	}
	return q
}

func floorMod(a, b int64) int64 {
	return a - floorDiv(a, b)*b
}
