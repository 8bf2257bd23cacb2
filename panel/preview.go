package panel

import (
	"net/http"
	"strconv"
	"time"

	"github.com/ql3/ql3/core/cron"
	"github.com/ql3/ql3/core/errs"
	"github.com/ql3/ql3/httpkit"
)

// Preview bounds.
const (
	DefaultPreviewCount = 10
	MaxPreviewCount     = 20
	// transitionWindow is how far either side of a fire the preview looks
	// for a UTC offset change: no change in tzdata exceeds a day.
	transitionWindow = 2 * 24 * time.Hour
)

// PreviewPath is the schedule preview endpoint:
//
//	GET /api/v1/schedule/preview?expression=&timeZone=&count=&afterMs=
//
// It answers the next count (1..20, default 10) fire times of the
// expression in the zone (IANA name, default UTC) strictly after afterMs
// (default now), each with its local wall time and, near a DST change, a
// mark: "gap" (the wall time the expression names did not exist, the fire
// moved to the first instant after the gap) or "repeat" (the wall time
// happens twice; which occurrence this is is in the note). Errors name the
// trigger's own fields (expression, timeZone), so a form shows them next
// to its inputs.
const PreviewPath = "/api/v1/schedule/preview"

// PreviewResponse is the body of a preview.
type PreviewResponse struct {
	Expression string     `json:"expression"`
	TimeZone   string     `json:"timeZone"`
	AfterMs    int64      `json:"afterMs"`
	Fires      []FireTime `json:"fires"`
}

// FireTime is one previewed fire.
type FireTime struct {
	AtMs    int64  `json:"atMs"`
	Local   string `json:"local"` // 2006-01-02T15:04:05-07:00 in the zone
	Zone    string `json:"zone"`  // abbreviation in effect (CET, CEST, …)
	Weekday string `json:"weekday"`
	Mark    string `json:"mark,omitempty"` // gap | repeat
	Note    string `json:"note,omitempty"`
}

// PreviewHandler returns the preview handler; now is the server's clock.
func PreviewHandler(now func() time.Time) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		q := r.URL.Query()
		count := DefaultPreviewCount
		if v := q.Get("count"); v != "" {
			n, err := strconv.Atoi(v)
			if err != nil || n < 1 || n > MaxPreviewCount {
				httpkit.WriteError(w, errs.Invalidf("count", "must be 1..%d, got %.20q", MaxPreviewCount, v))
				return
			}
			count = n
		}
		afterMs := now().UnixMilli()
		if v := q.Get("afterMs"); v != "" {
			n, err := strconv.ParseInt(v, 10, 64)
			if err != nil {
				httpkit.WriteError(w, errs.Invalidf("afterMs", "must be epoch milliseconds, got %.30q", v))
				return
			}
			afterMs = n
		}
		res, err := Preview(q.Get("expression"), q.Get("timeZone"), afterMs, count)
		if err != nil {
			httpkit.WriteError(w, err)
			return
		}
		httpkit.WriteJSON(w, http.StatusOK, res)
	}
}

// Preview computes the next count fires of expr in zone after afterMs.
func Preview(expr, zone string, afterMs int64, count int) (PreviewResponse, error) {
	if zone == "" {
		zone = "UTC"
	}
	if len(zone) > 64 {
		return PreviewResponse{}, errs.Invalidf("timeZone", "is %d bytes, limit 64", len(zone))
	}
	loc, err := time.LoadLocation(zone)
	if err != nil || zone == "Local" {
		return PreviewResponse{}, errs.Invalidf("timeZone", "%q is not an IANA time zone name", zone)
	}
	s, err := cron.Parse(expr, loc)
	if err != nil {
		return PreviewResponse{}, err
	}
	// The same expression on UTC (no transitions) says whether a wall time
	// matches the fields.
	naive, err := cron.Parse(expr, time.UTC)
	if err != nil {
		return PreviewResponse{}, err
	}
	res := PreviewResponse{Expression: s.String(), TimeZone: zone, AfterMs: afterMs, Fires: make([]FireTime, 0, count)}
	cur := afterMs
	for range count {
		next, err := s.NextMs(cur)
		if err != nil {
			if len(res.Fires) > 0 {
				break // nothing more within the horizon
			}
			return PreviewResponse{}, err
		}
		res.Fires = append(res.Fires, describeFire(time.UnixMilli(next).In(loc), naive))
		cur = next
	}
	return res, nil
}

func describeFire(at time.Time, naive *cron.Schedule) FireTime {
	abbr, off := at.Zone()
	f := FireTime{AtMs: at.UnixMilli(), Local: at.Format(time.RFC3339), Zone: abbr, Weekday: at.Weekday().String()[:3]}
	wall := time.Unix(at.Unix()+int64(off), 0).UTC()
	if !matchesWall(naive, wall) {
		// Only a spring-forward gap moves a fire off its wall time.
		if prev := at.Add(-time.Second); prevOffset(prev) < off {
			skipped := "a wall time"
			if w, err := naive.Next(time.Unix(at.Unix()+int64(prevOffset(prev))-1, 0).UTC()); err == nil {
				skipped = w.Format("15:04")
			}
			f.Mark = "gap"
			f.Note = "clocks go forward: " + skipped + " does not exist that day; runs at the first instant after the gap"
		}
		return f
	}
	// A wall time repeats when another offset near this fire maps it to a
	// second instant.
	for _, probe := range []time.Time{at.Add(-transitionWindow), at.Add(transitionWindow)} {
		_, o := probe.Zone()
		if o == off {
			continue
		}
		other := time.Unix(wall.Unix()-int64(o), 0).In(at.Location())
		if _, oo := other.Zone(); oo == o && !other.Equal(at) {
			f.Mark = "repeat"
			if other.Before(at) {
				f.Note = "clocks go back: this wall time happens twice; this is the second occurrence"
			} else {
				f.Note = "clocks go back: this wall time happens twice; this is the first occurrence"
			}
			return f
		}
	}
	return f
}

func prevOffset(t time.Time) int {
	_, o := t.Zone()
	return o
}

// matchesWall reports whether the wall time (as a naive UTC time) matches
// the expression: the UTC schedule fires exactly there.
func matchesWall(naive *cron.Schedule, wall time.Time) bool {
	next, err := naive.Next(wall.Add(-time.Second))
	return err == nil && next.Equal(wall)
}
