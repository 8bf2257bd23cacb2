package publication_test

import (
	"context"
	"testing"

	"github.com/google/uuid"

	"github.com/ql3/ql3/controlplane"
)

// TestRunExitCodeFromLatestAttempt (#27): a Run in a list and on its own
// carries its latest Attempt's exit code (the panel's Exit column), none
// before any Attempt exited.
func TestRunExitCodeFromLatestAttempt(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := newPubFixture(t)
	p := mustProject(t, f, "exits")
	task := mustTask(t, f, p.ID, "job")
	insertRun := func(key, status string, attemptExits ...*int) string {
		t.Helper()
		id := uuid.Must(uuid.NewV7())
		finished := any(nil)
		if status == "failed" {
			finished = int64(3000)
		}
		if _, err := f.runtime.Exec(ctx, `INSERT INTO ql3.runs (run_id, project_id, task_id, task_revision,
			execution_revision_id, execution_digest, origin, idempotency_key, scheduled_for_ms, status, attempt_count,
			retry_max_attempts, retry_backoff_base_ms, retry_backoff_max_ms, retry_on_lost, timeout_ms, not_before_ms,
			created_at_ms, updated_at_ms, finished_at_ms)
			VALUES ($1, $2, $3, 1, $4, $5, 'manual', $6, 1000, $7, $8, 2, 0, 0, false, 1000, 0, 1000, 3000, $9)`,
			id, p.ID, task.ID, task.ExecutionRevisionID, task.Digest[:], key, status, len(attemptExits), finished); err != nil {
			t.Fatal(err)
		}
		for i, exit := range attemptExits {
			st, fin := "failed", any(int64(2000+i))
			if exit == nil {
				st, fin = "claimed", nil
			}
			if _, err := f.runtime.Exec(ctx, `INSERT INTO ql3.attempts (attempt_id, run_id, attempt, project_id, status,
				executor, exit_code, created_at_ms, updated_at_ms, finished_at_ms)
				VALUES ($1, $2, $3, $4, $5, 'remote_worker', $6, 1000, 3000, $7)`,
				uuid.Must(uuid.NewV7()), id, i+1, p.ID, st, exit, fin); err != nil {
				t.Fatal(err)
			}
		}
		return id.String()
	}
	retried := insertRun("retried", "failed", ptr(2), ptr(7)) // the latest attempt's 7, not the first's 2
	waiting := insertRun("waiting", "queued", nil)
	page, err := f.pub.ListRuns(ctx, controlplane.RunListFilter{ProjectID: p.ID})
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]*int{}
	for _, r := range page.Items {
		got[r.ID] = r.ExitCode
	}
	if c := got[retried]; c == nil || *c != 7 {
		t.Errorf("listed retried run: exit code %v, want 7", c)
	}
	if c, ok := got[waiting]; !ok || c != nil {
		t.Errorf("listed waiting run: exit code %v (listed %v), want none", c, ok)
	}
	r, err := f.pub.GetRun(ctx, retried)
	if err != nil || r.ExitCode == nil || *r.ExitCode != 7 || len(r.Attempts) != 2 {
		t.Fatalf("get retried run: %+v, %v", r, err)
	}
}
