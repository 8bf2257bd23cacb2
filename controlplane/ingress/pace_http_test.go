package ingress_test

import (
	"context"
	"crypto/rand"
	"net/http"
	"strconv"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/ql3/ql3/controlplane"
	"github.com/ql3/ql3/controlplane/postgres/pullpace"
	"github.com/ql3/ql3/core/fence"
	"github.com/ql3/ql3/core/protocol"
	"github.com/ql3/ql3/core/schedule"
	"github.com/ql3/ql3/core/spec"
)

// TestEmptyPullIsPacedToTheNextOccurrence: with the real dispatcher and
// pacer on PostgreSQL, an empty pull's Ql3-Retry-After-Ms is the time until
// the published trigger's cursor (plus the margin), the floor while an
// occurrence is being admitted, and the idle pause when nothing is due
// within it, the trigger is disabled, or its cursor is stuck in the past;
// Retry-After is always the same pause in whole seconds, rounded up. The
// pacer's clock is the env's manual clock, which never moves here, so
// every answer is exactly PauseMs of the forecast the pacer holds.
func TestEmptyPullIsPacedToTheNextOccurrence(t *testing.T) {
	t.Parallel()
	const idle = 60 * time.Second
	e := newEnv(t, envOptions{dispatch: true, pace: true, idleRetry: idle})
	w := e.worker("paced")
	c := e.client(w.cert)
	st := e.open(c, w)
	cursor := e.pacedTrigger()
	pull := func() (ms, secs int64) {
		t.Helper()
		token, err := fence.NewLeaseToken(rand.Reader)
		if err != nil {
			t.Fatal(err)
		}
		body := encodeOrFatal(t, protocol.OfferPullRequest{SessionID: st.SessionID, Generation: st.Generation,
			OfferID: uuid.New().String(), LeaseToken: token})
		r, _, err := e.post(c, protocol.PathOfferPull, w.cred, body)
		if err != nil || r.status != http.StatusNoContent {
			t.Fatalf("empty pull: %d %s %v", r.status, r.body, err)
		}
		ms, err = strconv.ParseInt(r.header.Get(protocol.HeaderRetryAfterMs), 10, 64)
		if err != nil {
			t.Fatalf("%s: %v", protocol.HeaderRetryAfterMs, err)
		}
		secs, err = strconv.ParseInt(r.header.Get(protocol.HeaderRetryAfter), 10, 64)
		if err != nil {
			t.Fatalf("%s: %v", protocol.HeaderRetryAfter, err)
		}
		if secs != protocol.RetryAfterSeconds(ms) {
			t.Errorf("Retry-After %d s does not carry the pause %d ms", secs, ms)
		}
		return ms, secs
	}
	pacing := protocol.PullPacing{IdleMs: idle.Milliseconds(), MarginMs: pullpace.DefaultPullMargin.Milliseconds(),
		FloorMs: pullpace.DefaultPullFloor.Milliseconds()}

	// Before the first forecast: the idle pause.
	if ms, _ := pull(); ms != idle.Milliseconds() {
		t.Errorf("unforecast pull paused %d ms, want the idle %d", ms, idle.Milliseconds())
	}

	// Due in 30 s (within the 60 s idle pause): the pull is paced to it.
	cursor(30_000, true)
	f := e.pacer.Forecast()
	if !f.Known || f.DueInMs <= 0 || f.DueInMs > 30_000 {
		t.Fatalf("forecast %+v, want the cursor within 30 s", f)
	}
	if ms, secs := pull(); ms != pacing.PauseMs(f) || ms > 30_000+pacing.MarginMs || secs > 31 {
		t.Errorf("paced pull: %d ms (%d s), want %d (the cursor + margin)", ms, secs, pacing.PauseMs(f))
	}

	// Due 300 ms ago and not admitted yet: come back after the floor.
	cursor(-300, true)
	if ms, secs := pull(); ms != pacing.FloorMs || secs != 1 {
		t.Errorf("pull during admission: %d ms (%d s), want the floor %d ms (1 s)", ms, secs, pacing.FloorMs)
	}

	// Stuck 5 s in the past (beyond the due grace): not "being admitted".
	cursor(-5_000, true)
	if ms, _ := pull(); ms != idle.Milliseconds() {
		t.Errorf("pull with a stuck cursor: %d ms, want the idle %d", ms, idle.Milliseconds())
	}

	// Due after the idle pause, or inactive: the idle pause.
	cursor(90_000, true)
	if ms, _ := pull(); ms != idle.Milliseconds() {
		t.Errorf("pull with the cursor beyond the idle pause: %d ms, want %d", ms, idle.Milliseconds())
	}
	cursor(10_000, false)
	if ms, _ := pull(); ms != idle.Milliseconds() {
		t.Errorf("pull with only an inactive schedule: %d ms, want %d", ms, idle.Milliseconds())
	}

	// The manual clock moving past the forecast instant: the pull is told
	// the floor (the occurrence is being admitted) until the next read.
	cursor(2_000, true)
	e.clock.advance(2500 * time.Millisecond)
	if ms, _ := pull(); ms != pacing.FloorMs {
		t.Errorf("pull just after the forecast instant: %d ms, want the floor %d", ms, pacing.FloorMs)
	}
}

// pacedTrigger publishes an every-5-seconds trigger and returns a setter
// of its cursor: the coordinator's part (initialising and advancing it) is
// played by the superuser, the cursor landing inMs from database now, and
// the pacer re-reads it.
func (e *env) pacedTrigger() func(inMs int64, active bool) {
	t := e.t
	t.Helper()
	ctx := context.Background()
	su := e.db.Conn(t)
	project, err := e.pub.PublishProject(ctx, controlplane.ProjectInput{Name: "paced"})
	if err != nil {
		t.Fatal(err)
	}
	task, err := e.pub.PublishTask(ctx, controlplane.TaskInput{ProjectID: project.ID, Name: "tick",
		Spec: spec.Command{Kind: spec.KindCommandV1, Argv: &spec.Argv{File: "/bin/true"}}.WithDefaults()})
	if err != nil {
		t.Fatal(err)
	}
	tr, err := e.pub.PublishTrigger(ctx, controlplane.TriggerInput{TaskID: task.ID, Expression: "*/5 * * * * *",
		TimeZone: "UTC", Misfire: schedule.MisfireSkip})
	if err != nil {
		t.Fatal(err)
	}
	return func(inMs int64, active bool) {
		t.Helper()
		if _, err := su.Exec(ctx, `UPDATE ql3.trigger_schedules
			SET next_fire_at_ms = (extract(epoch FROM clock_timestamp()) * 1000)::bigint + $2::bigint, active = $3::boolean
			WHERE trigger_id = $1::uuid`, tr.ID, inMs, active); err != nil {
			t.Fatal(err)
		}
		if err := e.pacer.Refresh(ctx); err != nil {
			t.Fatal(err)
		}
	}
}
