package publication_test

import (
	"context"
	"fmt"
	"reflect"
	"sync"
	"testing"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/ql3/ql3/controlplane"
	"github.com/ql3/ql3/controlplane/pgtest"
	"github.com/ql3/ql3/controlplane/postgres"
	"github.com/ql3/ql3/controlplane/postgres/publication"
	"github.com/ql3/ql3/core/errs"
	"github.com/ql3/ql3/core/placement"
	"github.com/ql3/ql3/core/spec"
)

// pubFixture is one test database with an admin publisher, a runtime pool
// and a superuser connection for inspection.
type pubFixture struct {
	pub     *publication.Publisher
	admin   *pgxpool.Pool
	runtime *pgxpool.Pool
	db      *pgtest.DB
}

func newPubFixture(t *testing.T) pubFixture {
	t.Helper()
	db := pgtest.NewDB(t)
	admin := db.Pool(t, postgres.RoleAdmin)
	return pubFixture{pub: publication.NewPublisher(admin, publication.PublisherOptions{}), admin: admin,
		runtime: db.Pool(t, postgres.RoleRuntime), db: db}
}

func shellSpec(script string) spec.Command {
	return spec.Command{Kind: spec.KindCommandV1, Shell: &spec.Shell{Command: script}}.WithDefaults()
}

func ptr[T any](v T) *T { return &v }

func mustProject(t *testing.T, f pubFixture, name string) controlplane.Project {
	t.Helper()
	p, err := f.pub.PublishProject(context.Background(), controlplane.ProjectInput{Name: name})
	if err != nil {
		t.Fatalf("publish project: %v", err)
	}
	return p
}

func mustTask(t *testing.T, f pubFixture, projectID, name string) controlplane.Task {
	t.Helper()
	task, err := f.pub.PublishTask(context.Background(), controlplane.TaskInput{ProjectID: projectID, Name: name, Spec: shellSpec("echo " + name)})
	if err != nil {
		t.Fatalf("publish task: %v", err)
	}
	return task
}

func mustTrigger(t *testing.T, f pubFixture, taskID string) controlplane.Trigger {
	t.Helper()
	tr, err := f.pub.PublishTrigger(context.Background(), controlplane.TriggerInput{TaskID: taskID, Expression: "*/5 * * * *", TimeZone: "Europe/Berlin"})
	if err != nil {
		t.Fatalf("publish trigger: %v", err)
	}
	return tr
}

// claim takes the schedule's claim the way a coordinator does and returns
// the fence it holds.
type fenceHeld struct {
	token               uuid.UUID
	claimVersion, state int64
}

func claim(t *testing.T, f pubFixture, triggerID string) fenceHeld {
	t.Helper()
	fh := fenceHeld{token: uuid.Must(uuid.NewV7())}
	err := f.runtime.QueryRow(context.Background(), `UPDATE ql3.trigger_schedules SET
		claim_owner = 'replica-a', claim_token = $2, claim_version = claim_version + 1,
		claim_expires_at_ms = (extract(epoch FROM clock_timestamp()) * 1000)::bigint + 30000,
		state_version = state_version + 1
		WHERE trigger_id = $1 AND claim_token IS NULL RETURNING claim_version, state_version`,
		triggerID, fh.token).Scan(&fh.claimVersion, &fh.state)
	if err != nil {
		t.Fatalf("claim: %v", err)
	}
	return fh
}

// admitWithFence is the schedule half of an admission guarded by the full
// fence; it returns the rows it changed.
func admitWithFence(t *testing.T, f pubFixture, triggerID string, fh fenceHeld) int64 {
	t.Helper()
	tag, err := f.runtime.Exec(context.Background(), `UPDATE ql3.trigger_schedules SET
		next_fire_at_ms = 4102444800000, last_scheduled_at_ms = 4102444700000,
		claim_owner = NULL, claim_token = NULL, claim_expires_at_ms = NULL, state_version = state_version + 1
		WHERE trigger_id = $1 AND claim_owner = 'replica-a' AND claim_token = $2 AND claim_version = $3 AND state_version = $4`,
		triggerID, fh.token, fh.claimVersion, fh.state)
	if err != nil {
		t.Fatalf("admit: %v", err)
	}
	return tag.RowsAffected()
}

func TestPublishInvalidatesOutstandingClaim(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := newPubFixture(t)
	p := mustProject(t, f, "claims")
	task := mustTask(t, f, p.ID, "backup")
	tr := mustTrigger(t, f, task.ID)

	republish := map[string]func() error{
		"trigger update": func() error {
			cur, err := f.pub.GetTrigger(ctx, tr.ID)
			if err != nil {
				return err
			}
			_, err = f.pub.PublishTrigger(ctx, controlplane.TriggerInput{TriggerID: tr.ID, ExpectedRevision: cur.Revision,
				Expression: "0 3 * * *", TimeZone: "UTC", Misfire: "fire_once"})
			return err
		},
		"task update (re-pins its triggers)": func() error {
			cur, err := f.pub.GetTask(ctx, task.ID)
			if err != nil {
				return err
			}
			_, err = f.pub.PublishTask(ctx, controlplane.TaskInput{TaskID: task.ID, ExpectedRevision: cur.Revision,
				Name: cur.Name, Spec: shellSpec("echo v" + fmt.Sprint(cur.Revision+1))})
			return err
		},
		"task disable": func() error {
			_, err := f.pub.SetTaskEnabled(ctx, controlplane.TaskEnabledInput{TaskID: task.ID, Enabled: false})
			return err
		},
	}
	for _, name := range []string{"trigger update", "task update (re-pins its triggers)", "task disable"} {
		before, err := f.pub.GetTrigger(ctx, tr.ID)
		if err != nil {
			t.Fatal(err)
		}
		fh := claim(t, f, tr.ID)
		if err := republish[name](); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if n := admitWithFence(t, f, tr.ID, fh); n != 0 {
			t.Fatalf("%s: an UPDATE guarded by the old fence changed %d rows, want 0", name, n)
		}
		after, err := f.pub.GetTrigger(ctx, tr.ID)
		if err != nil {
			t.Fatal(err)
		}
		s := after.Schedule
		if s.Claimed || s.ClaimVersion <= fh.claimVersion || s.StateVersion <= fh.state {
			t.Fatalf("%s: schedule after publish = %+v, want claim cleared and versions above %+v", name, s, fh)
		}
		if name != "task disable" {
			if after.Revision != before.Revision+1 || s.TriggerRevision != after.Revision || s.NextFireAtMs != 0 {
				t.Fatalf("%s: trigger rev %d→%d, schedule %+v: want a new revision with the cursor cleared", name, before.Revision, after.Revision, s)
			}
		}
	}
	final, err := f.pub.GetTrigger(ctx, tr.ID)
	if err != nil {
		t.Fatal(err)
	}
	head, err := f.pub.GetTask(ctx, task.ID)
	if err != nil {
		t.Fatal(err)
	}
	if final.TaskRevision != head.Revision || final.ExecutionDigest != head.Digest {
		t.Fatalf("trigger pins task revision %d digest %v; task head is %d %v", final.TaskRevision, final.ExecutionDigest, head.Revision, head.Digest)
	}
}

func TestConcurrentPublishExactlyOneWins(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := newPubFixture(t)
	p := mustProject(t, f, "race")
	task := mustTask(t, f, p.ID, "contended")
	tr := mustTrigger(t, f, task.ID)

	const racers = 6
	run := func(publish func(i int) error) (wins int, codes map[string]int) {
		var wg sync.WaitGroup
		results := make([]error, racers)
		start := make(chan struct{})
		for i := range racers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-start
				results[i] = publish(i)
			}()
		}
		close(start)
		wg.Wait()
		codes = map[string]int{}
		for _, err := range results {
			if err == nil {
				wins++
				continue
			}
			codes[errs.Code(err)]++
			if errs.Code(err) == errs.Conflict && errs.Field(err) != "expectedRevision" {
				t.Errorf("loser's conflict names %q, want expectedRevision: %v", errs.Field(err), err)
			}
		}
		return wins, codes
	}
	wins, codes := run(func(i int) error {
		_, err := f.pub.PublishTask(ctx, controlplane.TaskInput{TaskID: task.ID, ExpectedRevision: 1, Name: "contended",
			Spec: shellSpec(fmt.Sprintf("echo racer %d", i))})
		return err
	})
	if wins != 1 || codes[errs.Conflict] != racers-1 {
		t.Fatalf("task: %d winners, losers by code %v; want exactly 1 winner and %d conflicts", wins, codes, racers-1)
	}
	cur, err := f.pub.GetTask(ctx, task.ID)
	if err != nil || cur.Revision != 2 {
		t.Fatalf("task after race: revision %d, %v; want 2", cur.Revision, err)
	}
	trNow, err := f.pub.GetTrigger(ctx, tr.ID)
	if err != nil {
		t.Fatal(err)
	}
	wins, codes = run(func(i int) error {
		_, err := f.pub.PublishTrigger(ctx, controlplane.TriggerInput{TriggerID: tr.ID, ExpectedRevision: trNow.Revision,
			Expression: fmt.Sprintf("%d * * * *", i), TimeZone: "UTC"})
		return err
	})
	if wins != 1 || codes[errs.Conflict] != racers-1 {
		t.Fatalf("trigger: %d winners, losers by code %v; want exactly 1 winner and %d conflicts", wins, codes, racers-1)
	}
	var revisions int
	if err := f.db.Conn(t).QueryRow(ctx, `SELECT count(*) FROM ql3.trigger_revisions WHERE trigger_id = $1`, tr.ID).Scan(&revisions); err != nil {
		t.Fatal(err)
	}
	if int64(revisions) != trNow.Revision+1 {
		t.Fatalf("%d trigger revisions stored, want %d", revisions, trNow.Revision+1)
	}
}

func TestMutationIDReplay(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := newPubFixture(t)
	p, err := f.pub.PublishProject(ctx, controlplane.ProjectInput{MutationID: "proj-1", Name: "replay"})
	if err != nil {
		t.Fatal(err)
	}
	again, err := f.pub.PublishProject(ctx, controlplane.ProjectInput{MutationID: "proj-1", Name: "replay"})
	if err != nil || again != p {
		t.Fatalf("project replay = %+v, %v; want the original %+v", again, err, p)
	}

	// The first use races with its own retries: all of them get one and the
	// same result, and one task exists.
	in := controlplane.TaskInput{MutationID: "create-report-1", ProjectID: p.ID, Name: "report", Spec: shellSpec("make report")}
	var wg sync.WaitGroup
	replays := make([]controlplane.Task, 4)
	replayErrs := make([]error, 4)
	for i := range replays {
		wg.Add(1)
		go func() {
			defer wg.Done()
			replays[i], replayErrs[i] = f.pub.PublishTask(ctx, in)
		}()
	}
	wg.Wait()
	first := replays[0]
	for i := range replays {
		if replayErrs[i] != nil || !reflect.DeepEqual(replays[i], first) {
			t.Fatalf("concurrent first use %d = %+v, %v; want one result %+v", i, replays[i], replayErrs[i], first)
		}
	}
	if r, err := f.pub.PublishTask(ctx, in); err != nil || !reflect.DeepEqual(r, first) {
		t.Fatalf("replay = %+v, %v; want the original %+v", r, err, first)
	}
	// The task moves on; replaying the create still returns revision 1.
	upd := controlplane.TaskInput{MutationID: "update-report-1", TaskID: first.ID, ExpectedRevision: 1, Name: "report", Spec: shellSpec("make report2")}
	second, err := f.pub.PublishTask(ctx, upd)
	if err != nil || second.Revision != 2 {
		t.Fatalf("update: %+v, %v", second, err)
	}
	if r, err := f.pub.PublishTask(ctx, in); err != nil || r.Revision != 1 || !reflect.DeepEqual(r, first) {
		t.Fatalf("replay after update = rev %d, %v; want the original revision 1", r.Revision, err)
	}
	if r, err := f.pub.PublishTask(ctx, upd); err != nil || !reflect.DeepEqual(r, second) {
		t.Fatalf("update replay = %+v, %v; want %+v", r, err, second)
	}
	var tasks, revisions int
	if err := f.db.Conn(t).QueryRow(ctx, `SELECT (SELECT count(*) FROM ql3.tasks), (SELECT count(*) FROM ql3.task_revisions)`).Scan(&tasks, &revisions); err != nil {
		t.Fatal(err)
	}
	if tasks != 1 || revisions != 2 {
		t.Fatalf("%d tasks, %d revisions stored; replays must write nothing (want 1, 2)", tasks, revisions)
	}

	conflicts := map[string]func() error{
		"same id, different spec": func() error {
			x := in
			x.Spec = shellSpec("rm -rf /tmp/x")
			_, err := f.pub.PublishTask(ctx, x)
			return err
		},
		"same id, different kind": func() error {
			_, err := f.pub.PublishTrigger(ctx, controlplane.TriggerInput{MutationID: in.MutationID, TaskID: first.ID, Expression: "@daily"})
			return err
		},
		"same id, different expectedRevision": func() error {
			x := upd
			x.ExpectedRevision = 2
			_, err := f.pub.PublishTask(ctx, x)
			return err
		},
	}
	for name, fn := range conflicts {
		if err := fn(); errs.Code(err) != errs.Conflict || errs.Field(err) != "mutationId" {
			t.Errorf("%s: got %v (code %s field %q), want conflict on mutationId", name, err, errs.Code(err), errs.Field(err))
		}
	}
	if _, err := f.pub.PublishTask(ctx, controlplane.TaskInput{MutationID: "bad id!", ProjectID: p.ID, Name: "x", Spec: shellSpec("true")}); errs.Field(err) != "mutationId" {
		t.Errorf("malformed mutationId: %v", err)
	}
}

func TestPublishRejectsBadInputNamingTheField(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := newPubFixture(t)
	p := mustProject(t, f, "validation")
	task := mustTask(t, f, p.ID, "ok")

	withSpec := func(mut func(*spec.Command)) controlplane.TaskInput {
		c := shellSpec("true")
		mut(&c)
		return controlplane.TaskInput{ProjectID: p.ID, Name: "bad", Spec: c}
	}
	taskCases := []struct {
		name  string
		in    controlplane.TaskInput
		code  string
		field string
	}{
		{"wrong kind", withSpec(func(c *spec.Command) { c.Kind = "qinglong/command@v9" }), errs.Invalid, "spec.kind"},
		{"too many attempts", withSpec(func(c *spec.Command) { c.Retry.MaxAttempts = 17 }), errs.Invalid, "spec.retry.maxAttempts"},
		{"zero timeout", withSpec(func(c *spec.Command) { c.TimeoutMs = 0 }), errs.Invalid, "spec.timeoutMs"},
		{"relative working dir", withSpec(func(c *spec.Command) { c.WorkingDirectory = "tmp" }), errs.Invalid, "spec.workingDirectory"},
		{"reserved env", withSpec(func(c *spec.Command) { c.Environment = map[string]string{"QL3_X": "1"} }), errs.Invalid, ""},
		{"bad semver range", withSpec(func(c *spec.Command) {
			c.Placement = &placement.Requirements{Required: placement.Required{Runtimes: map[string]string{"python": ">=>3"}}}
		}), errs.Invalid, "spec.placement.required.runtimes.python"},
		{"empty name", controlplane.TaskInput{ProjectID: p.ID, Name: "", Spec: shellSpec("true")}, errs.Invalid, "name"},
		{"bad project id", controlplane.TaskInput{ProjectID: "nope", Name: "x", Spec: shellSpec("true")}, errs.Invalid, "projectId"},
		{"unknown project", controlplane.TaskInput{ProjectID: uuid.Must(uuid.NewV7()).String(), Name: "x", Spec: shellSpec("true")}, errs.NotFound, ""},
		{"duplicate name", controlplane.TaskInput{ProjectID: p.ID, Name: "ok", Spec: shellSpec("true")}, errs.Conflict, "name"},
		{"update without expectedRevision", controlplane.TaskInput{TaskID: task.ID, Name: "ok", Spec: shellSpec("true")}, errs.Invalid, "expectedRevision"},
		{"stale expectedRevision", controlplane.TaskInput{TaskID: task.ID, ExpectedRevision: 7, Name: "ok", Spec: shellSpec("true")}, errs.Conflict, "expectedRevision"},
	}
	for _, tc := range taskCases {
		_, err := f.pub.PublishTask(ctx, tc.in)
		if errs.Code(err) != tc.code || (tc.field != "" && errs.Field(err) != tc.field) {
			t.Errorf("task %s: got %v (code %s field %q), want %s on %q", tc.name, err, errs.Code(err), errs.Field(err), tc.code, tc.field)
		}
	}
	if _, err := f.pub.PublishTask(ctx, withSpec(func(c *spec.Command) { c.Environment = map[string]string{"QL3_X": "1"} })); errs.Field(err) == "" ||
		errs.Field(err)[:len("spec.environment")] != "spec.environment" {
		t.Errorf("reserved env: field %q, want spec.environment…", errs.Field(err))
	}

	trigCases := []struct {
		name  string
		in    controlplane.TriggerInput
		field string
	}{
		{"bad expression", controlplane.TriggerInput{TaskID: task.ID, Expression: "61 * * * *"}, "expression"},
		{"every", controlplane.TriggerInput{TaskID: task.ID, Expression: "@every 5m"}, "expression"},
		{"empty expression", controlplane.TriggerInput{TaskID: task.ID}, "expression"},
		{"unknown zone", controlplane.TriggerInput{TaskID: task.ID, Expression: "@daily", TimeZone: "Mars/Olympus"}, "timeZone"},
		{"Local zone", controlplane.TriggerInput{TaskID: task.ID, Expression: "@daily", TimeZone: "Local"}, "timeZone"},
		{"bad policy", controlplane.TriggerInput{TaskID: task.ID, Expression: "@daily", Misfire: "replay_all"}, "misfire"},
		{"grace too long", controlplane.TriggerInput{TaskID: task.ID, Expression: "@daily", GraceMs: ptr(int64(300_001))}, "graceMs"},
		{"bad task id", controlplane.TriggerInput{TaskID: "x", Expression: "@daily"}, "taskId"},
	}
	for _, tc := range trigCases {
		_, err := f.pub.PublishTrigger(ctx, tc.in)
		if errs.Code(err) != errs.Invalid || errs.Field(err) != tc.field {
			t.Errorf("trigger %s: got %v (code %s field %q), want invalid on %q", tc.name, err, errs.Code(err), errs.Field(err), tc.field)
		}
	}
	var n int
	if err := f.db.Conn(t).QueryRow(ctx, `SELECT (SELECT count(*) FROM ql3.tasks) + (SELECT count(*) FROM ql3.triggers)`).Scan(&n); err != nil || n != 1 {
		t.Fatalf("rows after rejected publications: %d, %v; want only the one good task", n, err)
	}
}

func TestArchivedProjectAndDisabledTaskRefuseEnabledTriggers(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := newPubFixture(t)
	p := mustProject(t, f, "old")
	task := mustTask(t, f, p.ID, "legacy")
	tr := mustTrigger(t, f, task.ID)
	fh := claim(t, f, tr.ID)

	if _, err := f.pub.ArchiveProject(ctx, controlplane.ArchiveProjectInput{ProjectID: p.ID, ExpectedVersion: p.Version + 5}); errs.Code(err) != errs.Conflict {
		t.Fatalf("archive with a stale version: %v, want conflict", err)
	}
	archived, err := f.pub.ArchiveProject(ctx, controlplane.ArchiveProjectInput{ProjectID: p.ID, ExpectedVersion: p.Version})
	if err != nil || archived.Status != publication.ProjectArchived || archived.ArchivedAtMs == 0 {
		t.Fatalf("archive: %+v, %v", archived, err)
	}
	if n := admitWithFence(t, f, tr.ID, fh); n != 0 {
		t.Fatalf("archiving left an outstanding claim able to commit (%d rows)", n)
	}
	if _, err := f.pub.PublishTask(ctx, controlplane.TaskInput{ProjectID: p.ID, Name: "new", Spec: shellSpec("true")}); errs.Code(err) != errs.Conflict || errs.Field(err) != "projectId" {
		t.Errorf("task in an archived project: %v, want conflict on projectId", err)
	}
	if _, err := f.pub.PublishTrigger(ctx, controlplane.TriggerInput{TaskID: task.ID, Expression: "@hourly"}); errs.Code(err) != errs.Conflict || errs.Field(err) != "enabled" {
		t.Errorf("enabled trigger in an archived project: %v, want conflict on enabled", err)
	}
	if _, err := f.pub.PublishTrigger(ctx, controlplane.TriggerInput{TriggerID: tr.ID, ExpectedRevision: tr.Revision, Expression: "@hourly"}); errs.Code(err) != errs.Conflict {
		t.Errorf("re-enabling a trigger in an archived project: %v, want conflict", err)
	}
	off, err := f.pub.PublishTrigger(ctx, controlplane.TriggerInput{TriggerID: tr.ID, ExpectedRevision: tr.Revision, Expression: "@hourly", Enabled: ptr(false)})
	if err != nil || off.Enabled {
		t.Errorf("disabling a trigger of an archived project must work: %+v, %v", off, err)
	}

	// A disabled task in an active project.
	p2 := mustProject(t, f, "current")
	task2 := mustTask(t, f, p2.ID, "paused")
	if _, err := f.pub.SetTaskEnabled(ctx, controlplane.TaskEnabledInput{TaskID: task2.ID, Enabled: false}); err != nil {
		t.Fatal(err)
	}
	if _, err := f.pub.PublishTrigger(ctx, controlplane.TriggerInput{TaskID: task2.ID, Expression: "@hourly"}); errs.Code(err) != errs.Conflict || errs.Field(err) != "enabled" {
		t.Errorf("enabled trigger on a disabled task: %v, want conflict on enabled", err)
	}
	if tr2, err := f.pub.PublishTrigger(ctx, controlplane.TriggerInput{TaskID: task2.ID, Expression: "@hourly", Enabled: ptr(false)}); err != nil || tr2.Enabled {
		t.Errorf("disabled trigger on a disabled task: %+v, %v", tr2, err)
	}
}
