package cron

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/ql3/ql3/core/errs"
)

// dowNames are the day-of-week names robfig accepts (case-insensitive).
var dowNames = map[string]int{"sun": 0, "mon": 1, "tue": 2, "wed": 3, "thu": 4, "fri": 5, "sat": 6}

// withSundaySeven returns expr with its day-of-week field rewritten so that 7,
// which Vixie cron and QingLong accept as Sunday beside 0, reaches robfig
// (days 0–6) as 0: "7" becomes "0", "5-7" becomes "5,6,0", "1-7/3"
// becomes "1,4,0". Items without a 7 are passed on unchanged, and so is an
// expression without a calendar field list (a descriptor, or a field count
// robfig will refuse). A day-of-week number above 7 is refused here, naming
// the maximum 7.
func withSundaySeven(expr string) (string, error) {
	if expr[0] == '@' {
		return expr, nil
	}
	f := strings.Fields(expr)
	if len(f) != 5 && len(f) != 6 {
		return expr, nil
	}
	dow := len(f) - 1
	field, changed, err := sundaySevenField(f[dow])
	if err != nil {
		return "", errs.Invalidf(fieldExpression, "%q: day-of-week %v", expr, err)
	}
	if !changed {
		return expr, nil
	}
	f[dow] = field
	return strings.Join(f, " "), nil
}

// sundaySevenField rewrites one day-of-week field; changed reports whether
// any item named 7.
func sundaySevenField(field string) (out string, changed bool, err error) {
	items := strings.Split(field, ",")
	for i, item := range items {
		rangePart, stepPart, hasStep := strings.Cut(item, "/")
		lowText, highText, isRange := strings.Cut(rangePart, "-")
		if rangePart == "*" || rangePart == "?" || strings.Contains(highText, "-") || strings.Contains(stepPart, "/") {
			continue // robfig parses (or refuses) these itself
		}
		low, okLow := dowValue(lowText)
		high, okHigh := low, okLow
		if isRange {
			high, okHigh = dowValue(highText)
		}
		for _, v := range []struct {
			n  int
			ok bool
		}{{low, okLow}, {high, okHigh}} {
			if v.ok && v.n > 7 {
				return "", false, fmt.Errorf("value %d is above maximum (7; 0 and 7 are Sunday): %s", v.n, item)
			}
		}
		if !okLow || !okHigh || (low != 7 && high != 7) {
			continue
		}
		step := 1
		if hasStep {
			if step, err = strconv.Atoi(stepPart); err != nil || step < 1 {
				return "", false, fmt.Errorf("step of %s must be a positive number", item)
			}
			if !isRange {
				high = 7 // "N/step" means "N-max/step"
			}
		}
		if low > high {
			return "", false, fmt.Errorf("beginning of range (%d) beyond end of range (%d): %s", low, high, item)
		}
		days := make([]string, 0, 7)
		var seen [7]bool
		for d := low; d <= high; d += step {
			if !seen[d%7] {
				seen[d%7] = true
				days = append(days, strconv.Itoa(d%7))
			}
		}
		items[i], changed = strings.Join(days, ","), true
	}
	return strings.Join(items, ","), changed, nil
}

// dowValue reads a day-of-week bound: a non-negative number or a name.
func dowValue(s string) (int, bool) {
	if n, ok := dowNames[strings.ToLower(s)]; ok {
		return n, true
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < 0 {
		return 0, false
	}
	return n, true
}
