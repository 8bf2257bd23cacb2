package edge

import (
	"strings"
	"testing"
	"time"

	"github.com/ql3/ql3/core/errs"
	"github.com/ql3/ql3/core/schedule"
)

func TestNormalizeTrigger(t *testing.T) {
	cases := []struct {
		name  string
		in    TriggerInput
		want  TriggerInput
		field string // "" = valid
	}{
		{"defaults", TriggerInput{Expression: "*/5 * * * *"},
			TriggerInput{Expression: "*/5 * * * *", TimeZone: "UTC", Misfire: schedule.MisfireSkip, GraceMs: schedule.DefaultEdgeGraceMs}, ""},
		{"six fields and zone", TriggerInput{Expression: "30 0 3 * * *", TimeZone: "Europe/Berlin", Misfire: schedule.MisfireFireOnce, GraceMs: schedule.MaxGraceMs, Enabled: true},
			TriggerInput{Expression: "30 0 3 * * *", TimeZone: "Europe/Berlin", Misfire: schedule.MisfireFireOnce, GraceMs: schedule.MaxGraceMs, Enabled: true}, ""},
		{"descriptor", TriggerInput{Expression: "@hourly", GraceMs: 1},
			TriggerInput{Expression: "@hourly", TimeZone: "UTC", Misfire: schedule.MisfireSkip, GraceMs: 1}, ""},
		{"bad field", TriggerInput{Expression: "* * * * * * *"}, TriggerInput{}, "expression"},
		{"never fires", TriggerInput{Expression: "0 0 31 2 *"}, TriggerInput{}, "expression"},
		{"unknown zone", TriggerInput{Expression: "* * * * *", TimeZone: "Nowhere/City"}, TriggerInput{}, "timeZone"},
		{"local zone", TriggerInput{Expression: "* * * * *", TimeZone: "Local"}, TriggerInput{}, "timeZone"},
		{"long zone", TriggerInput{Expression: "* * * * *", TimeZone: strings.Repeat("a", 65)}, TriggerInput{}, "timeZone"},
		{"misfire", TriggerInput{Expression: "* * * * *", Misfire: "fire_all"}, TriggerInput{}, "misfire"},
		{"grace", TriggerInput{Expression: "* * * * *", GraceMs: schedule.MaxGraceMs + 1}, TriggerInput{}, "graceMs"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := NormalizeTrigger(tc.in)
			if tc.field != "" {
				if err == nil || errs.Field(err) != tc.field || errs.Code(err) == errs.Internal {
					t.Fatalf("err = %v (field %q), want a coded error on %q", err, errs.Field(err), tc.field)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Fatalf("got %+v, %v; want %+v", got, err, tc.want)
			}
		})
	}
}

func TestCompileTrigger(t *testing.T) {
	tr := Trigger{ID: "01890a5d-ac96-774b-bcce-b302099a8057", Revision: 3, Expression: "0 9 * * *",
		TimeZone: "America/New_York", Misfire: schedule.MisfireFireOnce, GraceMs: 1000, UpdatedAtMs: 42}
	st, err := CompileTrigger(tr)
	if err != nil {
		t.Fatal(err)
	}
	if st.ID != tr.ID || st.Revision != 3 || st.ActivatedAtMs != 42 || st.GraceMs != 1000 || st.Misfire != schedule.MisfireFireOnce {
		t.Fatalf("compiled %+v", st)
	}
	after := time.Date(2026, 7, 1, 0, 0, 0, 0, time.UTC)
	next, err := st.Cron.Next(after)
	if err != nil || !next.Equal(time.Date(2026, 7, 1, 13, 0, 0, 0, time.UTC)) { // 09:00 EDT
		t.Fatalf("next %s, %v", next, err)
	}
	state := ScheduleState(Schedule{TriggerRevision: 3, Initialized: true, NextFireAtMs: 7, LastScheduledAtMs: 5})
	if state != (schedule.State{TriggerRevision: 3, Initialized: true, NextFireAtMs: 7, LastScheduledAtMs: 5}) {
		t.Fatalf("state %+v", state)
	}
	tr.TimeZone = "Gone/Zone"
	if _, err := CompileTrigger(tr); errs.Field(err) != "timeZone" {
		t.Fatalf("vanished zone: %v", err)
	}
}

// FuzzNormalizeTrigger: any input either normalizes to a trigger that
// normalizes to itself and compiles, or is refused with a coded error that
// names a field.
func FuzzNormalizeTrigger(f *testing.F) {
	f.Add("* * * * *", "", "", int64(0))
	f.Add("*/10 * * * * *", "Asia/Kolkata", "fire_once", int64(300000))
	f.Add("@daily", "UTC", "skip", int64(1))
	f.Add("0 0 31 2 *", "Local", "x", int64(-1))
	f.Fuzz(func(t *testing.T, expr, zone, misfire string, grace int64) {
		in := TriggerInput{Expression: expr, TimeZone: zone, Misfire: schedule.MisfirePolicy(misfire), GraceMs: grace}
		got, err := NormalizeTrigger(in)
		if err != nil {
			if errs.Code(err) == errs.Internal || errs.Field(err) == "" {
				t.Fatalf("uncoded error %v", err)
			}
			return
		}
		again, err := NormalizeTrigger(got)
		if err != nil || again != got {
			t.Fatalf("not idempotent: %+v → %+v, %v", got, again, err)
		}
		if _, err := CompileTrigger(Trigger{ID: "t", Revision: 1, Expression: got.Expression, TimeZone: got.TimeZone,
			Misfire: got.Misfire, GraceMs: got.GraceMs}); err != nil {
			t.Fatalf("normalized trigger does not compile: %v", err)
		}
	})
}
