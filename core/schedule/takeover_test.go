package schedule

import (
	"testing"
	"time"

	"github.com/ql3/ql3/core/cron"
	"github.com/ql3/ql3/core/errs"
)

// TestDecideTakeover pins ADR 0002 rule 5: when the decision is a takeover
// of a claim that died (State.SeenDueAtMs), lateness is measured at the
// dead claim's observation, the cursor still moves past now, and the fired
// occurrence is still the cursor (same idempotency key on every replica).
func TestDecideTakeover(t *testing.T) {
	everySecond := mustCron(t, "* * * * * *", time.UTC)
	daily := mustCron(t, "0 2 * * *", time.UTC)
	T := ms("2026-06-01T02:00:00Z")
	const lease, grace = 30_000, 30_000
	trig := func(c string, policy MisfirePolicy) Trigger {
		tr := Trigger{ID: "trg-1", Revision: 2, Misfire: policy, GraceMs: grace, ActivatedAtMs: T - 86_400_000}
		if c == "daily" {
			tr.Cron = daily
		} else {
			tr.Cron = everySecond
		}
		return tr
	}
	state := func(cursor, seen int64) State {
		return State{TriggerRevision: 2, Initialized: true, NextFireAtMs: cursor, SeenDueAtMs: seen}
	}
	cases := []struct {
		name  string
		trig  Trigger
		state State
		now   int64
		want  Decision
	}{
		{"daily, claimed 5 ms late, taken over 1 ms after a 30 s lease: fires (skip)", trig("daily", MisfireSkip),
			state(T, T+5), T + 5 + lease + 1,
			Decision{Kind: Fire, ScheduledForMs: T, NextFireAtMs: T + 86_400_000, LateMs: 5 + lease + 1, ChargedLateMs: 5}},
		{"the same without the dead claim is a misfire (today's behaviour)", trig("daily", MisfireSkip),
			state(T, 0), T + 5 + lease + 1,
			Decision{Kind: Skip, ScheduledForMs: T, NextFireAtMs: T + 86_400_000, LateMs: 5 + lease + 1, ChargedLateMs: 5 + lease + 1, Missed: 1}},
		{"daily, fire_once: the cursor fires, charged or not", trig("daily", MisfireFireOnce),
			state(T, T+5), T + 5 + lease + 1,
			Decision{Kind: Fire, ScheduledForMs: T, NextFireAtMs: T + 86_400_000, LateMs: 5 + lease + 1, ChargedLateMs: 5}},
		{"every second: the cursor fires, occurrences after it are missed, not replayed", trig("second", MisfireSkip),
			state(T, T+200), T + 40_500,
			Decision{Kind: Fire, ScheduledForMs: T, NextFireAtMs: T + 41_000, LateMs: 40_500, ChargedLateMs: 200, Missed: 40}},
		{"every second, fire_once: same decision", trig("second", MisfireFireOnce),
			state(T, T+200), T + 40_500,
			Decision{Kind: Fire, ScheduledForMs: T, NextFireAtMs: T + 41_000, LateMs: 40_500, ChargedLateMs: 200, Missed: 40}},
		{"a dead claim that was itself late beyond the grace still misfires", trig("daily", MisfireSkip),
			state(T, T+grace+1), T + grace + 1 + lease,
			Decision{Kind: Skip, ScheduledForMs: T, NextFireAtMs: T + 86_400_000, LateMs: grace + 1 + lease, ChargedLateMs: grace + 1, Missed: 1}},
		{"a dead claim exactly at the grace fires", trig("daily", MisfireSkip),
			state(T, T+grace), T + grace + lease,
			Decision{Kind: Fire, ScheduledForMs: T, NextFireAtMs: T + 86_400_000, LateMs: grace + lease, ChargedLateMs: grace}},
		{"seen before the cursor excuses nothing", trig("daily", MisfireSkip),
			state(T, T-1), T + grace + 1,
			Decision{Kind: Skip, ScheduledForMs: T, NextFireAtMs: T + 86_400_000, LateMs: grace + 1, ChargedLateMs: grace + 1, Missed: 1}},
		{"seen at or after now excuses nothing", trig("daily", MisfireSkip),
			state(T, T+grace+1), T + grace + 1,
			Decision{Kind: Skip, ScheduledForMs: T, NextFireAtMs: T + 86_400_000, LateMs: grace + 1, ChargedLateMs: grace + 1, Missed: 1}},
		{"seen on the cursor itself: nothing charged", trig("daily", MisfireSkip),
			state(T, T), T + 10*lease,
			Decision{Kind: Fire, ScheduledForMs: T, NextFireAtMs: T + 86_400_000, LateMs: 10 * lease, ChargedLateMs: 0}},
		{"not due: wait, whatever was seen", trig("daily", MisfireSkip),
			state(T, T-5), T - 1, Decision{Kind: Wait, NextFireAtMs: T}},
		{"uninitialised: init from now, never from the dead claim", trig("daily", MisfireSkip),
			State{TriggerRevision: 2, SeenDueAtMs: T - 86_400_000}, T + 1,
			Decision{Kind: Init, NextFireAtMs: T + 86_400_000}},
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
	_, err := Decide(trig("daily", MisfireSkip), state(T, -1), T)
	if errs.Code(err) != errs.Invalid || errs.Field(err) != "seenDueAtMs" {
		t.Fatalf("negative SeenDueAtMs: %v, want invalid seenDueAtMs", err)
	}
}

// FuzzDecide checks Decide's invariants over arbitrary states, times and
// dead-claim observations: the cursor always moves past now (no backlog
// replay), only the cursor ever fires (fire_once = the cursor, so one key),
// the misfire test is the charged lateness against the grace, and a
// takeover is never decided more harshly than the same state without one.
func FuzzDecide(f *testing.F) {
	T := ms("2026-06-01T02:00:00Z")
	f.Add("* * * * * *", true, int64(30_000), T, T+5, T+40_000)
	f.Add("0 2 * * *", false, int64(0), T, int64(0), T+1)
	f.Add("*/5 * * * *", true, int64(300_000), T, T-1, T+900_000)
	f.Add("0 0 29 2 *", false, int64(1), T, T, T)
	f.Fuzz(func(t *testing.T, expr string, skip bool, grace, cursor, seen, now int64) {
		if len(expr) > 64 || grace < 0 || grace > MaxGraceMs || cursor < 0 || seen < 0 || now < 0 ||
			cursor > 1<<46 || now > 1<<46 || seen > 1<<46 {
			return
		}
		sched, err := cron.Parse(expr, time.UTC)
		if err != nil {
			return
		}
		policy := MisfireFireOnce
		if skip {
			policy = MisfireSkip
		}
		tr := Trigger{ID: "t", Revision: 1, Cron: sched, Misfire: policy, GraceMs: grace}
		s := State{TriggerRevision: 1, Initialized: true, NextFireAtMs: cursor, SeenDueAtMs: seen}
		d, err := Decide(tr, s, now)
		if err != nil {
			return // a schedule that never fires again
		}
		plain, perr := Decide(tr, State{TriggerRevision: 1, Initialized: true, NextFireAtMs: cursor}, now)
		if perr != nil {
			t.Fatalf("Decide failed only without the dead claim: %v", perr)
		}
		switch d.Kind {
		case Wait:
			if now >= cursor || d.NextFireAtMs != cursor || plain != d {
				t.Fatalf("wait at %d with cursor %d: %+v (plain %+v)", now, cursor, d, plain)
			}
			return
		case Fire, Skip:
		default:
			t.Fatalf("initialised state decided %v", d.Kind)
		}
		if d.ScheduledForMs != cursor || d.NextFireAtMs <= now || d.LateMs != now-cursor {
			t.Fatalf("decision %+v for cursor %d at %d", d, cursor, now)
		}
		if d.ChargedLateMs < 0 || d.ChargedLateMs > d.LateMs {
			t.Fatalf("charged %d of %d late", d.ChargedLateMs, d.LateMs)
		}
		if want := d.ChargedLateMs > grace && skip; (d.Kind == Skip) != want {
			t.Fatalf("%v with charged lateness %d, grace %d, policy %s", d.Kind, d.ChargedLateMs, grace, policy)
		}
		// Only the misfire verdict may differ, and only towards firing.
		same := d
		same.ChargedLateMs = plain.ChargedLateMs
		switch {
		case d.Kind == plain.Kind && same != plain:
			t.Fatalf("takeover changed more than the charge: %+v vs %+v", d, plain)
		case d.Kind != plain.Kind && (d.Kind != Fire || plain.Kind != Skip || d.Missed != plain.Missed-1):
			t.Fatalf("takeover decided %v where the plain state decided %v: %+v vs %+v", d.Kind, plain.Kind, d, plain)
		}
	})
}
