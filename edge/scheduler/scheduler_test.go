package scheduler

import (
	"context"
	"database/sql"
	"log/slog"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/ql3/ql3/core/run"
	"github.com/ql3/ql3/core/schedule"
	"github.com/ql3/ql3/core/spec"
	"github.com/ql3/ql3/edge"
	"github.com/ql3/ql3/edge/sqlite"
	"github.com/ql3/ql3/worker/clock"
)

// t0 is minute-aligned so every-second and every-minute triggers line up.
var t0 = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

func openStore(t testing.TB, path string, clk clock.Clock) *sqlite.Store {
	t.Helper()
	s, err := sqlite.Open(context.Background(), path, sqlite.Options{Clock: clk})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func allowSpec() spec.Command {
	c := spec.Command{Kind: spec.KindCommandV1, Shell: &spec.Shell{Command: "true"}}.WithDefaults()
	c.Concurrency = spec.ConcurrencyAllow
	return c
}

func addTrigger(t testing.TB, s *sqlite.Store, name string, in edge.TriggerInput) edge.Trigger {
	t.Helper()
	ctx := context.Background()
	task, err := s.CreateTask(ctx, edge.NewTask{Name: name, Spec: allowSpec(), Enabled: true})
	if err != nil {
		t.Fatal(err)
	}
	in.Enabled = true
	tr, err := s.CreateTrigger(ctx, task.ID, in)
	if err != nil {
		t.Fatal(err)
	}
	return tr
}

func newScheduler(t testing.TB, s *sqlite.Store, clk clock.Clock, onSleep func(time.Time)) *Scheduler {
	t.Helper()
	sc, err := New(Config{Store: s, Clock: clk, Changes: s.SchedulesChanged(), OnSleep: onSleep, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	return sc
}

func round(t testing.TB, sc *Scheduler) Round {
	t.Helper()
	r, err := sc.RunRound(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func allRuns(t testing.TB, s *sqlite.Store) []edge.Run {
	t.Helper()
	var out []edge.Run
	cur := ""
	for {
		page, err := s.ListRuns(context.Background(), edge.RunFilter{Limit: edge.MaxPageSize, Cursor: cur})
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, page.Runs...)
		if page.NextCursor == "" {
			return out
		}
		cur = page.NextCursor
	}
}

// loop runs the scheduler loop in the background; wait blocks until the
// loop sleeps until want (it may sleep shorter first, e.g. after a wake).
type loop struct {
	sleeps chan time.Time
	cancel context.CancelFunc
	done   chan error
}

func startLoop(t *testing.T, s *sqlite.Store, clk clock.Clock) (*Scheduler, *loop) {
	l := &loop{sleeps: make(chan time.Time, 1024), done: make(chan error, 1)}
	sc := newScheduler(t, s, clk, func(until time.Time) { l.sleeps <- until })
	ctx, cancel := context.WithCancel(context.Background())
	l.cancel = cancel
	go func() { l.done <- sc.Run(ctx) }()
	t.Cleanup(l.stop)
	return sc, l
}

func (l *loop) stop() {
	if l.cancel != nil {
		l.cancel()
		<-l.done
		l.cancel = nil
	}
}

func (l *loop) waitSleep(t *testing.T, want time.Time) {
	t.Helper()
	guard := time.After(20 * time.Second) // hang guard only; no timing is asserted
	for {
		select {
		case got := <-l.sleeps:
			if got.Equal(want) {
				return
			}
			if got.After(want) {
				t.Fatalf("loop sleeps until %s, want %s", got.Format(time.StampMilli), want.Format(time.StampMilli))
			}
		case <-guard:
			t.Fatalf("loop never slept until %s", want.Format(time.StampMilli))
		}
	}
}

func TestEverySecondFor120Seconds(t *testing.T) {
	clk := clock.NewFake(t0)
	s := openStore(t, filepath.Join(t.TempDir(), "edge.db"), clk)
	tr := addTrigger(t, s, "tick", edge.TriggerInput{Expression: "* * * * * *"})
	<-s.SchedulesChanged() // consumed here: every sleep of the loop below follows a round that did work
	sc, l := startLoop(t, s, clk)

	l.waitSleep(t, t0.Add(time.Second)) // initialised, sleeping exactly until the first occurrence
	for i := 1; i <= 120; i++ {
		clk.Advance(time.Second)
		l.waitSleep(t, t0.Add(time.Duration(i+1)*time.Second))
	}
	l.stop()

	runs := allRuns(t, s)
	if len(runs) != 120 {
		t.Fatalf("%d runs, want 120", len(runs))
	}
	seen := map[int64]bool{}
	for _, r := range runs {
		if r.TriggerID != tr.ID || r.Status != run.RunQueued || r.Origin != edge.OriginSchedule {
			t.Fatalf("run %+v", r)
		}
		if r.IdempotencyKey != schedule.IdempotencyKey(tr.ID, 1, r.ScheduledForMs) {
			t.Fatalf("key %q", r.IdempotencyKey)
		}
		seen[r.ScheduledForMs] = true
	}
	for i := 1; i <= 120; i++ {
		if !seen[t0.Add(time.Duration(i)*time.Second).UnixMilli()] {
			t.Fatalf("no run for second %d", i)
		}
	}
	if st := sc.Stats(); st.Admitted != 120 || st.Missed != 0 || st.MaxLateMs != 0 || st.Inits != 1 {
		t.Fatalf("stats %+v", st)
	}
}

func TestMisfireAcrossDowntime(t *testing.T) {
	cases := []struct {
		policy     schedule.MisfirePolicy
		wantRuns   int
		wantMissed int64
	}{
		{schedule.MisfireSkip, 0, 10},    // 12:01..12:10 never run
		{schedule.MisfireFireOnce, 1, 9}, // 12:01 runs late; 12:02..12:10 never run
	}
	for _, tc := range cases {
		t.Run(string(tc.policy), func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "edge.db")
			clk := clock.NewFake(t0)
			s := openStore(t, path, clk)
			tr := addTrigger(t, s, "minutely", edge.TriggerInput{Expression: "* * * * *", Misfire: tc.policy})
			round(t, newScheduler(t, s, clk, nil)) // initialise: cursor 12:01
			s.Close()

			clk.Advance(10*time.Minute + 30*time.Second) // down until 12:10:30
			s = openStore(t, path, clk)
			sc := newScheduler(t, s, clk, nil)
			round(t, sc)
			runs := allRuns(t, s)
			if len(runs) != tc.wantRuns {
				t.Fatalf("%d runs after the downtime, want %d", len(runs), tc.wantRuns)
			}
			if tc.wantRuns == 1 && runs[0].ScheduledForMs != t0.Add(time.Minute).UnixMilli() {
				t.Fatalf("fire_once ran %s, want the oldest missed occurrence 12:01",
					time.UnixMilli(runs[0].ScheduledForMs).UTC().Format(time.TimeOnly))
			}
			got, err := s.GetTrigger(context.Background(), tr.ID)
			if err != nil {
				t.Fatal(err)
			}
			if got.Schedule.NextFireAtMs != t0.Add(11*time.Minute).UnixMilli() || got.Schedule.MissedTotal != tc.wantMissed {
				t.Fatalf("schedule %+v", got.Schedule)
			}
			clk.Set(t0.Add(11 * time.Minute))
			round(t, sc)
			if runs := allRuns(t, s); len(runs) != tc.wantRuns+1 || runs[0].ScheduledForMs != t0.Add(11*time.Minute).UnixMilli() {
				t.Fatalf("after recovery: %d runs, newest %d", len(runs), runs[0].ScheduledForMs)
			}
		})
	}
}

func TestPublishResetsWithoutRetroactiveFire(t *testing.T) {
	ctx := context.Background()
	clk := clock.NewFake(t0)
	s := openStore(t, filepath.Join(t.TempDir(), "edge.db"), clk)
	tr := addTrigger(t, s, "tick", edge.TriggerInput{Expression: "* * * * * *", Misfire: schedule.MisfireFireOnce})
	sc := newScheduler(t, s, clk, nil)
	round(t, sc)
	for i := 0; i < 5; i++ {
		clk.Advance(time.Second)
		round(t, sc)
	}
	clk.Advance(500 * time.Millisecond) // 12:00:05.5
	tr2, err := s.UpdateTrigger(ctx, tr.ID, tr.Revision, edge.TriggerInput{Expression: "*/10 * * * * *", Misfire: schedule.MisfireFireOnce, Enabled: true})
	if err != nil {
		t.Fatal(err)
	}
	clk.Set(t0.Add(8 * time.Second)) // the old cursor (12:00:06) is 2 s overdue
	round(t, sc)
	runs := allRuns(t, s)
	if len(runs) != 5 {
		t.Fatalf("%d runs after the publish, want the 5 from before", len(runs))
	}
	for _, r := range runs {
		if r.TriggerRevision != 1 || r.ScheduledForMs > t0.Add(5*time.Second).UnixMilli() {
			t.Fatalf("retroactive or stale run %+v", r)
		}
	}
	got, _ := s.GetTrigger(ctx, tr.ID)
	if got.Schedule.TriggerRevision != tr2.Revision || got.Schedule.NextFireAtMs != t0.Add(10*time.Second).UnixMilli() {
		t.Fatalf("schedule after publish %+v", got.Schedule)
	}
	clk.Set(t0.Add(10 * time.Second))
	round(t, sc)
	runs = allRuns(t, s)
	if len(runs) != 6 || runs[0].TriggerRevision != 2 || runs[0].ScheduledForMs != t0.Add(10*time.Second).UnixMilli() {
		t.Fatalf("first run of revision 2: %+v", runs[0])
	}
}

func TestLoopWakesOnPublishAndWake(t *testing.T) {
	clk := clock.NewFake(t0)
	s := openStore(t, filepath.Join(t.TempDir(), "edge.db"), clk)
	addTrigger(t, s, "hourly", edge.TriggerInput{Expression: "@hourly"})
	<-s.SchedulesChanged() // consumed here, so the loop's first sleep is its only one
	sc, l := startLoop(t, s, clk)
	l.waitSleep(t, t0.Add(DefaultMaxSleep)) // the hour is further away than the cap

	addTrigger(t, s, "tick", edge.TriggerInput{Expression: "* * * * * *"})
	l.waitSleep(t, t0.Add(time.Second)) // woken by the publish, not by the timer

	sc.Wake()
	l.waitSleep(t, t0.Add(time.Second))
	if runs := allRuns(t, s); len(runs) != 0 {
		t.Fatalf("wake-ups admitted %d runs", len(runs))
	}
}

func TestTwoSchedulersNeverDuplicate(t *testing.T) {
	path := filepath.Join(t.TempDir(), "edge.db")
	clk := clock.NewFake(t0)
	s1 := openStore(t, path, clk)
	s2 := openStore(t, path, clk)
	for _, name := range []string{"a", "b", "c", "d"} {
		addTrigger(t, s1, name, edge.TriggerInput{Expression: "* * * * * *"})
	}
	scs := []*Scheduler{newScheduler(t, s1, clk, nil), newScheduler(t, s2, clk, nil)}
	const steps = 60
	for i := 0; i <= steps; i++ {
		var wg sync.WaitGroup
		for _, sc := range scs {
			wg.Add(1)
			go func() {
				defer wg.Done()
				if _, err := sc.RunRound(context.Background()); err != nil {
					t.Error(err)
				}
			}()
		}
		wg.Wait()
		clk.Advance(time.Second)
	}
	runs := allRuns(t, s2)
	keys := map[string]bool{}
	for _, r := range runs {
		if keys[r.IdempotencyKey] {
			t.Fatalf("duplicate run for %s", r.IdempotencyKey)
		}
		keys[r.IdempotencyKey] = true
	}
	admitted := scs[0].Stats().Admitted + scs[1].Stats().Admitted
	if len(runs) != 4*steps || admitted != 4*steps {
		t.Fatalf("%d runs, %d admissions, want %d", len(runs), admitted, 4*steps)
	}
	t.Logf("conflicts: %d + %d", scs[0].Stats().Conflicts, scs[1].Stats().Conflicts)
}

func TestUndecidableScheduleIsParked(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "edge.db")
	clk := clock.NewFake(t0)
	s := openStore(t, path, clk)
	tr := addTrigger(t, s, "broken", edge.TriggerInput{Expression: "* * * * *"})
	// Simulate a zone that disappeared from tzdata after an upgrade: only
	// a raw write can store one.
	raw, err := sql.Open("sqlite", "file:"+path+"?_pragma=busy_timeout(5000)")
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	for _, q := range []string{
		`INSERT INTO trigger_revisions (trigger_id, revision, expression, time_zone, misfire_policy, grace_ms, enabled, created_at_ms)
         VALUES (?, 2, '* * * * *', 'Gone/Zone', 'skip', 30000, 1, 0)`,
		`UPDATE triggers SET current_revision = 2 WHERE id = ?`,
		`UPDATE trigger_schedules SET trigger_revision = 2 WHERE trigger_id = ?`,
	} {
		if _, err := raw.Exec(q, tr.ID); err != nil {
			t.Fatal(err)
		}
	}
	sc := newScheduler(t, s, clk, nil)
	round(t, sc)
	if st := sc.Stats(); st.Parked != 1 {
		t.Fatalf("stats %+v", st)
	}
	got, _ := s.GetTrigger(ctx, tr.ID)
	if got.Schedule.LastError == "" {
		t.Fatal("parked schedule has no reason")
	}
	if r := round(t, sc); r.Read != 0 {
		t.Fatalf("parked schedule read again: %+v", r)
	}
	// A new publish re-activates it.
	if _, err := s.UpdateTrigger(ctx, tr.ID, 2, edge.TriggerInput{Expression: "* * * * *", Enabled: true}); err != nil {
		t.Fatal(err)
	}
	if r := round(t, sc); r.Read != 1 {
		t.Fatalf("republished schedule not read: %+v", r)
	}
}

func TestNewRejectsBadConfig(t *testing.T) {
	clk := clock.NewFake(t0)
	s := openStore(t, filepath.Join(t.TempDir(), "edge.db"), clk)
	for name, cfg := range map[string]Config{
		"no store":  {Clock: clk},
		"no clock":  {Store: s},
		"big batch": {Store: s, Clock: clk, BatchSize: MaxBatchSize + 1},
		"neg sleep": {Store: s, Clock: clk, MaxSleep: -time.Second},
	} {
		if _, err := New(cfg); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}
