package qlimport

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ql3/ql3/core/cron"
)

// firesFile is what scripts/qlfixture/fires.js prints: the instants
// QingLong 2.21's scheduler (node-schedule 2.1.1 on cron-parser 4.9.0)
// fires each expression at, in a zone, after a start.
type firesFile struct {
	Zone       string              `json:"zone"`
	Start      time.Time           `json:"start"`
	Count      int                 `json:"count"`
	CronParser string              `json:"cronParser"`
	Fires      map[string][]string `json:"fires"`
	Refused    map[string]string   `json:"refused"`
}

// acceptedSchedule is the schedule of a one-row plan when the import
// creates a trigger for it.
func acceptedSchedule(t *testing.T, expr, zone string) bool {
	t.Helper()
	p, err := Inspect(Source{Crontabs: []Crontab{{ID: 1, Name: "x", Command: "date", Schedule: expr}}}, zone)
	if err != nil {
		t.Fatal(err)
	}
	return p.Tasks[0].Created()
}

// TestFireTimesMatchQingLong: every schedule the import adopts fires in
// ql3 at the instants QingLong's own scheduler computes (the next 20,
// recorded by running its cron-parser), in the fixture's zone and in a
// zone with daylight saving time across a transition; every expression
// QingLong refuses, the import refuses too.
func TestFireTimesMatchQingLong(t *testing.T) {
	files, _ := filepath.Glob("testdata/fires-*.json")
	if len(files) < 2 {
		t.Fatalf("golden fire times missing: %v", files)
	}
	for _, file := range files {
		var ff firesFile
		b, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(b, &ff); err != nil {
			t.Fatal(err)
		}
		loc, err := time.LoadLocation(ff.Zone)
		if err != nil {
			t.Fatal(err)
		}
		compared := 0
		for expr, want := range ff.Fires {
			if !acceptedSchedule(t, expr, ff.Zone) {
				continue // manual or malformed: no trigger is created
			}
			s, err := cron.Parse(expr, loc)
			if err != nil {
				t.Fatalf("%s: %q accepted by the plan, refused by cron: %v", ff.Zone, expr, err)
			}
			at := ff.Start
			var got []string
			for range want {
				if at, err = s.Next(at); err != nil {
					t.Fatal(err)
				}
				got = append(got, at.UTC().Format("2006-01-02T15:04:05.000Z"))
			}
			for i := range want {
				if got[i] == want[i] {
					continue
				}
				// The one documented difference (ADR 0056): on the day a
				// daylight-saving change happens, and only in a zone the
				// plan warns about.
				w, _ := time.Parse(time.RFC3339, want[i])
				if !transitionDay(w.In(loc)) || !hasDSTNote(t, ff.Zone) {
					t.Errorf("%s %q fire %d: ql3 %s, QingLong %s\n ql3      %v\n QingLong %v", ff.Zone, expr, i, got[i], want[i], got, want)
				}
			}
			compared++
		}
		for expr := range ff.Refused {
			if acceptedSchedule(t, expr, ff.Zone) {
				t.Errorf("%s: %q is refused by QingLong's cron-parser but adopted by the import", ff.Zone, expr)
			}
		}
		if compared < 30 {
			t.Errorf("%s: only %d expressions compared", file, compared)
		}
	}
}

// transitionDay reports whether the local day of t has a UTC offset
// change.
func transitionDay(t time.Time) bool {
	y, m, d := t.Date()
	start := time.Date(y, m, d, 0, 0, 0, 0, t.Location())
	_, off1 := start.Zone()
	_, off2 := start.Add(26 * time.Hour).Truncate(time.Hour).Zone()
	_, off3 := time.Date(y, m, d, 23, 59, 0, 0, t.Location()).Zone()
	return off1 != off2 || off1 != off3
}

func hasDSTNote(t *testing.T, zone string) bool {
	p, err := Inspect(Source{}, zone)
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range p.Notes {
		if strings.Contains(n, "daylight saving") {
			return true
		}
	}
	return false
}

func TestNoDSTNoteWithoutDST(t *testing.T) {
	for _, z := range []string{"Asia/Shanghai", "UTC"} {
		if hasDSTNote(t, z) {
			t.Errorf("%s has no daylight saving time but the plan warns", z)
		}
	}
}
