package schedule

import (
	"strings"
	"testing"
	"time"
	_ "time/tzdata" // tests run on machines without /usr/share/zoneinfo too

	"github.com/ql3/ql3/core/cron"
	"github.com/ql3/ql3/core/errs"
)

func mustCron(t testing.TB, expr string, loc *time.Location) *cron.Schedule {
	t.Helper()
	s, err := cron.Parse(expr, loc)
	if err != nil {
		t.Fatalf("cron.Parse(%q): %v", expr, err)
	}
	return s
}

func loadZone(t testing.TB, name string) *time.Location {
	t.Helper()
	loc, err := time.LoadLocation(name)
	if err != nil {
		t.Fatalf("load zone %s: %v", name, err)
	}
	return loc
}

func ms(rfc3339 string) int64 {
	at, err := time.Parse(time.RFC3339Nano, rfc3339)
	if err != nil {
		panic(err)
	}
	return at.UnixMilli()
}

func TestTriggerValidate(t *testing.T) {
	every := mustCron(t, "* * * * *", time.UTC)
	ok := Trigger{ID: "7d0c5a1e-2f6b-4a57-9a3e-0c2b6b1f0e11", Revision: 3, Cron: every, Misfire: MisfireSkip, GraceMs: DefaultEdgeGraceMs}
	cases := []struct {
		name  string
		edit  func(*Trigger)
		field string
	}{
		{"valid", func(*Trigger) {}, ""},
		{"max grace", func(t *Trigger) { t.GraceMs = MaxGraceMs }, ""},
		{"zero grace", func(t *Trigger) { t.GraceMs = 0 }, ""},
		{"fire_once", func(t *Trigger) { t.Misfire = MisfireFireOnce }, ""},
		{"revision zero", func(t *Trigger) { t.Revision = 0 }, ""},
		{"empty id", func(t *Trigger) { t.ID = "" }, "id"},
		{"colon in id", func(t *Trigger) { t.ID = "a:b" }, "id"},
		{"space in id", func(t *Trigger) { t.ID = "a b" }, "id"},
		{"long id", func(t *Trigger) { t.ID = strings.Repeat("a", MaxTriggerIDBytes+1) }, "id"},
		{"negative revision", func(t *Trigger) { t.Revision = -1 }, "revision"},
		{"nil cron", func(t *Trigger) { t.Cron = nil }, "expression"},
		{"empty policy", func(t *Trigger) { t.Misfire = "" }, "misfirePolicy"},
		{"unknown policy", func(t *Trigger) { t.Misfire = "fire_all" }, "misfirePolicy"},
		{"negative grace", func(t *Trigger) { t.GraceMs = -1 }, "misfireGraceMs"},
		{"grace over limit", func(t *Trigger) { t.GraceMs = MaxGraceMs + 1 }, "misfireGraceMs"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			tr := ok
			c.edit(&tr)
			err := tr.Validate()
			if c.field == "" {
				if err != nil {
					t.Fatalf("Validate: %v", err)
				}
				return
			}
			if errs.Code(err) != errs.Invalid || errs.Field(err) != c.field {
				t.Fatalf("Validate: %v (field %q), want invalid %s", err, errs.Field(err), c.field)
			}
			if _, derr := Decide(tr, State{}, 0); errs.Field(derr) != c.field {
				t.Fatalf("Decide did not validate: %v", derr)
			}
		})
	}
}

func TestDecide(t *testing.T) {
	every := mustCron(t, "* * * * *", time.UTC)
	T := ms("2026-06-01T12:00:00Z")
	const minute = 60_000
	trig := func(policy MisfirePolicy, grace int64) Trigger {
		return Trigger{ID: "trg-1", Revision: 2, Cron: every, Misfire: policy, GraceMs: grace, ActivatedAtMs: T - 3600_000}
	}
	cursor := func(at int64) State {
		return State{TriggerRevision: 2, Initialized: true, NextFireAtMs: at, LastScheduledAtMs: at - minute}
	}
	cases := []struct {
		name  string
		trig  Trigger
		state State
		now   int64
		want  Decision
	}{
		{"init between occurrences", trig(MisfireSkip, 30_000), State{}, T + 10_000,
			Decision{Kind: Init, NextFireAtMs: T + minute}},
		{"init exactly at an occurrence does not fire it", trig(MisfireFireOnce, 30_000), State{}, T,
			Decision{Kind: Init, NextFireAtMs: T + minute}},
		{"init before activation waits for activation", func() Trigger { tr := trig(MisfireSkip, 0); tr.ActivatedAtMs = T + 5*minute; return tr }(),
			State{}, T, Decision{Kind: Init, NextFireAtMs: T + 6*minute}},
		{"new revision re-initialises even when due", trig(MisfireFireOnce, 30_000),
			State{TriggerRevision: 1, Initialized: true, NextFireAtMs: T}, T + 1000,
			Decision{Kind: Init, NextFireAtMs: T + minute}},
		{"uninitialised state of the same revision initialises", trig(MisfireFireOnce, 30_000),
			State{TriggerRevision: 2, NextFireAtMs: T}, T + 1000, Decision{Kind: Init, NextFireAtMs: T + minute}},
		{"cursor at the last fired occurrence is corrupt: re-initialise", trig(MisfireFireOnce, 30_000),
			State{TriggerRevision: 2, Initialized: true, NextFireAtMs: T, LastScheduledAtMs: T}, T + 1000,
			Decision{Kind: Init, NextFireAtMs: T + minute}},
		{"not due", trig(MisfireSkip, 30_000), cursor(T), T - 1, Decision{Kind: Wait, NextFireAtMs: T}},
		{"due on the dot", trig(MisfireSkip, 30_000), cursor(T), T,
			Decision{Kind: Fire, ScheduledForMs: T, NextFireAtMs: T + minute}},
		{"exactly at the grace fires", trig(MisfireSkip, 30_000), cursor(T), T + 30_000,
			Decision{Kind: Fire, ScheduledForMs: T, NextFireAtMs: T + minute, LateMs: 30_000, ChargedLateMs: 30_000}},
		{"grace+1 ms with skip is a misfire", trig(MisfireSkip, 30_000), cursor(T), T + 30_001,
			Decision{Kind: Skip, ScheduledForMs: T, NextFireAtMs: T + minute, LateMs: 30_001, ChargedLateMs: 30_001, Missed: 1}},
		{"grace+1 ms with fire_once fires the cursor", trig(MisfireFireOnce, 30_000), cursor(T), T + 30_001,
			Decision{Kind: Fire, ScheduledForMs: T, NextFireAtMs: T + minute, LateMs: 30_001, ChargedLateMs: 30_001}},
		{"zero grace: 1 ms late is a misfire", trig(MisfireSkip, 0), cursor(T), T + 1,
			Decision{Kind: Skip, ScheduledForMs: T, NextFireAtMs: T + minute, LateMs: 1, ChargedLateMs: 1, Missed: 1}},
		{"within a long grace, occurrences in between are missed, not replayed", trig(MisfireSkip, MaxGraceMs), cursor(T), T + 150_000,
			Decision{Kind: Fire, ScheduledForMs: T, NextFireAtMs: T + 3*minute, LateMs: 150_000, ChargedLateMs: 150_000, Missed: 2}},
		{"late exactly at an occurrence: next is strictly after now", trig(MisfireFireOnce, 30_000), cursor(T), T + 2*minute,
			Decision{Kind: Fire, ScheduledForMs: T, NextFireAtMs: T + 3*minute, LateMs: 2 * minute, ChargedLateMs: 2 * minute, Missed: 2}},
		{"backlog of 100 minutes, fire_once admits exactly the cursor", trig(MisfireFireOnce, 30_000), cursor(T), T + 100*minute + 30_500,
			Decision{Kind: Fire, ScheduledForMs: T, NextFireAtMs: T + 101*minute, LateMs: 100*minute + 30_500, ChargedLateMs: 100*minute + 30_500, Missed: 100}},
		{"backlog of 100 minutes, skip admits none", trig(MisfireSkip, 30_000), cursor(T), T + 100*minute + 30_500,
			Decision{Kind: Skip, ScheduledForMs: T, NextFireAtMs: T + 101*minute, LateMs: 100*minute + 30_500, ChargedLateMs: 100*minute + 30_500, Missed: 101}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := Decide(c.trig, c.state, c.now)
			if err != nil {
				t.Fatal(err)
			}
			if got != c.want {
				t.Fatalf("Decide = %+v\nwant     %+v", got, c.want)
			}
		})
	}
}

// TestBacklogIsNotReplayed applies a late decision and decides again at the
// same instant: nothing more fires, whatever the policy.
func TestBacklogIsNotReplayed(t *testing.T) {
	T := ms("2026-06-01T12:00:00Z")
	for _, policy := range []MisfirePolicy{MisfireSkip, MisfireFireOnce} {
		tr := Trigger{ID: "t", Revision: 1, Cron: mustCron(t, "* * * * *", time.UTC), Misfire: policy, GraceMs: DefaultEdgeGraceMs}
		s := State{TriggerRevision: 1, Initialized: true, NextFireAtMs: T}
		now := T + 100*60_000 + 45_000
		d, err := Decide(tr, s, now)
		if err != nil {
			t.Fatal(err)
		}
		s = apply(s, tr.Revision, d)
		for i := 0; i < 3; i++ {
			again, err := Decide(tr, s, now+int64(i)*1000)
			if err != nil || again.Kind != Wait {
				t.Fatalf("%s: after the late decision, Decide = %+v, %v; want wait", policy, again, err)
			}
		}
	}
}

func TestMissedIsCapped(t *testing.T) {
	T := ms("2026-06-01T00:00:00Z")
	tr := Trigger{ID: "t", Revision: 1, Cron: mustCron(t, "* * * * * *", time.UTC), Misfire: MisfireSkip, GraceMs: DefaultEdgeGraceMs}
	d, err := Decide(tr, State{TriggerRevision: 1, Initialized: true, NextFireAtMs: T}, T+86_400_000)
	if err != nil {
		t.Fatal(err)
	}
	want := Decision{Kind: Skip, ScheduledForMs: T, NextFireAtMs: T + 86_401_000, LateMs: 86_400_000, ChargedLateMs: 86_400_000, Missed: MaxMissedCount + 1, MissedCapped: true}
	if d != want {
		t.Fatalf("Decide = %+v, want %+v", d, want)
	}
	d, err = Decide(tr, State{TriggerRevision: 1, Initialized: true, NextFireAtMs: T}, T+MaxMissedCount*1000)
	if err != nil || d.Missed != MaxMissedCount+1 || d.MissedCapped {
		t.Fatalf("exactly MaxMissedCount between, plus the skipped cursor: %+v, %v", d, err)
	}
}

func TestNeverFiresErrorPropagates(t *testing.T) {
	tr := Trigger{ID: "t", Revision: 1, Cron: mustCron(t, "0 0 29 2 *", time.UTC), Misfire: MisfireFireOnce, GraceMs: 0}
	now := time.Date(9997, 1, 1, 0, 0, 0, 0, time.UTC).UnixMilli()
	if _, err := Decide(tr, State{}, now); errs.Code(err) != errs.Invalid || errs.Field(err) != "expression" {
		t.Fatalf("init: err %v, want invalid expression", err)
	}
	cursor := time.Date(9996, 2, 29, 0, 0, 0, 0, time.UTC).UnixMilli()
	s := State{TriggerRevision: 1, Initialized: true, NextFireAtMs: cursor}
	if _, err := Decide(tr, s, cursor+1); errs.Code(err) != errs.Invalid {
		t.Fatalf("fire: err %v, want invalid", err)
	}
}

// apply is what a scheduler persists after a decision for trigger revision rev.
func apply(s State, rev int64, d Decision) State {
	switch d.Kind {
	case Init:
		return State{TriggerRevision: rev, Initialized: true, NextFireAtMs: d.NextFireAtMs}
	case Fire:
		s.NextFireAtMs, s.LastScheduledAtMs = d.NextFireAtMs, d.ScheduledForMs
	case Skip:
		s.NextFireAtMs = d.NextFireAtMs
	}
	return s
}
