// Package cron parses cron expressions and computes their next fire time in
// an explicit IANA time zone.
//
// # Expressions
//
// Five fields (minute hour day-of-month month day-of-week) or six with a
// leading seconds field, parsed by github.com/robfig/cron/v3, and the
// descriptors @yearly, @annually, @monthly, @weekly, @daily, @midnight and
// @hourly. Day-of-month and day-of-week combine as in Vixie cron: if either
// is a wildcard both must match, otherwise either may match.
//
// In the day-of-week field both 0 and 7 mean Sunday, as in Vixie cron and
// QingLong: "0 0 * * 7", ranges ending at 7 ("5-7" is Friday to Sunday,
// "0-7" every day, "1-7/2" Monday, Wednesday, Friday and Sunday) and lists
// ("1,7"). robfig knows days 0–6 only, so Parse rewrites such items to their
// days (7 as 0) before handing the expression over; String still returns
// the expression as written. A day-of-week value above 7 is refused.
//
// Rejected: @every (ql3 keeps one cursor per trigger and asks "what is the
// first calendar occurrence after t?"; a duration schedule has no calendar,
// so its occurrences would depend on when the cursor was last written),
// TZ= and CRON_TZ= prefixes (the zone is an explicit per-trigger setting,
// and loading it is the caller's I/O), empty or over-long expressions,
// a field that selects no value, and an expression that never fires, such
// as "0 0 30 2 *".
//
// # Daylight saving time
//
// Wall-clock times are matched against the fields; what happens when the
// zone's UTC offset changes depends on the hour field, following ISC (Vixie)
// cron:
//
//   - Cadence mode — the hour field is "*", "?" or contains a step
//     ("*/2", "8-18/2", "3/4"), and @hourly. A job fires at every instant
//     whose local wall time matches. A wall time that repeats at fall-back
//     fires at each occurrence; a wall time inside a spring-forward gap does
//     not exist and does not fire. "*/15 * * * *" therefore fires every 15
//     real minutes straight through both transitions, which is what a poller
//     or a metrics scraper expects: no burst, no hole.
//
//   - Wall-clock mode — every other hour field (a fixed hour, a list or a
//     range). The job means "at this time of day". A matching wall time
//     inside a spring-forward gap fires once, at the first instant after the
//     gap (several matching gap times coalesce into that one fire); a
//     matching wall time that repeats at fall-back fires only at its first
//     occurrence. A nightly backup at 02:30 runs exactly once on both
//     transition days: at 03:00 on the spring-forward day in New York, and at
//     the first 01:30 (EDT) — not again at 01:30 EST — for "30 1 * * *" on
//     the fall-back day.
//
// Only the wall clock is consulted in cadence mode, so a step that does not
// divide the offset change is not a constant real interval: "0 */2 * * *"
// in New York fires at 00:00 EST and then 04:00 EDT on the spring-forward
// day, and "0 * * * *" on Lord Howe Island (a 30-minute shift) has a 90-minute
// gap. That is the wall-clock contract the expression states.
//
// # Why not robfig's Next
//
// robfig/cron's SpecSchedule.Next walks the fields with time.Date and
// Time.Add in the target zone and misbehaves around transitions (robfig/cron
// issue 157, PR 541: skipped and doubled fires, and hour arithmetic that
// assumes whole-hour shifts). This package uses robfig only to parse. It
// searches matching wall times on a naive calendar (wall seconds treated as
// UTC, where no transition exists) with its own allocation-free bit-field
// walk, and maps wall times to instants itself, one constant-offset segment
// (time.Time.ZoneBounds) at a time. ZoneBounds ends the last segment of a
// leap year at 31 December 00:00 UTC for instants under a zone file's footer
// rule (golang/go#81583); Next detects an end that does not advance and
// probes for the real one. In time.UTC the result equals robfig's Next; the
// fuzz test checks that, and a brute-force model of the policy checks every
// zone of the golden tables at instants sampled from 1970 to 2199.
//
// # Bounds
//
// Next always returns an instant strictly after its argument, in whole
// seconds, and gives up with an error if nothing fires within ten years (an
// expression Parse accepted fires at least once in every eight-year window,
// Feb 29 across a non-leap century being the longest gap). Instants before
// year 1 or after year 9999 are rejected. Nothing in this package reads the
// clock or the zone database: Parse takes a *time.Location the caller loaded.
package cron
