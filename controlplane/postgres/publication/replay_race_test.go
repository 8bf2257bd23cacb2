package publication_test

import (
	"context"
	"reflect"
	"testing"
	"time"

	"github.com/ql3/ql3/controlplane"
)

// TestMutationIDReplayWhenTheFirstUseWinsAUniqueKey: two first uses of one
// mutationId are both past the replay check (the project row is locked
// under them, so both wait inside their transactions) when the lock goes;
// one creates the task, the other runs into its name. Both answer the
// same task, and one exists. (The race TestMutationIDReplay hits only now
// and then, made to happen every time.)
func TestMutationIDReplayWhenTheFirstUseWinsAUniqueKey(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := newPubFixture(t)
	p, err := f.pub.PublishProject(ctx, controlplane.ProjectInput{Name: "race"})
	if err != nil {
		t.Fatal(err)
	}
	su := f.db.Conn(t)
	hold, err := su.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer hold.Rollback(ctx)
	if _, err := hold.Exec(ctx, `SELECT 1 FROM ql3.projects WHERE project_id = $1::uuid FOR UPDATE`, p.ID); err != nil {
		t.Fatal(err)
	}
	in := controlplane.TaskInput{MutationID: "create-race-1", ProjectID: p.ID, Name: "report", Spec: shellSpec("make report")}
	type answer struct {
		task controlplane.Task
		err  error
	}
	answers := make(chan answer, 2)
	for range 2 {
		go func() {
			tk, err := f.pub.PublishTask(ctx, in)
			answers <- answer{tk, err}
		}()
	}
	// Both wait on the project row, inside their transactions.
	watch := f.db.Conn(t)
	for deadline := time.Now().Add(30 * time.Second); ; {
		var waiting int
		if err := watch.QueryRow(ctx, `SELECT count(*) FROM pg_stat_activity
			WHERE datname = current_database() AND wait_event_type = 'Lock' AND pid <> pg_backend_pid()`).Scan(&waiting); err != nil {
			t.Fatal(err)
		}
		if waiting >= 2 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d publishers wait on the project row after 30 s, want 2", waiting)
		}
		time.Sleep(5 * time.Millisecond)
	}
	if err := hold.Rollback(ctx); err != nil {
		t.Fatal(err)
	}
	a, b := <-answers, <-answers
	if a.err != nil || b.err != nil || !reflect.DeepEqual(a.task, b.task) {
		t.Fatalf("first uses answered %+v, %v and %+v, %v; want one task twice", a.task, a.err, b.task, b.err)
	}
	var tasks int
	if err := watch.QueryRow(ctx, `SELECT count(*) FROM ql3.tasks WHERE project_id = $1::uuid`, p.ID).Scan(&tasks); err != nil || tasks != 1 {
		t.Fatalf("%d tasks, %v; want 1", tasks, err)
	}
}
