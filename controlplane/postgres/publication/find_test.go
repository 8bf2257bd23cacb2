package publication_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/ql3/ql3/controlplane"
	"github.com/ql3/ql3/core/errs"
)

func TestFindTasks(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := newPubFixture(t)
	proj := mustProject(t, f, "home")
	other := mustProject(t, f, "office")
	mk := func(project, name, cmd string) controlplane.Task {
		t.Helper()
		tk, err := f.pub.PublishTask(ctx, controlplane.TaskInput{ProjectID: project, Name: name, Spec: shellSpec(cmd)})
		if err != nil {
			t.Fatal(err)
		}
		return tk
	}
	sign := mk(proj.ID, "京东签到", "task JD_sign.js")
	mk(proj.ID, "backup", "tar czf /backup.tgz /data")
	mk(other.ID, "京东签到", "task jd_sign.js")
	for i := range 5 {
		mk(proj.ID, fmt.Sprintf("filler %d", i), "true")
	}
	find := func(project, q string, limit int) []string {
		t.Helper()
		var names []string
		cursor := ""
		for {
			p, err := f.pub.FindTasks(ctx, project, q, controlplane.ListRequest{Limit: limit, Cursor: cursor})
			if err != nil {
				t.Fatal(err)
			}
			for _, tk := range p.Items {
				names = append(names, tk.Name)
			}
			if cursor = p.NextCursor; cursor == "" {
				return names
			}
		}
	}
	for _, c := range []struct {
		project, q string
		want       int
	}{
		{proj.ID, "签到", 1}, {proj.ID, "jd_SIGN", 1}, {proj.ID, "BACKUP", 1}, {proj.ID, "filler", 5},
		{"", "签到", 2}, {other.ID, "backup", 0}, {proj.ID, "", 7},
	} {
		if got := find(c.project, c.q, 2); len(got) != c.want {
			t.Errorf("%q in %s: %v, want %d", c.q, c.project, got, c.want)
		}
	}
	// An update rewrites the search text.
	if _, err := f.pub.PublishTask(ctx, controlplane.TaskInput{TaskID: sign.ID, ExpectedRevision: sign.Revision, Name: "京东签到", Spec: shellSpec("task jd_bean.js")}); err != nil {
		t.Fatal(err)
	}
	if got := find(proj.ID, "jd_sign", 50); len(got) != 0 {
		t.Fatalf("old command still found: %v", got)
	}
	if got := find(proj.ID, "jd_bean", 50); len(got) != 1 {
		t.Fatalf("new command not found: %v", got)
	}
	if _, err := f.pub.FindTasks(ctx, proj.ID, "a\x00", controlplane.ListRequest{}); errs.Code(err) != errs.Invalid {
		t.Fatalf("control character: %v", err)
	}
}
